import WehePcap

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

/// `wehe record`'s view of libpcap (loaded at run time by `WehePcap`, shared with the server's capture): the same
/// calls with this target's frames and errors.
struct CaptureSource {
    private let library: LibPcap

    /// The loaded library, or the error that says how to install it.
    static func load() throws(WeheRecordError) -> CaptureSource {
        do {
            return CaptureSource(library: try LibPcap.load())
        } catch {
            throw WeheRecordError(error)
        }
    }

    /// An open capture (file or interface).
    struct Handle {
        fileprivate let handle: LibPcap.Handle
        /// The link type (`DLT_*` value libpcap reports).
        var linkType: Int32 { handle.linkType }

        /// What `next()` found.
        enum Next {
            case frame(CapturedFrame)
            case timeout
            case end
        }

        /// Keeps only the frames that match a libpcap filter expression, in the kernel: a live capture on a busy
        /// interface then fills its buffer only with the traffic it records.
        func filter(_ expression: String) throws(WeheRecordError) {
            do {
                try handle.filter(expression)
            } catch {
                throw WeheRecordError(error)
            }
        }

        /// Makes reads return at once; `waitReadable` then waits (a live read's own timeout may never fire on Linux
        /// while no packet arrives, and a capture must end on time).
        func makeNonBlocking() throws(WeheRecordError) {
            do {
                try handle.makeNonBlocking()
            } catch {
                throw WeheRecordError(error)
            }
        }

        /// Waits at most `milliseconds` for frames to read.
        func waitReadable(milliseconds: Int32) -> Bool { handle.waitReadable(milliseconds: milliseconds) }

        /// The next frame; `.end` at the end of a file.
        func next() throws(WeheRecordError) -> Next {
            do {
                switch try handle.next() {
                case .frame(let frame):
                    return .frame(CapturedFrame(time: frame.time, bytes: frame.bytes, wireLength: frame.wireLength))
                case .timeout: return .timeout
                case .end: return .end
                }
            } catch {
                throw WeheRecordError(error)
            }
        }
    }

    /// Opens a pcap or pcapng file.
    func open(file path: String) throws(WeheRecordError) -> Handle {
        do {
            return Handle(handle: try library.open(file: path))
        } catch {
            throw WeheRecordError(error)
        }
    }

    /// Opens an interface for live capture (needs CAP_NET_RAW), frames whole, `timeoutMilliseconds` per read.
    func open(interface: String, timeoutMilliseconds: Int32) throws(WeheRecordError) -> Handle {
        do {
            return Handle(handle: try library.open(interface: interface, timeoutMilliseconds: timeoutMilliseconds))
        } catch {
            throw WeheRecordError(error)
        }
    }
}

extension WeheRecordError {
    /// The same failure in this target's terms.
    init(_ error: PcapError) {
        let code: Code
        switch error.code {
        case .libraryMissing: code = .libpcapMissing
        case .unreadable: code = .unreadable
        case .malformed: code = .malformed
        case .captureFailed, .filterRejected: code = .captureFailed
        }
        self.init(code, error.message)
    }
}
