#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One frame read from a capture: its time (seconds since 1970), link-layer bytes as captured, and the length the
/// frame had on the wire (larger than `bytes.count` when the capture cut it at its snap length).
public struct CapturedFrame: Sendable, Hashable {
    /// Seconds since 1970.
    public var time: Double
    /// The captured bytes, from the link-layer header on.
    public var bytes: [UInt8]
    /// Length on the wire.
    public var wireLength: Int

    /// Creates a frame.
    public init(time: Double, bytes: [UInt8], wireLength: Int) {
        self.time = time
        self.bytes = bytes
        self.wireLength = wireLength
    }
}

/// libpcap, loaded at run time with `dlopen` so that our static release binaries still run on a machine without it
/// (only `wehe record` needs it). libpcap reads both pcap and pcapng files and captures live.
final class LibPcap: @unchecked Sendable {
    private typealias OpenOffline =
        @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?) ->
        OpaquePointer?
    private typealias OpenLive =
        @convention(c) (
            UnsafePointer<CChar>?, Int32, Int32, Int32, UnsafeMutablePointer<CChar>?
        ) -> OpaquePointer?
    private typealias NextEx =
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
            UnsafeMutablePointer<UnsafePointer<UInt8>?>?
        ) -> Int32
    private typealias Datalink = @convention(c) (OpaquePointer?) -> Int32
    private typealias Close = @convention(c) (OpaquePointer?) -> Void
    private typealias GetErr = @convention(c) (OpaquePointer?) -> UnsafeMutablePointer<CChar>?

    /// The library names tried in order (Debian's package is `libpcap0.8`, whose file is `libpcap.so.0.8`).
    static let libraryNames = ["libpcap.so.0.8", "libpcap.so.1", "libpcap.so", "libpcap.A.dylib", "libpcap.dylib"]

    /// The message when no libpcap can be loaded.
    static let missingMessage =
        "reading captures needs libpcap: apt install libpcap0.8 (Debian, Ubuntu), dnf install libpcap (Fedora); "
        + "macOS has it"

    private let openOffline: OpenOffline
    private let openLive: OpenLive?
    private let nextEx: NextEx
    private let datalink: Datalink
    private let close: Close
    private let getErr: GetErr

    /// The process-wide library, loaded once; `nil` when absent.
    static let shared: LibPcap? = LibPcap()

    private init?() {
        var handle: UnsafeMutableRawPointer?
        // WEHE_LIBPCAP names one library file to load instead (a libpcap outside the system's paths).
        let names = getenv("WEHE_LIBPCAP").map { [String(cString: $0)] } ?? Self.libraryNames
        for name in names {
            handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)
            if handle != nil { break }
        }
        guard let handle else { return nil }
        func symbol<T>(_ name: String, as type: T.Type) -> T? {
            guard let pointer = dlsym(handle, name) else { return nil }
            return unsafeBitCast(pointer, to: type)
        }
        guard let openOffline = symbol("pcap_open_offline", as: OpenOffline.self),
            let nextEx = symbol("pcap_next_ex", as: NextEx.self),
            let datalink = symbol("pcap_datalink", as: Datalink.self),
            let close = symbol("pcap_close", as: Close.self),
            let getErr = symbol("pcap_geterr", as: GetErr.self)
        else { return nil }
        self.openOffline = openOffline
        self.openLive = symbol("pcap_open_live", as: OpenLive.self)
        self.nextEx = nextEx
        self.datalink = datalink
        self.close = close
        self.getErr = getErr
    }

    /// The loaded library, or the error that says how to install it.
    static func load() throws(WeheRecordError) -> LibPcap {
        guard let shared else { throw WeheRecordError(.libpcapMissing, missingMessage) }
        return shared
    }

    /// An open capture (file or interface).
    final class Handle {
        fileprivate let library: LibPcap
        fileprivate let pcap: OpaquePointer
        /// The link type (`DLT_*` value libpcap reports).
        let linkType: Int32

        fileprivate init(library: LibPcap, pcap: OpaquePointer) {
            self.library = library
            self.pcap = pcap
            self.linkType = library.datalink(pcap)
        }

        deinit { library.close(pcap) }

        /// What `next()` found.
        enum Next {
            case frame(CapturedFrame)
            case timeout
            case end
        }

        /// The next frame; `.end` at the end of a file.
        /// - Throws: `.malformed` with libpcap's message (a truncated file, a damaged block).
        func next() throws(WeheRecordError) -> Next {
            var header: UnsafeMutableRawPointer?
            var data: UnsafePointer<UInt8>?
            let status = library.nextEx(pcap, &header, &data)
            switch status {
            case 1:
                guard let header, let data else { return .timeout }
                // struct pcap_pkthdr: struct timeval ts; bpf_u_int32 caplen; bpf_u_int32 len.
                let seconds = header.load(fromByteOffset: 0, as: Int.self)
                let micros: Int
                #if canImport(Darwin)
                    micros = Int(header.load(fromByteOffset: MemoryLayout<Int>.size, as: Int32.self))
                #else
                    micros = header.load(fromByteOffset: MemoryLayout<Int>.size, as: Int.self)
                #endif
                let lengths = MemoryLayout<timeval>.size
                let captured = Int(header.load(fromByteOffset: lengths, as: UInt32.self))
                let wire = Int(header.load(fromByteOffset: lengths + 4, as: UInt32.self))
                let bytes = Array(UnsafeBufferPointer(start: data, count: captured))
                return .frame(
                    CapturedFrame(time: Double(seconds) + Double(micros) / 1_000_000, bytes: bytes, wireLength: wire))
            case 0:
                return .timeout
            case -2:
                return .end
            default:
                throw WeheRecordError(.malformed, "the capture is damaged: \(errorText)")
            }
        }

        private var errorText: String {
            guard let text = library.getErr(pcap) else { return "unknown libpcap error" }
            return String(cString: text)
        }
    }

    /// Opens a pcap or pcapng file.
    func open(file path: String) throws(WeheRecordError) -> Handle {
        guard access(path, R_OK) == 0 else {
            throw WeheRecordError(.unreadable, "cannot read the capture \(path): \(String(cString: strerror(errno)))")
        }
        var error = [CChar](repeating: 0, count: 512)
        guard let pcap = openOffline(path, &error) else {
            let text = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw WeheRecordError(.malformed, "\(path) is not a readable pcap or pcapng capture: \(text)")
        }
        return Handle(library: self, pcap: pcap)
    }

    /// Opens an interface for live capture (needs CAP_NET_RAW), frames whole, `timeoutMilliseconds` per read.
    func open(interface: String, timeoutMilliseconds: Int32) throws(WeheRecordError) -> Handle {
        guard let openLive else {
            throw WeheRecordError(.captureFailed, "this libpcap has no pcap_open_live")
        }
        var error = [CChar](repeating: 0, count: 512)
        guard let pcap = openLive(interface, 262_144, 0, timeoutMilliseconds, &error) else {
            let text = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw WeheRecordError(
                .captureFailed, "cannot capture on \(interface): \(text) (live capture needs CAP_NET_RAW or root)")
        }
        return Handle(library: self, pcap: pcap)
    }
}
