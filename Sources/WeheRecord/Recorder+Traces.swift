import Crypto
import WeheCore

/// One flow's packets as a replay trace and its server side, and the small formats the files use.
extension Recorder {
    /// Client packets and the server side of one TCP flow (recording.md 3.4).
    func tcpTrace(_ candidate: Candidate, pair: CSPair, clock: (Double) -> Double) -> ([ReplayPacket], TCPServerFlow) {
        var packets: [ReplayPacket] = []
        var groups: [ResponseGroup] = []
        var previous = 0.0
        let runs = candidate.runs
        var index = 0
        while index < runs.count {
            let request = runs[index]
            let response = index + 1 < runs.count ? runs[index + 1] : nil
            let responseBytes = response.map { $0.chunks.flatMap(\.payload) } ?? []
            let hash = responseBytes.isEmpty ? nil : Self.hex(Insecure.SHA1.hash(data: responseBytes))
            var requestLength = 0
            for (position, chunk) in request.chunks.enumerated() {
                let time = max(previous, clock(chunk.time))
                previous = time
                requestLength += chunk.payload.count
                let last = position == request.chunks.count - 1
                packets.append(
                    ReplayPacket(
                        csPair: pair, payload: chunk.payload, timestamp: time,
                        kind: .tcp(
                            responseLength: last ? responseBytes.count : 0, responseHash: last ? hash : nil)))
            }
            let firstResponse = response?.chunks.first.map { clock($0.time) } ?? 0
            groups.append(
                ResponseGroup(
                    requestLength: requestLength, responseLength: responseBytes.count, requestTime: previous,
                    segments: response.map { run in
                        run.chunks.map {
                            ServerSegment(offset: max(0, clock($0.time) - firstResponse), payload: $0.payload)
                        }
                    }))
            index += 2
        }
        return (packets, TCPServerFlow(csPair: pair, groups: groups))
    }

    /// Client datagrams (with keep-alives in long silences) and the recorded server datagrams of one UDP flow.
    func udpTrace(_ candidate: Candidate, pair: CSPair, clock: (Double) -> Double) -> ([ReplayPacket], UDPServerFlow) {
        var packets: [ReplayPacket] = []
        var datagrams: [ServerDatagram] = []
        var firstServer: Double?
        var lastClient: Double?
        for run in candidate.runs {
            for chunk in run.chunks {
                let time = clock(chunk.time)
                if run.fromClient {
                    if let last = lastClient, time - last >= Self.keepAliveSilence {
                        var keepAlive = last + Self.keepAliveInterval
                        while keepAlive < time {
                            packets.append(
                                ReplayPacket(csPair: pair, payload: [], timestamp: keepAlive, kind: .udp(end: false)))
                            keepAlive += Self.keepAliveInterval
                        }
                    }
                    lastClient = time
                    packets.append(
                        ReplayPacket(csPair: pair, payload: chunk.payload, timestamp: time, kind: .udp(end: false)))
                } else {
                    let origin = firstServer ?? time
                    firstServer = origin
                    datagrams.append(ServerDatagram(offset: max(0, time - origin), payload: chunk.payload))
                }
            }
        }
        return (packets, UDPServerFlow(csPair: pair, datagrams: datagrams))
    }

    /// Recomputes the response hashes of a control trace from its (inverted) server side.
    static func rehash(_ trace: inout ReplayTrace, server: ServerTrace) {
        var groups: [CSPair: [ResponseGroup]] = [:]
        for flow in server.tcpFlows { groups[flow.csPair] = flow.groups.filter { $0.responseLength > 0 } }
        var used: [CSPair: Int] = [:]
        for index in trace.packets.indices {
            guard case .tcp(let length, _) = trace.packets[index].kind, length > 0 else { continue }
            let pair = trace.packets[index].csPair
            let position = used[pair, default: 0]
            used[pair] = position + 1
            guard let group = groups[pair]?[safe: position], let segments = group.segments else { continue }
            let bytes = segments.flatMap(\.payload)
            trace.packets[index].kind = .tcp(responseLength: length, responseHash: hex(Insecure.SHA1.hash(data: bytes)))
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `MMDDYYYY` (UTC) of a time since 1970, as the published trace names carry their recording date.
    static func dateStamp(_ time: Double) -> String {
        let days = Int((time / 86_400).rounded(.down))
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return two(month) + two(day) + String(year)
    }

    static func format(_ value: Double) -> String {
        let scaled = (value * 100).rounded() / 100
        return "\(scaled)"
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
