import Foundation
import Testing
import WeheCore
import WeheStoreSQL

@Suite("SampleCodec")
struct SampleCodecTests {
    @Test("evenly spaced series take 8 bytes per sample and decode exactly")
    func evenlySpaced() throws {
        let series = ThroughputSeries(mbps: [0, 1.5, .leastNonzeroMagnitude, 12.345678901234567], interval: 0.12)
        let blob = SampleCodec.encode(series)
        #expect(blob.count == 13 + 4 * 8)
        #expect(blob.first == 2)
        #expect(SampleCodec.decode(blob) == series)
    }

    @Test("other series keep their times explicitly")
    func explicitTimes() throws {
        let series = ThroughputSeries(mbps: [1, 2, 3], times: [0.1, 0.25, 0.25])
        let blob = SampleCodec.encode(series)
        #expect(blob.count == 5 + 3 * 16)
        #expect(blob.first == 1)
        #expect(SampleCodec.decode(blob) == series)
        let empty = ThroughputSeries(mbps: [], times: [])
        #expect(SampleCodec.decode(SampleCodec.encode(empty)) == empty)
    }

    @Test("the layout is little-endian")
    func layout() {
        let blob = SampleCodec.encode(ThroughputSeries(mbps: [1], times: [0.5]))
        #expect(
            Array(blob) == [2, 1, 0, 0, 0] + Array(withUnsafeBytes(of: (0.5).bitPattern.littleEndian) { Array($0) })
                + Array(withUnsafeBytes(of: (1.0).bitPattern.littleEndian) { Array($0) }))
    }

    @Test(
        "malformed blobs decode to nil",
        arguments: [Data(), Data([2, 1, 0]), Data([9, 0, 0, 0, 0]), Data([1, 2, 0, 0, 0, 1, 2, 3])])
    func malformed(blob: Data) {
        #expect(SampleCodec.decode(blob) == nil)
    }
}
