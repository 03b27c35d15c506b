/// The server-driven search for the payload bytes a DPI classifier matches on (analysis.md sections 5.2-5.4).
///
/// The search is a pure state machine. It proposes a probe ("invert bytes `[l, r)` of packet `C_k`"); whoever runs
/// the probe (the real client, or a simulated classifier in tests) replays the original trace with that region
/// inverted and reports whether the classification broke, i.e. whether the verdict for the modified replay was
/// *differentiation* (inconclusive counts as not broken). The value is `Codable`, so a server can keep one per user
/// between requests.
///
/// Algorithm (breadth first, first in first out):
/// * each packet starts with the region `[10, length)`; the first 10 bytes are never touched;
/// * a probe that broke the classification and is wider than 4 bytes is split at `l + ⌊(r − l)/2⌋` and both
///   halves are queued; a 2–4 byte region queues each of its bytes; a 1-byte region records that byte as matching;
/// * a probe that did not break it queues nothing;
/// * when the queue is empty: if bytes were recorded the search ends with the longest run of consecutive recorded
///   bytes of each packet; otherwise it moves on to the next packet;
/// * it gives up after 10 packets without a match or after 200 probes.
///
/// Reference defects fixed here (analysis.md section 5.4): the longest run includes its first byte (1), the midpoint
/// is an integer (2), running out of packets ends with `.noRuleFound` instead of crashing (3); callers invert all
/// 8 bits of the named packet on its own side (6, see `PayloadInversion`). Packets whose payload is not longer than
/// the skipped prefix cannot be probed; they count towards the packet limit without costing a probe. Ties between
/// equally long runs go to the earliest.
public struct DPISearch: Sendable, Hashable, Codable {
    /// Where the search stands.
    public enum State: Sendable, Hashable, Codable {
        /// Waiting for the result of this probe.
        case probing(DPIProbe)
        /// The search is over.
        case finished(DPISearchOutcome)
    }

    /// The limits in force.
    public let configuration: DPISearchConfiguration
    /// The payload-carrying packets of the trace, in trace order.
    public let packets: [DPIPacket]
    /// The current state.
    public private(set) var state: State
    /// Number of probes answered so far (`numTests` in the reference).
    public private(set) var probeCount = 0
    /// Number of packets finished without a match (`numTestedPackets` in the reference).
    public private(set) var testedPacketCount = 0
    /// Byte offsets found to matter, per packet, in ascending order.
    public private(set) var matchingBytes: [DPIPacketID: [Int]] = [:]
    private var packetIndex = 0
    private var queue: [DPIProbe] = []
    private var queueHead = 0

    /// Starts a search over `packets`.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` for non-positive limits or a negative
    ///   prefix, and `.invalidRegion` for a packet with a negative length or a name listed twice.
    public init(packets: [DPIPacket], configuration: DPISearchConfiguration = DPISearchConfiguration())
        throws(WeheAnalysisError)
    {
        guard configuration.skippedPrefix >= 0, configuration.byteByByteWidth >= 1,
            configuration.maxTestedPackets >= 1, configuration.maxProbes >= 1
        else {
            throw WeheAnalysisError(.invalidConfiguration, "DPI search limits must be positive: \(configuration)")
        }
        if let bad = packets.first(where: { $0.length < 0 }) {
            throw WeheAnalysisError(.invalidRegion, "packet \(bad.id) has a negative length \(bad.length)")
        }
        var seen: Set<DPIPacketID> = []
        for packet in packets where !seen.insert(packet.id).inserted {
            throw WeheAnalysisError(.invalidRegion, "packet \(packet.id) is listed twice")
        }
        self.configuration = configuration
        self.packets = packets
        self.state = .finished(.noRuleFound)
        self.state = startPacket(at: 0)
    }

    /// The probe to run next, or `nil` when the search is over.
    public var currentProbe: DPIProbe? {
        if case .probing(let probe) = state { return probe }
        return nil
    }

