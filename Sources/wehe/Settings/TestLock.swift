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
    static func describe(_ error: any Error) -> String {
        if let error = error as? POSIXErrorText { return error.description }
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(nsError.code))) }
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain
        {
            return String(cString: strerror(Int32(underlying.code)))
        }
        switch CocoaError.Code(rawValue: nsError.code) {
        case .fileWriteNoPermission, .fileReadNoPermission: return String(cString: strerror(EACCES))
        case .fileNoSuchFile, .fileReadNoSuchFile: return String(cString: strerror(ENOENT))
        case .fileWriteOutOfSpace: return String(cString: strerror(ENOSPC))
        case .fileWriteVolumeReadOnly: return String(cString: strerror(EROFS))
        case .fileWriteFileExists: return String(cString: strerror(EEXIST))
        default: return nsError.localizedDescription
        }
    }
}
