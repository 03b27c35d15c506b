public import WeheCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Finds the kind of link (Wi-Fi, wired, cellular) of the interface that carries the traffic to the server.
///
/// How, on Linux: a UDP socket is connected to the server's address (a connect on UDP sends nothing; the kernel
/// only picks the route and the source address), `getsockname` gives that source address, and `getifaddrs` names
/// the interface holding it. Then `/sys/class/net/<interface>/`: a `wireless` directory (or `phy80211`) means
/// Wi-Fi; `DEVTYPE=wwan` in `uevent` means a mobile broadband modem (cellular); a `device` link (a physical
/// device) with no `DEVTYPE` means wired. Loopback, virtual interfaces (bridges, VPN tunnels, container pairs) and
/// other systems give `unknown`.
public struct LinkKindDetector: Sendable {
    /// Root of the network-interface tree (`/sys/class/net`; a directory of fakes in tests).
    public var sysfsRoot: String

    /// Creates a detector.
    public init(sysfsRoot: String = "/sys/class/net") {
        self.sysfsRoot = sysfsRoot
    }

    /// The link kind towards `serverAddress` (an IP literal); `unknown` when anything fails.
    public func linkKind(towards serverAddress: String) -> NetworkProvider.LinkKind {
        guard let interface = Self.interface(towards: serverAddress) else { return .unknown }
        return linkKind(ofInterface: interface)
    }

    /// The link kind of a named interface, from sysfs.
    public func linkKind(ofInterface interface: String) -> NetworkProvider.LinkKind {
        guard !interface.isEmpty, !interface.contains("/"), interface != ".", interface != ".." else { return .unknown }
        let base = sysfsRoot + "/" + interface
        if Self.exists(base + "/wireless") || Self.exists(base + "/phy80211") { return .wifi }
        let uevent = Self.readSmallFile(base + "/uevent") ?? ""
        var deviceType: String?
        for line in uevent.split(separator: "\n") where line.hasPrefix("DEVTYPE=") {
            deviceType = String(line.dropFirst("DEVTYPE=".count)).lowercased()
        }
        switch deviceType {
        case "wwan": return .cellular
        case "wlan": return .wifi
        case nil: return Self.exists(base + "/device") ? .wired : .unknown
        default: return .unknown
        }
    }

    /// The local address the kernel picks as the source towards `address`, as text (`nil` when it has no route).
    public static func localAddress(towards address: String) -> String? {
        guard let bytes = sourceAddress(towards: address) else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        guard written != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The name of the interface whose address the kernel picks as the source towards `address`.
    static func interface(towards address: String) -> String? {
        guard let source = sourceAddress(towards: address) else { return nil }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let socketAddress = entry.pointee.ifa_addr, let name = entry.pointee.ifa_name else { continue }
            if Self.addressBytes(socketAddress) == source { return String(cString: name) }
        }
        return nil
    }

    /// The local address the kernel would use to reach `address` (a connected UDP socket; nothing is sent).
    static func sourceAddress(towards address: String) -> [UInt8]? {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if address.withCString({ inet_pton(AF_INET, $0, &v4.sin_addr) }) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = UInt16(9).bigEndian
            return connectedSource(family: AF_INET, &v4, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        if address.withCString({ inet_pton(AF_INET6, $0, &v6.sin6_addr) }) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = UInt16(9).bigEndian
            return connectedSource(family: AF_INET6, &v6, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
        return nil
    }

    private static func connectedSource<Address>(
        family: Int32, _ target: inout Address, length: socklen_t
    ) -> [UInt8]? {
        #if canImport(Darwin)
            let descriptor = socket(family, SOCK_DGRAM, 0)
        #else
            let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        #endif
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
        }
        guard connected == 0 else { return nil }
        var storage = sockaddr_storage()
        var storageLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &storageLength) }
        }
        guard named == 0 else { return nil }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { addressBytes($0) }
        }
    }

    /// The raw address bytes of an IPv4 or IPv6 socket address.
    private static func addressBytes(_ address: UnsafePointer<sockaddr>) -> [UInt8]? {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var bytes = pointer.pointee.sin_addr
                return withUnsafeBytes(of: &bytes) { Array($0) }
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var bytes = pointer.pointee.sin6_addr
                return withUnsafeBytes(of: &bytes) { Array($0) }
            }
        default:
            return nil
        }
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// At most 4 KiB of a small text file (sysfs attributes are tiny).
    private static func readSmallFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, 4096) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
