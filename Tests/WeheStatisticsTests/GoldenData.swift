import Foundation

/// Loading of the golden JSON files written by `scripts/golden_statistics.py` (SciPy 1.17.1), and the replay of
/// the deterministic sample generators described in that script.
enum Golden {
    /// The cases of one golden file.
    static func cases<Case: Decodable>(_ file: String, as type: Case.Type = Case.self) throws -> [Case] {
        guard let url = Bundle.module.url(forResource: file, withExtension: "json", subdirectory: "Golden") else {
            throw GoldenFileMissing(name: file)
        }
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(File<Case>.self, from: Data(contentsOf: url)).cases
    }

    private struct File<Case: Decodable>: Decodable {
        var generator: String
        var cases: [Case]
    }

    struct GoldenFileMissing: Error, CustomStringConvertible {
        var name: String
        var description: String { "golden file \(name).json is not in the test bundle" }
    }
}

/// A sample list stored in a golden file: literal values, a generator description, or (Spearman) a mix of two
/// generated lists `strength·x + noise`.
struct SampleSpec: Decodable, Sendable {
    var values: [Double]?
    var gen: String?
    var seed: UInt64?
    var n: Int?
    var lo: Double?
    var hi: Double?
    var step: Double?
    var levels: UInt64?
    var loc: Double?
    var scale: Double?
    var first: Double?
    var last: Double?
    var fsum: Double?
    var mix: MixSpec?

    /// The values, replayed bit for bit from the generator when not stored literally.
    func materialize() throws -> [Double] {
        if let values { return values }
        if let mix {
            let x = try mix.x.materialize()
            let noise = try mix.noise.materialize()
            let strength = mix.strength
            return zip(x, noise).map { strength * $0 + $1 }
        }
        guard let gen, let seed, let n else { throw ReplayFailure(reason: "incomplete generator description") }
        var stream = SplitMix64(state: seed)
        var values: [Double] = []
        values.reserveCapacity(n)
        for _ in 0..<n {
            switch gen {
            case "uniform":
                guard let lo, let hi else { throw ReplayFailure(reason: "uniform needs lo, hi") }
                values.append(lo + (hi - lo) * stream.nextUnit())
            case "grid":
                guard let lo, let step, let levels else { throw ReplayFailure(reason: "grid needs lo, step, levels") }
                values.append(lo + step * Double(stream.next() % levels))
            case "irwinhall":
                guard let loc, let scale else { throw ReplayFailure(reason: "irwinhall needs loc, scale") }
                let u1 = stream.nextUnit()
                let u2 = stream.nextUnit()
                let u3 = stream.nextUnit()
                let u4 = stream.nextUnit()
                values.append(loc + scale * (u1 + u2 + u3 + u4 - 2))
            default:
                throw ReplayFailure(reason: "unknown generator \(gen)")
            }
        }
        return values
    }

    /// Checks the replay against the stored first and last values (exact) and the exactly rounded sum.
    func verifyReplay(_ values: [Double]) -> Bool {
        if let first, values.first != first { return false }
        if let last, values.last != last { return false }
        if let fsum {
            var sum = 0.0
            var compensation = 0.0
            for value in values {
                let next = sum + value
                compensation += abs(sum) >= abs(value) ? (sum - next) + value : (value - next) + sum
                sum = next
            }
            if abs((sum + compensation) - fsum) > 1e-12 * max(1, abs(fsum)) { return false }
        }
        return true
    }

    struct ReplayFailure: Error { var reason: String }
}

/// The Spearman mix description.
final class MixSpec: Decodable, Sendable {
    let x: SampleSpec
    let noise: SampleSpec
    let strength: Double
}

/// splitmix64, the word source of the golden generators.
struct SplitMix64 {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1p-53 }
}

/// Tracks the worst relative error of one family of comparisons and reports it.
struct ErrorTracker {
    let family: String
    private(set) var worst = 0.0
    private(set) var worstCase = ""
    private(set) var count = 0

    init(_ family: String) { self.family = family }

    /// The relative error of `actual` against `expected`; 0 when both are equal (including both NaN or both 0).
    static func relativeError(_ actual: Double, _ expected: Double) -> Double {
        if actual == expected || (actual.isNaN && expected.isNaN) { return 0 }
        if expected == 0 || !expected.isFinite || !actual.isFinite { return .infinity }
        return abs(actual - expected) / abs(expected)
    }

    /// Records one comparison and returns its relative error.
    @discardableResult
    mutating func record(_ actual: Double, _ expected: Double, _ label: String) -> Double {
        let error = Self.relativeError(actual, expected)
        count += 1
        if error > worst {
            worst = error
            worstCase = label
        }
        return error
    }

    /// One line for the test log.
    var summary: String {
        let worstText = String(format: "%.2e", worst)
        return "[golden] \(family): \(count) values, worst relative error \(worstText) (\(worstCase))"
    }
}