    /// The outcome, or `nil` while the search is running.
    public var outcome: DPISearchOutcome? {
        if case .finished(let outcome) = state { return outcome }
        return nil
    }

    /// Records the result of the current probe and returns the new state.
    /// - Parameters:
    ///   - probe: the probe that was run; it must be the current probe (the client echoes it back).
    ///   - classificationBroke: whether inverting the region broke the classification (verdict differentiation).
    /// - Throws: `WeheAnalysisError` with code `.dpiProtocolViolation` when the search has finished or `probe` is
    ///   not the current probe.
    @discardableResult
    public mutating func record(_ probe: DPIProbe, classificationBroke: Bool) throws(WeheAnalysisError) -> State {
        guard case .probing(let current) = state else {
            throw WeheAnalysisError(.dpiProtocolViolation, "the DPI search has already finished (\(state))")
        }
        guard current == probe else {
            throw WeheAnalysisError(.dpiProtocolViolation, "result for \(probe) but the current probe is \(current)")
        }
        queueHead += 1
        probeCount += 1
        if classificationBroke {
            enqueueAfterMatch(of: probe)
        }
        state = nextState()
        return state
    }

    private mutating func enqueueAfterMatch(of probe: DPIProbe) {
        let left = probe.region.lowerBound
        let right = probe.region.upperBound
        let width = right - left
        if width > configuration.byteByByteWidth {
            let middle = left + width / 2
            queue.append(DPIProbe(packet: probe.packet, region: left..<middle))
            queue.append(DPIProbe(packet: probe.packet, region: middle..<right))
        } else if width == 1 {
            var recorded = matchingBytes[probe.packet, default: []]
            if let position = recorded.firstIndex(where: { $0 >= left }) {
                if recorded[position] != left { recorded.insert(left, at: position) }
            } else {
                recorded.append(left)
            }
            matchingBytes[probe.packet] = recorded
        } else {
            for byte in left..<right {
                queue.append(DPIProbe(packet: probe.packet, region: byte..<(byte + 1)))
            }
        }
    }

    private mutating func nextState() -> State {
        if queueHead < queue.count {
            if let stop = limitReached() { return .finished(stop) }
            return .probing(queue[queueHead])
        }
        queue.removeAll()
        queueHead = 0
        if !matchingBytes.isEmpty {
            return .finished(.rules(rules()))
        }
        testedPacketCount += 1
        return startPacket(at: packetIndex + 1)
    }

    /// Moves to the first probeable packet at or after `index`, counting unprobeable ones as tested.
    private mutating func startPacket(at index: Int) -> State {
        packetIndex = index
        while packetIndex < packets.count {
            if let stop = limitReached() { return .finished(stop) }
            let packet = packets[packetIndex]
            if packet.length > configuration.skippedPrefix {
                let probe = DPIProbe(packet: packet.id, region: configuration.skippedPrefix..<packet.length)
                queue = [probe]
                queueHead = 0
                return .probing(probe)
            }
            testedPacketCount += 1
            packetIndex += 1
        }
        if let stop = limitReached() { return .finished(stop) }
        return .finished(.noRuleFound)
    }

    private func limitReached() -> DPISearchOutcome? {
        if testedPacketCount >= configuration.maxTestedPackets {
            return .noDPIInFirstPackets(testedPacketCount)
        }
        if probeCount >= configuration.maxProbes {
            return .probeLimitReached(probeCount)
        }
        return nil
    }

    private func rules() -> [DPIRule] {
        packets.compactMap { packet in
            guard let bytes = matchingBytes[packet.id], let first = bytes.first else { return nil }
            var best = first..<(first + 1)
            var runStart = first
            var previous = first
            for byte in bytes.dropFirst() {
                if byte != previous + 1 { runStart = byte }
                previous = byte
                if byte + 1 - runStart > best.count { best = runStart..<(byte + 1) }
            }
            return DPIRule(packet: packet.id, region: best, matchingBytes: bytes)
        }
    }
}
