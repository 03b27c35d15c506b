import Testing

@testable import WeheTestbed

@Suite("Flow classification")
struct ClassificationTests {
    private let route = ThrottlingProxyConfiguration.Route(
        .tcp,
        listen: .init(host: "127.0.0.1", port: 0),
        upstream: .init(host: "127.0.0.1", port: 443)
    )
    private let sni = Array("googlevideo".utf8)

    @Test("a pattern split across two reads is found, and the flow stays matched")
    func splitPattern() {
        let inspector = FlowInspector(classifier: .patterns([sni]), route: route, inspectedBytes: 4096)
        #expect(
            inspector.inspect(Array("\u{16}\u{3}\u{1}...r3---sn-abc.googl".utf8), direction: .upload) == (false, false))
        #expect(inspector.inspect(Array("evideo.com".utf8), direction: .upload) == (true, true))
        #expect(inspector.inspect(Array("anything".utf8), direction: .download) == (true, false))
        #expect(inspector.isMatched)
    }

    @Test("a pattern in the server's first bytes matches too")
    func downloadPattern() {
        let inspector = FlowInspector(classifier: .patterns([sni]), route: route, inspectedBytes: 64)
        #expect(!inspector.inspect(Array("GET / HTTP/1.1\r\n".utf8), direction: .upload).matched)
        #expect(inspector.inspect(Array("Location: googlevideo".utf8), direction: .download).matched)
    }

    @Test("bytes beyond the inspected prefix are not looked at")
    func inspectionWindow() {
        let inspector = FlowInspector(classifier: .patterns([sni]), route: route, inspectedBytes: 20)
        #expect(!inspector.inspect([UInt8](repeating: 0x41, count: 15), direction: .upload).matched)
        // Only 5 more bytes fit: "googl" — not the whole pattern.
        #expect(!inspector.inspect(sni, direction: .upload).matched)
        #expect(!inspector.inspect(sni, direction: .upload).matched)
        #expect(!inspector.isMatched)
    }

    @Test("once both prefixes are full without a match the flow is decided unmatched")
    func decidedUnmatched() {
        let inspector = FlowInspector(classifier: .patterns([sni]), route: route, inspectedBytes: 4)
        _ = inspector.inspect(Array("abcd".utf8), direction: .upload)
        _ = inspector.inspect(Array("efgh".utf8), direction: .download)
        #expect(!inspector.inspect(sni, direction: .upload).matched)
    }

    @Test("the bit-inverted control never matches")
    func controlDoesNotMatch() {
        let inspector = FlowInspector(classifier: .patterns([sni]), route: route, inspectedBytes: 4096)
        let original = Array("..server_name..r3---sn-abc.googlevideo.com..".utf8)
        #expect(!inspector.inspect(original.map { ~$0 }, direction: .upload).matched)
    }

    @Test("port, everything and nothing classifiers decide at creation")
    func staticClassifiers() {
        #expect(FlowInspector(classifier: .serverPorts([443]), route: route, inspectedBytes: 1).isMatched)
        #expect(!FlowInspector(classifier: .serverPorts([80, 8080]), route: route, inspectedBytes: 1).isMatched)
        #expect(FlowInspector(classifier: .everything, route: route, inspectedBytes: 1).isMatched)
        let nothing = FlowInspector(classifier: .nothing, route: route, inspectedBytes: 1)
        #expect(!nothing.inspect(sni, direction: .upload).matched)
    }

    @Test("a plain (unclassified) route is never matched")
    func plainRoute() {
        var plain = route
        plain.isClassified = false
        #expect(!FlowInspector(classifier: .everything, route: plain, inspectedBytes: 1).isMatched)
        let inspector = FlowInspector(classifier: .patterns([sni]), route: plain, inspectedBytes: 4096)
        #expect(!inspector.inspect(sni, direction: .upload).matched)
    }
}

@Suite("Flow shaping plans")
struct FlowShaperTests {
    private func shaper(
        _ shaping: ThrottlingProxyConfiguration.Shaping?,
        loss: ThrottlingProxyConfiguration.Loss? = nil,
        seed: UInt64 = 1
    ) -> FlowShaper {
        let bucket = shaping.map { SharedBucket(rateBitsPerSecond: $0.rateBitsPerSecond, burstBytes: $0.burstBytes) }
        return FlowShaper(shaping: shaping, loss: loss, aggregate: (bucket, bucket), random: SeededRandom(seed: seed))
    }

    @Test("unmatched flows pass whole chunks at once")
    func unmatched() {
        let plan = shaper(.init(rateBitsPerSecond: 8000)).plan(
            available: 65536, direction: .download, matched: false, relayed: 0, now: .seconds(3), isDatagram: false)
        #expect(plan == .init(length: 65536, departure: .seconds(3), shaped: false, lost: false))
    }

