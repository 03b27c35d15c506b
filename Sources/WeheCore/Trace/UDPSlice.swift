/// A slice of a UDP replay: its opening datagrams, then a stretch from later in the recording, moved up to follow
/// them at once. An adaptive verdict's short UDP rounds replay slices of a call rather than its first seconds.
///
/// Why: a call opens with a few datagrams and seconds of near silence, then ramps up (Skype's trace sends 112 bytes in
/// its first second and reaches its full rate after about four). A round of the call's first seconds never reaches the
/// rate at which a cap bites, so a cap at three quarters of the call's rate went unseen by every short round. A slice
/// keeps what a classifier matches first (the opening datagrams, which also tell the server which recorded flow the
/// replay is) and then carries the call at its full rate.
///
/// Times are seconds after a flow's first datagram, on each side's own schedule: the client's datagrams after its
/// first, the server's after its first. A datagram at `t < openingSeconds` keeps its time; one at
/// `from ≤ t < from + seconds` moves to `openingSeconds + (t − from)`; every other datagram is left out. So a sliced
/// replay lasts `openingSeconds + seconds`. Both sides apply the same slice, so their schedules stay as aligned as the
/// recording's were. Only single-flow UDP traces are sliced (each flow's times start at its own first datagram).
public struct UDPSlice: Sendable, Hashable, CustomStringConvertible {
    /// The opening kept as recorded, seconds.
    public var openingSeconds: Double
    /// Where the stretch starts in the recording, seconds after the first datagram (at least `openingSeconds`).
    public var from: Double
    /// The stretch's length, seconds.
    public var seconds: Double

    /// The longest slice anything asks for, seconds: a bound for a spec that comes off the wire.
    public static let longestSeconds = 3_600.0

    /// Creates a slice; `nil` unless `0 ≤ openingSeconds ≤ from`, `seconds > 0` and all of them finite and at most
    /// `longestSeconds`.
    public init?(openingSeconds: Double, from: Double, seconds: Double) {
        guard openingSeconds.isFinite, from.isFinite, seconds.isFinite, openingSeconds >= 0, from >= openingSeconds,
            seconds > 0, from <= Self.longestSeconds, seconds <= Self.longestSeconds
        else { return nil }
        self.openingSeconds = openingSeconds
        self.from = from
        self.seconds = seconds
    }

    /// How long a sliced replay lasts, seconds.
    public var length: Double { openingSeconds + seconds }

    /// Where a datagram sent `offset` seconds after the first goes in the slice; `nil` when it is left out.
    public func place(_ offset: Double) -> Double? {
        if offset < openingSeconds { return offset }
        if offset >= from, offset < from + seconds { return openingSeconds + (offset - from) }
        return nil
    }

    public var description: String {
        "a \(Self.format(seconds))-s slice from \(Self.format(from)) s, after the first \(Self.format(openingSeconds)) s"
    }

    static func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

extension ReplayTrace {
    /// The trace with `slice` applied to its datagrams (times relative to the first packet); a TCP trace is returned
    /// unchanged (its rounds are cut in bytes).
    public func slice(_ slice: UDPSlice) -> ReplayTrace {
        guard transport == .udp, let first = packets.first?.timestamp else { return self }
        let kept = packets.compactMap { packet -> ReplayPacket? in
            guard let placed = slice.place(packet.timestamp - first) else { return nil }
            var packet = packet
            packet.timestamp = first + placed
            return packet
        }
        return ReplayTrace(packets: kept, udpClientPorts: udpClientPorts, tcpCSPairs: tcpCSPairs, name: name)
    }
}

extension Array where Element == ServerDatagram {
    /// A server flow's datagrams (times relative to its first) with `slice` applied.
    public func sliced(_ slice: UDPSlice) -> [ServerDatagram] {
        compactMap { datagram in
            slice.place(datagram.offset).map { ServerDatagram(offset: $0, payload: datagram.payload) }
        }
    }
}
