import Testing
import WeheStatistics

/// The seeded generator against an independent Python implementation of xoshiro256**/splitmix64, and the subset
/// sampler against the same algorithm in Python.
@Suite struct SamplingTests {
    struct Case: Decodable, Sendable {
        var kind: String
        var seed: String
        var outputs: [String]?
        var n: Int?
        var count: Int?
        var indices: [Int]?
    }

    @Test func generatorAndSamplerMatchReference() throws {
        let cases = try Golden.cases("generator", as: Case.self)
        #expect(cases.count >= 10)
        for item in cases {
            let seed = try #require(UInt64(item.seed))
            var generator = SeededGenerator(seed: seed)
            if let outputs = item.outputs {
                let expected = outputs.compactMap { UInt64($0) }
                let produced = expected.map { _ in generator.next() }
                #expect(produced == expected, "xoshiro256** stream for seed \(seed)")
            } else if let n = item.n, let count = item.count, let indices = item.indices {
                let subset = Sampling.withoutReplacement(Array(0..<n), count: count, using: &generator)
                #expect(subset == indices, "subset for seed \(seed)")
            }
        }
    }

    @Test func splitMixFirstOutputIsTheKnownConstant() {
        // The first splitmix64 output from state 0 is a widely published test value.
        var state: UInt64 = 0
        var z = state &+ 0x9E37_79B9_7F4A_7C15
        state = z
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        #expect(z ^ (z >> 31) == 0xE220_A839_7B1D_CDAF)
    }

    @Test func subsetsAreDistinctAndClamped() {
        var generator = SeededGenerator(seed: 7)
        let values = Array(0..<50)
        for count in [0, 1, 25, 50] {
            let subset = Sampling.withoutReplacement(values, count: count, using: &generator)
            #expect(subset.count == count)
            #expect(Set(subset).count == count)
        }
        #expect(Sampling.withoutReplacement(values, count: 80, using: &generator).sorted() == values)
        #expect(Sampling.withoutReplacement(values, count: -3, using: &generator).isEmpty)
        #expect(Sampling.withoutReplacement([Int](), count: 3, using: &generator).isEmpty)
    }

    @Test func sameSeedSameStreamDifferentSeedDifferentStream() {
        var first = SeededGenerator(seed: 99)
        var second = SeededGenerator(seed: 99)
        var third = SeededGenerator(seed: 100)
        let a = (0..<8).map { _ in first.next() }
        #expect(a == (0..<8).map { _ in second.next() })
        #expect(a != (0..<8).map { _ in third.next() })
    }

    @Test func subsetFrequenciesAreUniform() {
        // Each of 10 elements should be picked in about 3/10 of 30 000 draws of 3.
        var generator = SeededGenerator(seed: 2024)
        var counts = [Int](repeating: 0, count: 10)
        for _ in 0..<30_000 {
            for index in Sampling.withoutReplacement(Array(0..<10), count: 3, using: &generator) { counts[index] += 1 }
        }
        for count in counts { #expect(abs(count - 9_000) < 400, "count \(count)") }
    }
}
