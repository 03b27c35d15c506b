import WeheCore
import WeheWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a recording into a replay directory in the formats `wehe run --replays` and `wehe-server serve --replays`
/// read: the two client traces, the two server traces, and the test's entry in `apps_list.json` (added to the
/// catalog already there, or replacing an entry with the same id).
public struct RecordingWriter: Sendable {
    /// The directory.
    public var directory: String

    /// Creates a writer.
    public init(directory: String) {
        self.directory = directory
    }

    /// Writes every file; returns the paths written.
    @discardableResult
    public func write(_ recording: Recording) throws(WeheRecordError) -> [String] {
        // Each missing parent too, as `mkdir -p` does: the default (~/.local/share/wehe/recordings) may be the
        // first thing written under ~/.local/share.
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0, errno != EEXIST {
                throw WeheRecordError(
                    .writeFailed, "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        let catalogPath = path("apps_list.json")
        if access(catalogPath, F_OK) != 0, access(path("app_list.json"), F_OK) == 0 {
            throw WeheRecordError(
                .writeFailed,
                "\(directory) holds an iOS-format catalog (app_list.json): record into another directory")
        }
        var apps: [JSONValue] = []
        var others: [(String, JSONValue)] = []
        if access(catalogPath, F_OK) == 0 {
            let existing: JSONValue
            do {
                existing = try JSONValue.parse(try ReplayFileReader().read(catalogPath))
            } catch {
                throw WeheRecordError(.writeFailed, "\(catalogPath) is not a readable catalog: \(error)")
            }
            guard case .object(let members) = existing, case .array(let list)? = existing["apps"] else {
                throw WeheRecordError(.writeFailed, "\(catalogPath) has no 'apps' array: not adding to it")
            }
            apps = list.filter { $0["image"] != .string(recording.entry.id) }
            others = members.filter { $0.0 != "apps" }
        }
        let entry = recording.entry
        func number(_ value: Double) -> JSONValue { .number(value, text: JSONText.number(value)) }
        apps.append(
            .object([
                ("name", .string(entry.name)),
                ("size", number(entry.sizeMB ?? 0)),
                ("time", number(entry.durationSeconds)),
                ("image", .string(entry.image)),
                ("datafile", .string(entry.originalFile)),
                ("randomdatafile", .string(entry.controlFile ?? "")),
                ("category", .string(entry.category.rawValue)),
                ("recorded", .bool(true)),
            ]))
        let files: [(String, String)] = [
            (recording.stem + ReplayLibrary.clientTraceSuffix, ClientTraceEncoder().encode(recording.client)),
            (recording.controlStem + ReplayLibrary.clientTraceSuffix, ClientTraceEncoder().encode(recording.control)),
            (recording.stem + ReplayLibrary.serverTraceSuffix, ServerTraceCodec().encode(recording.server)),
            (
                recording.controlStem + ReplayLibrary.serverTraceSuffix,
                ServerTraceCodec().encode(recording.controlServer)
            ),
            ("apps_list.json", JSONValue.object([("apps", .array(apps))] + others).serialized() + "\n"),
        ]
        var written: [String] = []
        for (name, text) in files {
            try writeAtomically(path(name), text)
            written.append(path(name))
        }
        return written
    }

    private func path(_ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// Writes to a temporary file and renames it over the target, so that a reader never sees half a file.
    private func writeAtomically(_ target: String, _ text: String) throws(WeheRecordError) {
        let temporary = target + ".partial"
        guard let file = fopen(temporary, "w") else {
            throw WeheRecordError(.writeFailed, "cannot write \(temporary): \(String(cString: strerror(errno)))")
        }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        let closed = fclose(file)
        guard written == bytes.count, closed == 0, rename(temporary, target) == 0 else {
            unlink(temporary)
            throw WeheRecordError(.writeFailed, "cannot write \(target): \(String(cString: strerror(errno)))")
        }
    }
}
