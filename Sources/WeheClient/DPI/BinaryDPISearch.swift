public import WeheAnalysis

/// The offline binary search of analysis.md section 5.5 (lib•erate's `RPanalysis`), driven by the client without
/// server state: a pure state machine like `DPISearch`, proposing one probe at a time.
///
/// Per packet, in trace order (at most `maxTestedPackets` packets and `maxProbes` probes, as `DPISearch`):
/// * one probe of the whole region `[skippedPrefix, length)`: a packet whose inversion does not break the
///   classification is left (the section's baseline, applied per packet; without it a packet without matching bytes
///   would cost two probes);
/// * then each queue entry — a suspect region and a mask of regions known not to matter, kept inverted — is probed
///   twice, left half and right half (each with the mask). Only left breaks it: continue on the left half with the
///   right half added to the mask; only right: the symmetric case; both: both halves are queued; neither: the entry is
///   abandoned ("both sides are not differentiated when masked", counted in `abandonedRegions`);
/// * a region of at most `byteByByteWidth` bytes is probed byte by byte (with its mask); bytes that break it are
///   recorded;
/// * the search ends at the first packet with recorded bytes, with its longest run (as `DPISearch` reports rules).
public struct BinaryDPISearch: Sendable {
    private struct Entry: Sendable {
        var region: Range<Int>
        var mask: [Range<Int>]
    }

    private enum Stage: Sendable {
        case whole(DPIProbe)
        /// Probing the left half, then the right half, of `entry`.
        case halves(Entry, left: Bool?, probingRight: Bool)
        /// Probing the bytes of `entry` one by one, at `next`.
        case bytes(Entry, next: Int)
        case finished(DPISearchOutcome)
    }

    /// The limits in force.
    public let configuration: DPISearchConfiguration
    /// The packets searched, in trace order.
    public let packets: [DPIPacket]
    /// Probes answered so far.
    public private(set) var probeCount = 0
    /// Packets finished without a match.
    public private(set) var testedPacketCount = 0
    /// Entries abandoned because neither half broke the classification.
    public private(set) var abandonedRegions = 0
    /// Bytes found to matter in the packet being searched.
    public private(set) var matchingBytes: [Int] = []
    private var packetIndex = 0
    private var queue: [Entry] = []
    private var stage: Stage = .finished(.noRuleFound)

    /// Starts a search.
    /// - Throws: `WeheAnalysisError` `.invalidConfiguration` for non-positive limits.
    public init(packets: [DPIPacket], configuration: DPISearchConfiguration = DPISearchConfiguration())
        throws(WeheAnalysisError)
    {
        guard configuration.skippedPrefix >= 0, configuration.byteByByteWidth >= 1,
            configuration.maxTestedPackets >= 1, configuration.maxProbes >= 1
        else {
            throw WeheAnalysisError(.invalidConfiguration, "DPI search limits must be positive: \(configuration)")
        }
        self.configuration = configuration
        self.packets = packets
        stage = startPacket(at: 0)
    }

    /// The probe to run next and the mask to keep inverted with it; `nil` when the search is over.
    public var current: (probe: DPIProbe, mask: [Range<Int>])? {
        guard let packet = packetIndex < packets.count ? packets[packetIndex].id : nil else { return nil }
        switch stage {
        case .whole(let probe): return (probe, [])
        case .halves(let entry, _, let probingRight):
            let (left, right) = halves(entry.region)
            return (DPIProbe(packet: packet, region: probingRight ? right : left), entry.mask)
        case .bytes(let entry, let next):
            return (DPIProbe(packet: packet, region: next..<(next + 1)), entry.mask)
        case .finished: return nil
        }
    }

    /// The outcome, `nil` while searching.
    public var outcome: DPISearchOutcome? {
        if case .finished(let outcome) = stage { return outcome }
        return nil
    }

