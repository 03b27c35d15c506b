import WeheCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns a capture into a Wehe test (Docs/recording.md): reads frames with libpcap, keeps the client's TCP and UDP
/// flows, puts TCP streams back in order, chooses flows, rewrites the recorder's address, redacts cleartext
/// secrets, builds the client trace, its control and the server side, and reports what it kept and why.
public struct Recorder: Sendable {
    /// The options.
    public var options: RecordingOptions

    /// Creates a recorder.
    public init(options: RecordingOptions) {
        self.options = options
    }

    /// The address the recorder's own address becomes in the test.
    static let rewrittenIPv4 = "10.0.0.1"
    static let rewrittenIPv6 = "fd00::1"
    /// A UDP client silent this long towards a server gets empty keep-alive datagrams (recording.md 3.6) …
    static let keepAliveSilence = 20.0
    /// … one every this many seconds.
    static let keepAliveInterval = 10.0

    /// Reads a pcap or pcapng file and makes the test.
    public func record(file path: String) throws(WeheRecordError) -> Recording {
        try validate()
        let library = try CaptureSource.load()
        let handle = try library.open(file: path)
        var reader = try FrameSink(options: options, linkType: handle.linkType)
        while true {
            switch try handle.next() {
            case .frame(let frame): try reader.add(frame)
            case .timeout: continue
            case .end: return try build(reader)
            }
        }
    }

    /// Captures live on `interface` (needs CAP_NET_RAW) for `seconds`, or until `stop` says so (checked at least
    /// every 200 ms: the command line's Ctrl-C), then reads what the kernel still holds from before the end, and
    /// makes the test.
    /// - Parameter opened: called once the interface is open and filtered: traffic from then on is recorded.
    public func record(
        interface: String, seconds: Double, opened: () -> Void = {}, stop: () -> Bool = { false }
    ) throws(WeheRecordError) -> Recording {
        try validate()
        let library = try CaptureSource.load()
        let handle = try library.open(interface: interface, timeoutMilliseconds: 200)
        // Only the client's packets (and the chosen ports' and transport's) enter the capture buffer: on a busy
        // interface other traffic would fill it and the kernel would drop frames, the large ones (the payloads)
        // first.
        try handle.filter(options.captureFilter)
        try handle.makeNonBlocking()
        var reader = try FrameSink(options: options, linkType: handle.linkType)
        opened()
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: .milliseconds(Int64(seconds * 1000)))
        while clock.now < end, !stop() {
            if case .frame(let frame) = try handle.next() {
                try reader.add(frame)
            } else {
                _ = handle.waitReadable(milliseconds: 100)
            }
        }
        // Frames that arrived before the end but were not read yet belong to the recording: a busy machine reads
        // late, and libpcap hands frames over in blocks that the kernel releases only when full or after the
        // capture's timeout (200 ms). So reading goes on for three timeouts (600 ms) and stops early at the first
        // frame from after the end.
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let ended = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        let drainEnd = clock.now.advanced(by: .milliseconds(600))
        drain: while clock.now < drainEnd {
            switch try handle.next() {
            case .frame(let frame) where frame.time <= ended: try reader.add(frame)
            case .frame, .end: break drain
            case .timeout: _ = handle.waitReadable(milliseconds: 100)
            }
        }
        return try build(reader)
    }

    /// Makes the test from frames already read (the tests' and fuzzing's entry: no libpcap needed).
    public func record(frames: [CapturedFrame], linkType: Int32) throws(WeheRecordError) -> Recording {
        try validate()
        var reader = try FrameSink(options: options, linkType: linkType)
        for frame in frames { try reader.add(frame) }
        return try build(reader)
    }

    private func validate() throws(WeheRecordError) {
        guard (1...40).contains(options.id.count), options.id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else {
            throw WeheRecordError(.unusable, "the test id '\(options.id.prefix(48))' must be 1-40 letters or digits")
        }
        guard IPText.parse(options.client) != nil else {
            throw WeheRecordError(.unusable, "--client '\(options.client.prefix(48))' is not an IPv4 or IPv6 address")
        }
        if let shorten = options.shortenGaps, !(shorten.isFinite && shorten >= 0.1) {
            throw WeheRecordError(.unusable, "--shorten-gaps takes seconds, at least 0.1")
        }
    }

    /// Frames in, flows out.
    struct FrameSink {
        var table: FlowTable
        let decoder: PacketDecoder
        var frames = 0
        var skipped: [SkippedFrame: Int] = [:]
        var firstTime: Double?

        init(options: RecordingOptions, linkType: Int32) throws(WeheRecordError) {
            guard PacketDecoder.supports(linkType) else {
                throw WeheRecordError(
                    .malformed,
                    "the capture's link type \(linkType) is not one we read (Ethernet, Linux cooked, raw IP, "
                        + "loopback, Apple PKTAP): capture on another interface or convert it with editcap")
            }
            table = FlowTable(client: IPText.parse(options.client) ?? [], byteLimit: options.byteLimit)
            decoder = PacketDecoder(linkType: linkType)
        }

        mutating func add(_ frame: CapturedFrame) throws(WeheRecordError) {
            frames += 1
            if firstTime == nil { firstTime = frame.time }
            switch decoder.decode(frame) {
            case .success(let packet): try table.add(packet, frame: frames)
            case .failure(let reason): skipped[reason, default: 0] += 1
            }
        }
    }
}
