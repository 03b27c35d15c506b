#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The admission resource check (protocol.md 5.3 step 3): memory and the data directory's disk below their limits.
/// Reads `/proc/meminfo` and `statvfs`; never blocks on anything slower than a small file.
package struct ResourceMonitor: Sendable {
    /// Largest used share of memory.
    package var memoryUseLimit: Double
    /// Largest used share of the data disk.
    package var diskUseLimit: Double
    /// Directory whose file system is checked; `nil` skips the disk check.
    package var dataDirectory: String?
    /// More directories whose file systems are checked like the data directory's: the packet capture and archive
    /// directories (`--pcap`, `--archive`), which grow with every test. One not created yet counts by the nearest
    /// existing directory above it (the file system it will be created on).
    package var spoolDirectories: [String] = []

    /// Creates a monitor.
    package init(memoryUseLimit: Double, diskUseLimit: Double, dataDirectory: String?) {
        self.memoryUseLimit = memoryUseLimit
        self.diskUseLimit = diskUseLimit
        self.dataDirectory = dataDirectory
    }

    /// Why new sessions should be refused, or `nil` when there is room.
    package func shortage() -> String? {
        if let used = Self.memoryUse(), used > memoryUseLimit {
            return "memory \(Int(used * 100)) % used"
        }
        for directory in (dataDirectory.map { [$0] } ?? []) + spoolDirectories {
            if let used = Self.diskUse(Self.existingAncestor(directory)), used > diskUseLimit {
                return "disk \(Int(used * 100)) % used (\(directory))"
            }
        }
        return nil
    }

    /// Used share of memory from `/proc/meminfo` (`1 - MemAvailable / MemTotal`); `nil` where unavailable.
    package static func memoryUse() -> Double? {
        guard let file = fopen("/proc/meminfo", "r") else { return nil }
        defer { fclose(file) }
        var total: Double?
        var available: Double?
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let parts = text.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 2, let value = Double(parts[1]) else { continue }
            if parts[0] == "MemTotal:" { total = value }
            if parts[0] == "MemAvailable:" { available = value }
        }
        guard let total, let available, total > 0 else { return nil }
        return 1 - available / total
    }

    /// `path` when it exists, else its nearest existing ancestor (`.` for a relative path none of whose parents
    /// exist).
    static func existingAncestor(_ path: String) -> String {
        var current = path
        var info = stat()
        var steps = 0
        while stat(current, &info) != 0, steps < 64 {
            steps += 1
            guard let slash = current.lastIndex(of: "/") else { return "." }
            current = slash == current.startIndex ? "/" : String(current[..<slash])
        }
        return current
    }

    /// Used share of the file system holding `path`; `nil` where unavailable.
    package static func diskUse(_ path: String) -> Double? {
        var info = statvfs()
        guard statvfs(path, &info) == 0, info.f_blocks > 0 else { return nil }
        return 1 - Double(info.f_bavail) / Double(info.f_blocks)
    }

    /// Resident set size of this process in bytes (from `/proc/self/statm`), for logs and benchmarks.
    package static func residentBytes() -> Int? {
        guard let file = fopen("/proc/self/statm", "r") else { return nil }
        defer { fclose(file) }
        var size = 0
        var resident = 0
        guard fscanf_statm(file, &size, &resident) else { return nil }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    private static func fscanf_statm(_ file: UnsafeMutablePointer<FILE>, _ size: inout Int, _ resident: inout Int)
        -> Bool
    {
        var line = [CChar](repeating: 0, count: 128)
        guard fgets(&line, Int32(line.count), file) != nil else { return false }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = text.split(separator: " ")
        guard parts.count >= 2, let first = Int(parts[0]), let second = Int(parts[1]) else { return false }
        size = first
        resident = second
        return true
    }
}