    /// Records whether the current probe broke the classification.
    /// - Throws: `WeheAnalysisError` `.dpiProtocolViolation` when the search is over or `probe` is not current.
    public mutating func record(_ probe: DPIProbe, classificationBroke broke: Bool) throws(WeheAnalysisError) {
        guard let current, current.probe == probe else {
            throw WeheAnalysisError(
                .dpiProtocolViolation,
                "result for \(probe) but the current probe is \(String(describing: current?.probe))")
        }
        probeCount += 1
        switch stage {
        case .whole(let probe):
            if broke {
                queue = [Entry(region: probe.region, mask: [])]
                stage = nextEntry()
            } else {
                stage = packetDone()
            }
        case .halves(let entry, nil, false):
            stage = .halves(entry, left: broke, probingRight: true)
        case .halves(let entry, let left?, true):
            let (leftHalf, rightHalf) = halves(entry.region)
            switch (left, broke) {
            case (true, false): queue.append(Entry(region: leftHalf, mask: entry.mask + [rightHalf]))
            case (false, true): queue.append(Entry(region: rightHalf, mask: entry.mask + [leftHalf]))
            case (true, true):
                queue.append(Entry(region: leftHalf, mask: entry.mask))
                queue.append(Entry(region: rightHalf, mask: entry.mask))
            case (false, false): abandonedRegions += 1
            }
            stage = nextEntry()
        case .bytes(let entry, let next):
            if broke { matchingBytes.append(next) }
            if next + 1 < entry.region.upperBound {
                stage = .bytes(entry, next: next + 1)
            } else {
                stage = nextEntry()
            }
        case .halves, .finished:
            break
        }
        if case .finished = stage { return }
        if probeCount >= configuration.maxProbes { stage = .finished(.probeLimitReached(probeCount)) }
    }

    private func halves(_ region: Range<Int>) -> (Range<Int>, Range<Int>) {
        let middle = region.lowerBound + region.count / 2
        return (region.lowerBound..<middle, middle..<region.upperBound)
    }

    private mutating func nextEntry() -> Stage {
        guard !queue.isEmpty else { return packetDone() }
        let entry = queue.removeFirst()
        if entry.region.count > configuration.byteByByteWidth {
            return .halves(entry, left: nil, probingRight: false)
        }
        return .bytes(entry, next: entry.region.lowerBound)
    }

    private mutating func packetDone() -> Stage {
        if !matchingBytes.isEmpty {
            let bytes = matchingBytes.sorted()
            return .finished(
                .rules([DPIRule(packet: packets[packetIndex].id, region: Self.longestRun(bytes), matchingBytes: bytes)])
            )
        }
        testedPacketCount += 1
        return startPacket(at: packetIndex + 1)
    }

    private mutating func startPacket(at index: Int) -> Stage {
        packetIndex = index
        while packetIndex < packets.count {
            if testedPacketCount >= configuration.maxTestedPackets {
                return .finished(.noDPIInFirstPackets(testedPacketCount))
            }
            let packet = packets[packetIndex]
            if packet.length > configuration.skippedPrefix {
                return .whole(DPIProbe(packet: packet.id, region: configuration.skippedPrefix..<packet.length))
            }
            testedPacketCount += 1
            packetIndex += 1
        }
        if testedPacketCount >= configuration.maxTestedPackets {
            return .finished(.noDPIInFirstPackets(testedPacketCount))
        }
        return .finished(.noRuleFound)
    }

    /// The longest run of consecutive offsets in ascending `bytes` (the earliest of equally long runs).
    static func longestRun(_ bytes: [Int]) -> Range<Int> {
        guard let first = bytes.first else { return 0..<0 }
        var best = first..<(first + 1)
        var runStart = first
        var previous = first
        for byte in bytes.dropFirst() {
            if byte != previous + 1 { runStart = byte }
            previous = byte
            if byte + 1 - runStart > best.count { best = runStart..<(byte + 1) }
        }
        return best
    }
}