    @Test("matched TCP chunks are cut into segments and paced")
    func segments() {
        let shaper = shaper(.init(rateBitsPerSecond: 80_000, burstBytes: 1000, segmentBytes: 1000))
        let first = shaper.plan(
            available: 2500, direction: .download, matched: true, relayed: 0, now: .zero, isDatagram: false)
        #expect(first == .init(length: 1000, departure: .zero, shaped: true, lost: false))
        let second = shaper.plan(
            available: 1500, direction: .download, matched: true, relayed: 1000, now: .zero, isDatagram: false)
        #expect(second == .init(length: 1000, departure: .milliseconds(100), shaped: true, lost: false))
    }

    @Test("delayed throttling: bytes before the threshold pass unshaped and a chunk is cut at it")
    func delayed() {
        let shaper = shaper(.init(rateBitsPerSecond: 80_000, burstBytes: 1000, afterBytes: 5000, segmentBytes: 1000))
        let before = shaper.plan(
            available: 8000, direction: .download, matched: true, relayed: 0, now: .zero, isDatagram: false)
        #expect(before == .init(length: 5000, departure: .zero, shaped: false, lost: false))
        let at = shaper.plan(
            available: 3000, direction: .download, matched: true, relayed: 5000, now: .zero, isDatagram: false)
        #expect(at.shaped && at.length == 1000)
    }

    @Test("only the configured directions are shaped")
    func directions() {
        let shaping = ThrottlingProxyConfiguration.Shaping(rateBitsPerSecond: 8, burstBytes: 1, directions: .download)
        let shaper = FlowShaper(
            shaping: shaping, loss: nil,
            aggregate: (SharedBucket(rateBitsPerSecond: 8, burstBytes: 1), nil),
            random: SeededRandom(seed: 1))
        let upload = shaper.plan(
            available: 100, direction: .upload, matched: true, relayed: 0, now: .zero, isDatagram: false)
        #expect(!upload.shaped && upload.length == 100)
    }

    @Test("a datagram that overflows the queue is dropped, and is never split")
    func datagramQueue() {
        let shaper = shaper(.init(rateBitsPerSecond: 80_000, burstBytes: 1200, queueLimitBytes: 2400))
        var departures: [Duration?] = []
        for _ in 0..<5 {
            departures.append(
                shaper.plan(
                    available: 1200, direction: .download, matched: true, relayed: 0, now: .zero, isDatagram: true
                ).departure)
        }
        #expect(departures == [.zero, .milliseconds(120), .milliseconds(240), nil, nil])
    }

    @Test("random loss drops about the configured share of datagrams, reproducibly per seed")
    func datagramLoss() {
        func drops(seed: UInt64) -> [Bool] {
            let shaper = shaper(nil, loss: .init(probability: 0.1), seed: seed)
            return (0..<10_000).map { _ in
                shaper.plan(
                    available: 100, direction: .download, matched: false, relayed: 0, now: .zero, isDatagram: true
                ).departure == nil
            }
        }
        let first = drops(seed: 7)
        let count = first.filter { $0 }.count
        // Binomial(10000, 0.1): mean 1000, sd 30; ±5 sd.
        #expect((850...1150).contains(count))
        #expect(drops(seed: 7) == first)
        #expect(drops(seed: 8) != first)
    }

    @Test("loss stalls TCP pieces instead of dropping them, and spares the upload direction")
    func tcpLoss() {
        let shaper = shaper(nil, loss: .init(probability: 0.5, tcpStall: .milliseconds(200)))
        var stalled = 0
        for _ in 0..<1000 {
            let plan = shaper.plan(
                available: 10_000, direction: .download, matched: false, relayed: 0, now: .zero, isDatagram: false)
            #expect(plan.length == 1448)
            #expect(plan.departure == (plan.lost ? .milliseconds(200) : .zero))
            if plan.lost { stalled += 1 }
        }
        #expect((400...600).contains(stalled))
        let upload = shaper.plan(
            available: 10_000, direction: .upload, matched: false, relayed: 0, now: .zero, isDatagram: false)
        #expect(upload == .init(length: 10_000, departure: .zero, shaped: false, lost: false))
    }

    @Test("loss limited to matched flows spares the others")
    func matchedOnlyLoss() {
        let shaper = shaper(nil, loss: .init(probability: 0.99, matchedFlowsOnly: true))
        let plan = shaper.plan(
            available: 100, direction: .download, matched: false, relayed: 0, now: .zero, isDatagram: true)
        #expect(plan.departure == .zero)
    }
}
