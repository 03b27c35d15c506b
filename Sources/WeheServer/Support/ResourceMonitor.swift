#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The admission resource check (protocol.md 5.3 step 3): memory and the data directory's disk below their limits.
/// Memory is the larger used share of the host's (`/proc/meminfo`) and of the limit of the process's own control
/// group and its ancestors (`CgroupMemory`: a systemd unit's `MemoryMax`, a container's memory limit), which is
/// what ends the process when it is exceeded. Reads small files and `statvfs`; never blocks on anything slower.
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
    /// Where the control group's memory limit is read.
    package var cgroup: CgroupMemory

    /// Creates a monitor.
    package init(
        memoryUseLimit: Double, diskUseLimit: Double, dataDirectory: String?, cgroup: CgroupMemory = CgroupMemory()
    ) {
        self.memoryUseLimit = memoryUseLimit
        self.diskUseLimit = diskUseLimit
        self.dataDirectory = dataDirectory
        self.cgroup = cgroup
    }

    /// Why new sessions should be refused, or `nil` when there is room.
    package func shortage() -> String? {
        if let used = cgroup.use(), used.share > memoryUseLimit {
            return "memory \(Int(used.share * 100)) % of the control group's limit used (\(used.limit / 1_048_576) MiB)"
        }
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

/// The memory limit of this process's control group: `/proc/self/cgroup` names the group (cgroup v2's `0::<path>`,
/// or v1's `memory` controller line), and the group and each of its ancestors may have a limit (v2 `memory.max`,
/// v1 `memory.limit_in_bytes`). The used share of a limit is the group's usage (v2 `memory.current`, v1
/// `memory.usage_in_bytes`) less its inactive file cache (`memory.stat` `inactive_file`, v1 `total_inactive_file`),
/// which the kernel reclaims before it ends anything: the working set, as container runtimes count it.
package struct CgroupMemory: Sendable {
    /// Where the control group file systems are mounted (`/sys/fs/cgroup`; v1 controllers below it by name, and a
    /// hybrid system's v2 tree in `unified`).
    package var root: String
    /// The file naming the process's groups (`/proc/self/cgroup`).
    package var membership: String

    /// One limit in force and how much of it is used.
    package struct Use: Sendable, Equatable {
        /// Bytes in use (less the inactive file cache).
        package var used: Int
        /// The limit in bytes.
        package var limit: Int
        /// `used / limit`.
        package var share: Double { Double(used) / Double(limit) }

        /// Creates a use.
        package init(used: Int, limit: Int) {
            self.used = used
            self.limit = limit
        }
    }

    /// Reads the given files; the defaults are the running process's.
    package init(root: String = "/sys/fs/cgroup", membership: String = "/proc/self/cgroup") {
        self.root = root
        self.membership = membership
    }

    /// The most used limit of the group and its ancestors; `nil` when none has a limit (or there are no groups).
    package func use() -> Use? {
        guard let text = Self.read(membership) else { return nil }
        // (the group's directory, its mount's directory, the version); v1's memory controller first: on a hybrid
        // system the v2 tree has no memory controller.
        var groups: [(directory: String, top: String, version: Int)] = []
        var unifiedPath: String?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let path = fields[2] == "/" ? "" : String(fields[2])
            if fields[0] == "0", fields[1].isEmpty {
                unifiedPath = path
            } else if fields[1].split(separator: ",").contains("memory") {
                groups.append((root + "/memory" + path, root + "/memory", 1))
            }
        }
        if let path = unifiedPath {
            groups.append((root + path, root, 2))
            groups.append((root + "/unified" + path, root + "/unified", 2))
        }
        var most: Use?
        for group in groups {
            if let use = mostUsed(from: group.directory, top: group.top, version: group.version),
                use.share > most?.share ?? -1
            {
                most = use
            }
        }
        return most
    }

    /// The most used limit from `directory` up to `top`, the mount's directory (`version` 1 or 2); `nil` when no
    /// level has a limit (a missing directory has none).
    private func mostUsed(from directory: String, top: String, version: Int) -> Use? {
        let limitFile = version == 2 ? "memory.max" : "memory.limit_in_bytes"
        let usageFile = version == 2 ? "memory.current" : "memory.usage_in_bytes"
        let inactiveKey = version == 2 ? "inactive_file" : "total_inactive_file"
        var level = directory
        var most: Use?
        while level.count >= top.count {
            // v2 writes "no limit" as `max`, v1 as the largest page-aligned 63-bit number.
            if let limit = Self.read(level + "/" + limitFile).flatMap({ Int($0.trimmingWhitespace()) }),
                limit > 0, limit < Int.max / 2,
                let usage = Self.read(level + "/" + usageFile).flatMap({ Int($0.trimmingWhitespace()) })
            {
                let inactive = Self.read(level + "/memory.stat").flatMap { Self.statValue($0, inactiveKey) } ?? 0
                let use = Use(used: max(0, usage - inactive), limit: limit)
                if use.share > most?.share ?? -1 { most = use }
            }
            guard let slash = level.lastIndex(of: "/") else { break }
            level = String(level[..<slash])
        }
        return most
    }

    /// The value of `key` in a `memory.stat` text.
    static func statValue(_ text: String, _ key: String) -> Int? {
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == key { return Int(parts[1]) }
        }
        return nil
    }

    /// A small text file's contents (at most 64 KiB); `nil` when it cannot be read.
    static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65_536 {
            let count = fread(&buffer, 1, buffer.count, file)
            guard count > 0 else { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        String(self.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
