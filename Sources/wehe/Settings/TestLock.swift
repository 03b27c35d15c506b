import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One test at a time per data directory (one user id). The server keeps one side channel per user: a second test
/// started while one runs would end the first on the server ("replaced by a newer side channel of the same user"),
/// and the first would only see its connection close. So every command that runs tests holds an exclusive lock on
/// `<data>/test.lock` (flock: the kernel releases it when the process ends, even when killed) and a second one stops
/// at once with the first one's process id and start time.
final class TestLock {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Takes the lock of `directory`, or throws `CLIError` `.addressBusy` naming the test that holds it.
    static func acquire(_ directory: DataDirectory, strings: Strings) throws -> TestLock {
        let path = directory.path + "/test.lock"
        try directory.create()
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CLIError(code: .storeFailed, strings.cannotCreateDirectory(path, POSIXErrorText(errno)))
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readHolder(descriptor)
            close(descriptor)
            throw CLIError(code: .addressBusy, strings.anotherTestRunning(holder))
        }
        let lock = TestLock(descriptor: descriptor)
        let stamp = "\(getpid()) \(Self.timestamp())\n"
        _ = ftruncate(descriptor, 0)
        _ = stamp.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        return lock
    }

    /// "pid time" written by the holder, if readable.
    private static func readHolder(_ descriptor: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    private static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: Date())
    }
}

/// An errno as a readable error.
struct POSIXErrorText: Error, CustomStringConvertible {
    let number: Int32
    init(_ number: Int32) { self.number = number }
    var description: String { String(cString: strerror(number)) }
}

/// File-system errors in plain words ("permission denied", "not a directory"), not a Foundation error domain.
enum FileErrors {
    /// The error in plain words, in French when `language` is (the common file-system errors; others keep the
    /// system's English text).
    static func describe(_ error: any Error, language: Strings.Language = .en) -> String {
        guard let number = errorNumber(error) else { return (error as NSError).localizedDescription }
        if language == .fr, let french = french[number] { return french }
        return String(cString: strerror(number))
    }

    private static let french: [Int32: String] = [
        EACCES: "permission refusée", EPERM: "opération non permise", ENOENT: "fichier ou répertoire introuvable",
        ENOTDIR: "ce n'est pas un répertoire", EISDIR: "c'est un répertoire", ENOSPC: "plus de place sur le disque",
        EROFS: "système de fichiers en lecture seule", EEXIST: "le fichier existe déjà",
    ]

    private static func errorNumber(_ error: any Error) -> Int32? {
        if let error = error as? POSIXErrorText { return error.number }
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain { return Int32(nsError.code) }
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain
        {
            return Int32(underlying.code)
        }
        switch CocoaError.Code(rawValue: nsError.code) {
        case .fileWriteNoPermission, .fileReadNoPermission: return EACCES
        case .fileNoSuchFile, .fileReadNoSuchFile: return ENOENT
        case .fileWriteOutOfSpace: return ENOSPC
        case .fileWriteVolumeReadOnly: return EROFS
        case .fileWriteFileExists: return EEXIST
        default: return nil
        }
    }
}
