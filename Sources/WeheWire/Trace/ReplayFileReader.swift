#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads whole files with a size limit checked **before** reading, so a 2 GB file is refused with a clear error
/// instead of exhausting memory.
public struct ReplayFileReader: Sendable {
    /// The default limit: 256 MiB. The largest published trace is 1.5 MB; the limit only guards against mistakes
    /// and hostile inputs.
    public static let defaultSizeLimit = 256 << 20

    /// Largest accepted file, in bytes.
    public var sizeLimit: Int

    /// Creates a reader.
    public init(sizeLimit: Int = ReplayFileReader.defaultSizeLimit) {
        self.sizeLimit = sizeLimit
    }

    /// Reads a file's bytes.
    /// - Throws: `WeheWireError` `.unreadable` (missing, a directory, permission) or `.tooLarge`.
    public func read(_ path: String) throws(WeheWireError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw WeheWireError(.unreadable, "cannot open: \(Self.describeErrno(errno))", file: path)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw WeheWireError(.unreadable, "cannot stat: \(Self.describeErrno(errno))", file: path)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw WeheWireError(.unreadable, "not a regular file", file: path)
        }
        let size = Int(info.st_size)
        guard size <= sizeLimit else {
            throw WeheWireError(
                .tooLarge,
                "file is \(size) bytes, larger than the limit of \(sizeLimit) bytes",
                file: path
            )
        }
        var bytes = [UInt8](repeating: 0, count: size)
        var filled = 0
        while filled < size {
            let count = bytes.withUnsafeMutableBytes { buffer in
                Glibc_read(descriptor, buffer.baseAddress! + filled, size - filled)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw WeheWireError(.unreadable, "read failed: \(Self.describeErrno(errno))", file: path)
            }
            if count == 0 { break }
            filled += count
        }
        if filled < size { bytes.removeLast(size - filled) }
        return bytes
    }

    static func describeErrno(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

@inline(__always)
private func Glibc_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}
