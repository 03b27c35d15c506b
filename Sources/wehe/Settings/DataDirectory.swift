import Foundation
import WeheWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where `wehe` keeps its files and how it reads and writes the settings.
struct DataDirectory {
    let path: String

    /// `--data-dir`, else `$WEHE_DATA_DIR`, else `$XDG_DATA_HOME/wehe`, else `~/.local/share/wehe`.
    static func resolve(_ explicit: String?) -> DataDirectory {
        let environment = ProcessInfo.processInfo.environment
        if let explicit, !explicit.isEmpty { return DataDirectory(path: explicit) }
        if let value = environment["WEHE_DATA_DIR"], !value.isEmpty { return DataDirectory(path: value) }
        if let value = environment["XDG_DATA_HOME"], !value.isEmpty { return DataDirectory(path: value + "/wehe") }
        return DataDirectory(path: (environment["HOME"] ?? ".") + "/.local/share/wehe")
    }

    var settingsPath: String { path + "/settings.json" }
    var historyPath: String { path + "/history.sqlite" }

    /// Reads the settings without writing; a missing file gives the defaults (with a new user id, not recorded:
    /// `settingsRecordingUserID()` records it).
    func loadSettings() throws -> WeheSettings {
        try decodeSettings(try storedMembers())
    }

    /// Creates the directory when missing; when it cannot be, says why in plain words: which part of the path is
    /// "not a directory", or "permission denied" (Foundation only says "error 512").
    /// - Throws: `CLIError` `.storeFailed` naming the path and the cause.
    func create() throws {
        let strings = Strings.active
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CLIError(code: .storeFailed, strings.dataDirectoryNotDirectory(path))
            }
            guard FileManager.default.isWritableFile(atPath: path) else {
                throw CLIError(code: .storeFailed, strings.cannotCreateDirectory(path, POSIXErrorText(EACCES)))
            }
            return
        }
        // The nearest existing ancestor tells why the directory cannot be made.
        var ancestor = (path as NSString).deletingLastPathComponent
        while !ancestor.isEmpty, ancestor != "/", !FileManager.default.fileExists(atPath: ancestor) {
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
        if !ancestor.isEmpty, FileManager.default.fileExists(atPath: ancestor, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CLIError(code: .storeFailed, strings.dataDirectoryAncestorNotDirectory(path, ancestor))
            }
            guard FileManager.default.isWritableFile(atPath: ancestor) else {
                throw CLIError(code: .storeFailed, strings.dataDirectoryAncestorDenied(path, ancestor))
            }
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw CLIError(code: .storeFailed, strings.cannotCreateDirectory(path, error))
        }
    }

    /// Checks that the directory can hold our files, before anything is asked of the person (consent) or sent:
    /// creates it when missing, then creates and removes a probe file (a permission check alone says yes to root on
    /// a read-only file system).
    /// - Throws: `CLIError` `.storeFailed` naming the path and the cause, in the language of `strings` (also that of
    ///   `create()`, which takes the language the command chose).
    func ensureUsable(_ strings: Strings) throws {
        try create()
        let probe = path + "/.write-probe-\(getpid())"
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CLIError(code: .storeFailed, strings.cannotCreateDirectory(path, POSIXErrorText(errno)))
        }
        close(descriptor)
        unlink(probe)
    }

    /// The settings, with the user id recorded in the file if it was not yet: every later command (and the history
    /// counter's writes during a run) then uses the same id.
    func settingsRecordingUserID() throws -> WeheSettings {
        try update { _ in }
    }

    /// Changes settings by read-modify-write: under an exclusive lock on `<data>/settings.lock`, reads the file as
    /// it is now, applies `change`, and writes back only the keys whose values `change` altered; every other key
    /// keeps what the file holds (also keys this version does not know). The file is replaced atomically
    /// (temporary file, fsync, rename), so a reader sees the old or the new file, never a part. So two commands that
    /// write at once (`wehe settings set` while `wehe run` records its history counter) both keep their change.
    /// Nothing is written when nothing changed and the file already holds the user id.
    /// - Returns: the settings after the change.
    /// - Throws: `CLIError` `.storeFailed` when the directory or file cannot be written, `.invalidInput` for an
    ///   unreadable settings file, or what `change` throws (then nothing is written).
    @discardableResult
    func update(_ change: (inout WeheSettings) throws -> Void) throws -> WeheSettings {
        try create()
        let lock = try SettingsFileLock(path + "/settings.lock")
        defer { withExtendedLifetime(lock) {} }
        let stored = try storedMembers()
        let current = try decodeSettings(stored)
        var changed = current
        try change(&changed)
        var members = stored ?? []
        var modified = stored == nil
        let before = try Self.members(of: current)
        let after = try Self.members(of: changed)
        let keys = before.map(\.0) + after.map(\.0).filter { key in !before.contains { $0.0 == key } }
        for key in keys {
            let old = before.first { $0.0 == key }?.1
            let new = after.first { $0.0 == key }?.1
            let recorded = members.contains { $0.0 == key }
            // The user id is written as soon as there is none on disk; other defaults stay implicit.
            guard old != new || (key == "userID" && !recorded) else { continue }
            modified = true
            members.removeAll { $0.0 == key }
            if let new { members.append((key, new)) }
        }
        if modified { try write(members) }
        return changed
    }

    /// The members of the settings file, `nil` when there is no file.
    private func storedMembers() throws -> [(String, JSONValue)]? {
        guard FileManager.default.fileExists(atPath: settingsPath) else { return nil }
        func unreadable(_ reason: String) -> CLIError {
            CLIError(code: .invalidInput, Strings.active.settingsUnreadable(settingsPath, reason))
        }
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: settingsPath)))
        } catch {
            throw unreadable(FileErrors.describe(error, language: Strings.active.language))
        }
        do {
            guard case .object(let members) = try JSONValue.parse(bytes) else {
                throw unreadable("not a JSON object")
            }
            return members
        } catch let error as WeheWireError {
            throw unreadable("\(error)")
        }
    }

    private func decodeSettings(_ members: [(String, JSONValue)]?) throws -> WeheSettings {
        guard let members else { return WeheSettings() }
        do {
            return try JSONDecoder().decode(WeheSettings.self, from: Data(JSONValue.object(members).serialized().utf8))
        } catch {
            throw CLIError(code: .invalidInput, Strings.active.settingsUnreadable(settingsPath, "\(error)"))
        }
    }

    /// The settings as JSON members (optional settings that are not set are absent).
    private static func members(of settings: WeheSettings) throws -> [(String, JSONValue)] {
        let data = try JSONEncoder().encode(settings)
        guard case .object(let members) = try JSONValue.parse(Array(data)) else { return [] }
        return members
    }

    /// Writes the members, one key a line in key order, to a temporary file next to the settings, then renames
    /// it over them.
    private func write(_ members: [(String, JSONValue)]) throws {
        let lines = members.sorted { $0.0 < $1.0 }.map { key, value in
            "  " + JSONValue.string(key).serialized() + ": " + value.serialized()
        }
        let text = "{\n" + lines.joined(separator: ",\n") + "\n}\n"
        try Self.replaceAtomically(settingsPath, with: Array(text.utf8))
    }

    /// Writes `bytes` to a temporary file beside `target`, fsyncs it and renames it over `target`.
    static func replaceAtomically(_ target: String, with bytes: [UInt8]) throws {
        let temporary = target + ".\(getpid()).tmp"
        func failed(_ number: Int32) -> CLIError {
            unlink(temporary)
            return CLIError(code: .storeFailed, Strings.active.cannotWrite(target, POSIXErrorText(number)))
        }
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failed(errno) }
        var rest = bytes[...]
        while !rest.isEmpty {
            let written = rest.withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                let number = errno
                close(descriptor)
                throw failed(number)
            }
            rest = rest.dropFirst(written)
        }
        guard fsync(descriptor) == 0 else {
            let number = errno
            close(descriptor)
            throw failed(number)
        }
        close(descriptor)
        guard rename(temporary, target) == 0 else { throw failed(errno) }
    }
}

/// An exclusive lock on the settings (flock on `<data>/settings.lock`, held from the read to the rename; the kernel
/// releases it when the process ends). Waits for another writer, which holds it only while it reads and writes.
final class SettingsFileLock {
    private let descriptor: Int32

    init(_ path: String) throws {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CLIError(code: .storeFailed, Strings.active.cannotWrite(path, POSIXErrorText(errno)))
        }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let number = errno
                close(descriptor)
                throw CLIError(code: .storeFailed, Strings.active.cannotWrite(path, POSIXErrorText(number)))
            }
        }
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// `write(2)`, named apart from `DataDirectory.write(_:)`.
func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}
