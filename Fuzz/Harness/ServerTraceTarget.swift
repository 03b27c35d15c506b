import WeheCore
import WeheWire

/// Our server-side trace format (`*.wehe_server.json`, `ServerTraceCodec`).
///
/// Invariants: a decoded trace's recorded segments add up to each group's response length, offsets are finite,
/// non-negative and non-decreasing; the trace encoded again decodes to the same trace; refusals are thrown with
/// offsets inside the input.
enum ServerTraceTarget {
    static func check(_ input: [UInt8]) {
        let codec = ServerTraceCodec()
        let trace: ServerTrace
        do {
            trace = try codec.decode(input)
        } catch {
            requireOffset(error, inside: input.count)
            return
        }
        require(!trace.name.isEmpty, "empty replay name accepted")
        for flow in trace.tcpFlows {
            for group in flow.groups {
                require(group.requestLength >= 0 && group.responseLength >= 0, "negative length accepted")
                require(group.requestTime.isFinite && group.requestTime >= 0, "request time \(group.requestTime)")
                if let segments = group.segments {
                    require(
                        segments.reduce(0) { $0 + $1.payload.count } == group.responseLength,
                        "segments do not add up to response_len")
                    requireOrdered(segments.map(\.offset))
                }
            }
        }
        for flow in trace.udpFlows {
            if let datagrams = flow.datagrams { requireOrdered(datagrams.map(\.offset)) }
        }
        do {
            let again = try codec.decode(Array(codec.encode(trace).utf8))
            require(again == trace, "server trace changed in a round trip")
        } catch {
            failed("the encoding of a decoded server trace is refused: \(error)")
        }
    }

    static func requireOrdered(_ offsets: [Double]) {
        var previous = 0.0
        for offset in offsets {
            require(offset.isFinite && offset >= previous, "offset \(offset) after \(previous) accepted")
            previous = offset
        }
    }
}
