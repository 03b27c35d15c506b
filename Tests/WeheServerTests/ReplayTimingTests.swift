import Testing
import WeheServer

@Suite("Replay timing record")
struct ReplayTimingTests {
    @Test("the record is anchored at the earliest group and summarised as median, p99 and maximum in milliseconds")
    func alignmentAndSummary() throws {
        var timing = ReplayTiming()
        timing.groups = [
            .init(requestLateness: 0.005, responseLateness: 0.0051, reaction: 0.0001),
            .init(requestLateness: -0.002),
            .init(requestLateness: 0.010, responseLateness: 0.0102, reaction: 0.0002),
        ]
        timing.alignToEarliestGroup()
        let lateness = timing.groups.map(\.requestLateness)
        #expect(zip(lateness, [0.007, 0, 0.012]).allSatisfy { abs($0 - $1) < 1e-12 })
        #expect(abs((timing.groups[0].responseLateness ?? 0) - 0.0071) < 1e-12)
        let summary = try #require(ReplayTiming.summary(lateness))
        #expect(abs(summary.median - 7) < 1e-9)
        #expect(abs(summary.max - 12) < 1e-9)
        #expect(abs(summary.p99 - 11.9) < 1e-9)
        #expect(timing.detail.hasPrefix("groups 3; request lateness ms median 7.0 p99 11.9 max 12.0;"))
        #expect(ReplayTiming.summary([]) == nil)
    }
}
