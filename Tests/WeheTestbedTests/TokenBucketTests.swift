import Testing

@testable import WeheTestbed

@Suite("Token bucket")
struct TokenBucketTests {
    /// 80 kbit/s = 10 000 bytes per second: 1000 bytes take exactly 100 ms.
    private func bucket(burst: Int = 4000) -> TokenBucket {
        TokenBucket(rateBitsPerSecond: 80_000, burstBytes: burst)
    }

    @Test("a full bucket lets one burst through at once, then paces at the rate")
    func burstThenRate() {
        var bucket = bucket()
        for _ in 0..<4 { #expect(bucket.reserve(1000, at: .zero) == .zero) }
        #expect(bucket.reserve(1000, at: .zero) == .milliseconds(100))
        #expect(bucket.reserve(1000, at: .zero) == .milliseconds(200))
        #expect(bucket.backlog(at: .zero) == 2000)
        #expect(bucket.backlog(at: .milliseconds(150)) == 500)
        #expect(bucket.backlog(at: .milliseconds(200)) == 0)
    }

    @Test("credit refills at the rate and never beyond the burst")
    func refillIsCapped() {
        var bucket = bucket()
        #expect(bucket.reserve(4000, at: .zero) == .zero)
        // After 250 ms, 2500 bytes of credit: 2500 pass now, the next 500 wait 50 ms.
        #expect(bucket.reserve(2500, at: .milliseconds(250)) == .milliseconds(250))
        #expect(bucket.reserve(500, at: .milliseconds(250)) == .milliseconds(300))
        // A long idle period refills only up to the burst.
        #expect(bucket.reserve(4000, at: .seconds(60)) == .seconds(60))
        #expect(bucket.reserve(1, at: .seconds(60)) == .seconds(60) + .microseconds(100))
    }

    @Test("over any interval at most burst + rate × interval bytes leave", arguments: [1, 7, 100, 1448, 9000])
    func conformance(pieceSize: Int) {
        var bucket = TokenBucket(rateBitsPerSecond: 1_500_000, burstBytes: 16_384)
        var departures: [(Duration, Int)] = []
        var now = Duration.zero
        for index in 0..<2000 {
            guard let departure = bucket.reserve(pieceSize, at: now) else {
                Issue.record("no backlog limit, nothing may be refused")
                return
            }
            departures.append((departure, pieceSize))
            // The sender learns of the next piece at varying times, sometimes before, sometimes after departure.
            now = index % 3 == 0 ? departure : max(now, departure - .milliseconds(5))
        }
        let rate = 1_500_000.0 / 8
        var sent = 0
        for (departure, size) in departures {
            sent += size
            let seconds = Double(departure.components.seconds) + Double(departure.components.attoseconds) * 1e-18
            #expect(Double(sent) <= 16_384 + rate * seconds + 1)
        }
        #expect(departures.map(\.0) == departures.map(\.0).sorted())
    }

    @Test("the exact departure is rounded up to whole nanoseconds")
    func roundsUp() {
        var bucket = TokenBucket(rateBitsPerSecond: 3, burstBytes: 1)
        #expect(bucket.reserve(1, at: .zero) == .zero)
        // 1 byte = 8 bits at 3 bit/s = 2.666… s, rounded up.
        #expect(bucket.reserve(1, at: .zero) == .nanoseconds(2_666_666_667))
    }

    @Test("a backlog limit refuses what would wait beyond it and keeps the credit")
    func backlogLimit() {
        var bucket = bucket(burst: 1000)
        #expect(bucket.reserve(1000, at: .zero, backlogLimit: 1500) == .zero)
        #expect(bucket.reserve(1000, at: .zero, backlogLimit: 1500) == .milliseconds(100))
        #expect(bucket.reserve(1000, at: .zero, backlogLimit: 1500) == nil)
        #expect(bucket.backlog(at: .zero) == 1000)
        #expect(bucket.reserve(500, at: .zero, backlogLimit: 1500) == .milliseconds(150))
        #expect(bucket.reserve(1, at: .zero, backlogLimit: 1500) == nil)
        // Once the queue drains, datagrams are accepted again.
        #expect(bucket.reserve(1000, at: .milliseconds(150), backlogLimit: 1500) == .milliseconds(250))
    }
}
