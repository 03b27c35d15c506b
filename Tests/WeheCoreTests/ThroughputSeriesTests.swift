import Testing
import WeheCore

@Suite("throughput series")
struct ThroughputSeriesTests {
    @Test("evenly spaced times, mean with zeros, server trimming")
    func basics() throws {
        let series = ThroughputSeries(mbps: [0, 2, 4, 6], interval: 0.5)
        #expect(series.times == [0.5, 1.0, 1.5, 2.0])
        #expect(series.meanMbps == 3)
        #expect(series.droppingLastSample().mbps == [0, 2, 4])
        #expect(try series.validated() == series)
        #expect(ThroughputSeries(mbps: [], times: []).meanMbps == nil)
    }

    @Test(
        "invalid samples are refused with a reason",
        arguments: [
            ThroughputSeries(mbps: [1, 2], times: [1]),
            ThroughputSeries(mbps: [1, .nan], times: [1, 2]),
            ThroughputSeries(mbps: [1, .infinity], times: [1, 2]),
            ThroughputSeries(mbps: [1, -0.5], times: [1, 2]),
            ThroughputSeries(mbps: [1, 2], times: [2, 1]),
        ]
    )
    func invalid(series: ThroughputSeries) {
        #expect(throws: WeheCoreError(.invalidSamples, "")) { try series.validated() }
    }
}
