#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why libpcap could not do what was asked. `code` says what went wrong; `message` says it for a person.
package struct PcapError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    package enum Code: Sendable, Hashable {
        /// No libpcap could be loaded.
        case libraryMissing
        /// The file cannot be read.
        case unreadable
        /// The file or a record is not a readable capture.
        case malformed
        /// A live capture could not be opened (no such interface, no CAP_NET_RAW).
        case captureFailed
        /// libpcap refused the filter expression.
        case filterRejected
    }

    /// What went wrong.
    package var code: Code
    /// The explanation.
    package var message: String

    /// Creates an error.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}

/// One frame read from a capture: its time (seconds since 1970), link-layer bytes as captured, and the length the
/// frame had on the wire (larger than `bytes.count` when the capture cut it at its snap length).
package struct PcapFrame: Sendable, Hashable {
    /// Seconds since 1970.
    package var time: Double
    /// The captured bytes, from the link-layer header on.
    package var bytes: [UInt8]
    /// Length on the wire.
    package var wireLength: Int

    /// Creates a frame.
    package init(time: Double, bytes: [UInt8], wireLength: Int) {
        self.time = time
        self.bytes = bytes
        self.wireLength = wireLength
    }
}

/// libpcap, loaded at run time with `dlopen` so that our static release binaries still run on a machine without it
/// (`wehe record` and the server's capture on an interface need it; nothing else does). libpcap reads both pcap and
/// pcapng files and captures live. `WEHE_LIBPCAP` names one library file to load instead of the system's.
package final class LibPcap: @unchecked Sendable {
    private typealias OpenOffline =
        @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?) -> OpaquePointer?
    private typealias OpenLive =
        @convention(c) (UnsafePointer<CChar>?, Int32, Int32, Int32, UnsafeMutablePointer<CChar>?) -> OpaquePointer?
    private typealias NextEx =
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
            UnsafeMutablePointer<UnsafePointer<UInt8>?>?
        ) -> Int32
    private typealias Datalink = @convention(c) (OpaquePointer?) -> Int32
    private typealias Close = @convention(c) (OpaquePointer?) -> Void
    private typealias GetErr = @convention(c) (OpaquePointer?) -> UnsafeMutablePointer<CChar>?
    private typealias Compile =
        @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafePointer<CChar>?, Int32, UInt32) -> Int32
    private typealias SetFilter = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32
    private typealias FreeCode = @convention(c) (UnsafeMutableRawPointer?) -> Void
    private typealias SetNonblock = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<CChar>?) -> Int32
    private typealias SelectableFD = @convention(c) (OpaquePointer?) -> Int32

    /// The library names tried in order (Debian's package is `libpcap0.8`, whose file is `libpcap.so.0.8`).
    package static let libraryNames = [
        "libpcap.so.0.8", "libpcap.so.1", "libpcap.so", "libpcap.A.dylib", "libpcap.dylib",
    ]

    /// The message when no libpcap can be loaded.
    package static let missingMessage =
        "reading captures needs libpcap: apt install libpcap0.8 (Debian, Ubuntu), dnf install libpcap (Fedora); "
        + "macOS has it"

    private let openOffline: OpenOffline
    private let openLive: OpenLive?
    private let nextEx: NextEx
    private let datalink: Datalink
    private let close: Close
    private let getErr: GetErr
    private let compile: Compile?
    private let setFilter: SetFilter?
    private let freeCode: FreeCode?
    private let setNonblock: SetNonblock?
    private let selectableFD: SelectableFD?

    /// The process-wide library, loaded once; `nil` when absent.
    package static let shared: LibPcap? = LibPcap()

    private init?() {
        var handle: UnsafeMutableRawPointer?
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
        self.compile = symbol("pcap_compile", as: Compile.self)
        self.setFilter = symbol("pcap_setfilter", as: SetFilter.self)
        self.freeCode = symbol("pcap_freecode", as: FreeCode.self)
        self.setNonblock = symbol("pcap_setnonblock", as: SetNonblock.self)
        self.selectableFD = symbol("pcap_get_selectable_fd", as: SelectableFD.self)
    }

    /// The loaded library, or the error that says how to install it.
    package static func load() throws(PcapError) -> LibPcap {
        guard let shared else { throw PcapError(.libraryMissing, missingMessage) }
        return shared
    }

    /// An open capture (file or interface). Not thread-safe: one reader at a time.
    package final class Handle {
        fileprivate let library: LibPcap
        fileprivate let pcap: OpaquePointer
        /// The link type (`DLT_*` value libpcap reports).
        package let linkType: Int32

        fileprivate init(library: LibPcap, pcap: OpaquePointer) {
            self.library = library
            self.pcap = pcap
            self.linkType = library.datalink(pcap)
        }

        deinit { library.close(pcap) }

        /// What `next()` found.
        package enum Next {
            case frame(PcapFrame)
            case timeout
            case end
        }

        /// The next frame; `.end` at the end of a file, `.timeout` when a live read found nothing in its time.
        /// - Throws: `.malformed` with libpcap's message (a truncated file, a damaged block, a failed read).
        package func next() throws(PcapError) -> Next {
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
                    PcapFrame(time: Double(seconds) + Double(micros) / 1_000_000, bytes: bytes, wireLength: wire))
            case 0:
                return .timeout
            case -2:
                return .end
            default:
                throw PcapError(.malformed, "the capture is damaged: \(errorText)")
            }
        }

        /// Keeps only the frames that match a libpcap filter expression (`host 198.18.0.2 and tcp port 80`).
        /// - Throws: `.filterRejected` with libpcap's reason.
        package func filter(_ expression: String) throws(PcapError) {
            guard let compile = library.compile, let setFilter = library.setFilter, let freeCode = library.freeCode
            else { throw PcapError(.filterRejected, "this libpcap has no pcap_compile") }
            // struct bpf_program { u_int bf_len; struct bpf_insn *bf_insns; }: 16 bytes on 64-bit machines.
            let program = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 8)
            defer { program.deallocate() }
            program.initializeMemory(as: UInt8.self, repeating: 0, count: 32)
            // PCAP_NETMASK_UNKNOWN: only broadcast tests need the netmask, and our filters have none.
            guard compile(pcap, program, expression, 1, 0xFFFF_FFFF) == 0 else {
                throw PcapError(.filterRejected, "libpcap refused the filter '\(expression)': \(errorText)")
            }
            defer { freeCode(program) }
            guard setFilter(pcap, program) == 0 else {
                throw PcapError(.filterRejected, "libpcap could not apply the filter '\(expression)': \(errorText)")
            }
        }

        /// Makes reads return at once (`.timeout` when nothing is buffered) and returns the descriptor to wait on
        /// with `poll`: a live read's timeout alone may never fire on Linux while no packet arrives, so a reader that
        /// must stop on time waits itself (`waitReadable`).
        /// - Throws: `.captureFailed` when this libpcap or this handle cannot do it.
        package func makeNonBlocking() throws(PcapError) {
            guard let setNonblock = library.setNonblock, let selectableFD = library.selectableFD else {
                throw PcapError(.captureFailed, "this libpcap has no pcap_setnonblock")
            }
            var error = [CChar](repeating: 0, count: 512)
            guard setNonblock(pcap, 1, &error) == 0 else {
                throw PcapError(.captureFailed, "cannot make the capture non-blocking: \(LibPcap.text(error))")
            }
            descriptor = selectableFD(pcap)
            guard descriptor >= 0 else {
                throw PcapError(.captureFailed, "this capture has no descriptor to wait on")
            }
        }

        private var descriptor: Int32 = -1

        /// Waits at most `milliseconds` for frames to read (after `makeNonBlocking`); whether some may be there.
        package func waitReadable(milliseconds: Int32) -> Bool {
            guard descriptor >= 0 else { return true }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            return poll(&entry, 1, milliseconds) > 0
        }

        private var errorText: String {
            guard let text = library.getErr(pcap) else { return "unknown libpcap error" }
            return String(cString: text)
        }
    }

    /// Opens a pcap or pcapng file.
    package func open(file path: String) throws(PcapError) -> Handle {
        guard access(path, R_OK) == 0 else {
            throw PcapError(.unreadable, "cannot read the capture \(path): \(String(cString: strerror(errno)))")
        }
        var error = [CChar](repeating: 0, count: 512)
        guard let pcap = openOffline(path, &error) else {
            throw PcapError(.malformed, "\(path) is not a readable pcap or pcapng capture: \(Self.text(error))")
        }
        return Handle(library: self, pcap: pcap)
    }

    /// Opens an interface for live capture (needs CAP_NET_RAW), frames cut at `snapLength` bytes, each read waiting
    /// at most `timeoutMilliseconds`; never promiscuous.
    package func open(
        interface: String, snapLength: Int32 = 262_144, timeoutMilliseconds: Int32
    ) throws(PcapError) -> Handle {
        guard let openLive else {
            throw PcapError(.captureFailed, "this libpcap has no pcap_open_live")
        }
        var error = [CChar](repeating: 0, count: 512)
        guard let pcap = openLive(interface, snapLength, 0, timeoutMilliseconds, &error) else {
            throw PcapError(
                .captureFailed,
                "cannot capture on \(interface): \(Self.text(error)) (live capture needs CAP_NET_RAW or root)")
        }
        return Handle(library: self, pcap: pcap)
    }

    fileprivate static func text(_ error: [CChar]) -> String {
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
