/// The first bytes of a TCP trace, as a short round of the adaptive verdict replays them.
///
/// A prefix keeps the trace's first packets in their order, with their timestamps, so every flow it keeps opens with
/// the bytes the recording opened with (a TLS ClientHello and its server name, an HTTP request's Host): a classifier
/// on the path sees what it would see at the start of the whole replay. The last packet kept may have its response
/// cut: the client reads that many bytes of it and closes, as every Wehe client does when its time limit cuts a
/// read in progress; the server's replay of the flow ends when its writes meet the closed connection.
extension ReplayTrace {
    /// About the trace's first `bytes` bytes, uploads and TCP responses counted in trace order: the packets before
    /// the one that reaches `bytes`, and that one whole when its response ends before twice `bytes`, else with its
    /// response shortened to the bytes still missing (at least one byte of it, so a prefix never ends on a packet
    /// whose response is not read). A cut at a response's end costs nothing more; a cut inside one lets the rest of
    /// the response already in flight (socket buffers, the path's bandwidth-delay product) arrive unread, which is
    /// why a response is cut only when it is large. The whole trace when it is smaller, and for UDP traces, whose
    /// rounds are cut in time instead (the server sends UDP on its own schedule).
    public func prefix(bytes: Int) -> ReplayTrace {
        guard transport == .tcp else { return self }
        var kept: [ReplayPacket] = []
        var total = 0
        for packet in packets {
            if total >= bytes { break }
            var packet = packet
            total += packet.payload.count
            if case .tcp(let length, let hash) = packet.kind, length > 0 {
                let wanted = total + length <= 2 * bytes ? length : max(1, min(length, bytes - total))
                packet.kind = .tcp(responseLength: wanted, responseHash: hash)
                total += wanted
            }
            kept.append(packet)
        }
        return ReplayTrace(packets: kept, udpClientPorts: udpClientPorts, tcpCSPairs: tcpCSPairs, name: name)
    }

    /// Bytes of the trace, both directions as far as the client file knows (uploads, TCP responses).
    public var bytesBothWays: Int { bytesUp + bytesDown }
}

extension ReplayTrace {
    /// The trace with every wait longer than `longest` seconds (before the first packet, and between one packet's
    /// recorded time and the next one's) shortened to `longest`; the packets, their bytes and their order unchanged.
    /// The engine still sends no packet before the previous response is in, so a wait that covered a large transfer
    /// in the recording becomes the transfer itself on the path.
    public func shorteningPauses(to longest: Double) -> ReplayTrace {
        guard longest >= 0 else { return self }
        var shortened = self
        var previous = 0.0
        var removed = 0.0
        for index in shortened.packets.indices {
            let recorded = packets[index].timestamp
            removed += max(0, recorded - previous - longest)
            previous = recorded
            shortened.packets[index].timestamp = recorded - removed
        }
        return shortened
    }
}
