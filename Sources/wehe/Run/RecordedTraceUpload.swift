import WeheClient
import WeheWire

/// Which selected tests' traces `wehe run` may send to a server that does not have them: the recorded ones (catalog
/// entries that `wehe record` marked `"recorded": true`), their original and control client traces only.
enum RecordedTraceUpload {
    /// The uploads for `tests` from `library`; `nil` when none of them is a recorded test.
    static func make(_ tests: [ReplayClient.Test], library: ReplayLibrary) -> ClientTraceUpload? {
        let recorded = recordedDataFiles(library)
        var files: [String: String] = [:]
        for test in tests where recorded.contains(test.entry.originalFile) {
            files[test.original.name] = library.path(of: test.entry.originalFile)
            if let control = test.entry.controlFile { files[test.control.name] = library.path(of: control) }
        }
        guard !files.isEmpty else { return nil }
        return ClientTraceUpload(files: files) { name, bytes in
            // Said before the bytes leave: on stderr, so that --json output stays one object a line.
            Terminal.printError(
                "wehe: the server does not have the recorded test \(name); uploading its client trace "
                    + "(\(bytes) bytes) for this test only")
        }
    }

    /// The `datafile` of every catalog entry marked `"recorded": true` (the catalog decoder does not keep the flag).
    static func recordedDataFiles(_ library: ReplayLibrary) -> Set<String> {
        guard let name = library.catalogFileName(),
            let catalog = try? JSONValue.parse(ReplayFileReader().read(library.path(of: name))),
            case .array(let apps)? = catalog["apps"]
        else { return [] }
        var files = Set<String>()
        for app in apps where app["recorded"] == .bool(true) {
            if case .string(let file)? = app["datafile"] { files.insert(file) }
        }
        return files
    }
}
