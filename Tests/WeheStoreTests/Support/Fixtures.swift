import Foundation
import WeheCore
import WeheStore

/// A small deterministic generator (SplitMix64) so that fixtures are the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Builders of records for tests.
enum Fixtures {
    /// 2024-05-13 12:00:00 UTC plus `seconds`, with a sub-microsecond part that the stores round away.
    static func date(_ seconds: Double) -> Date {
        Date(timeIntervalSince1970: 1_715_601_600 + seconds + 0.000_000_3)
    }

    static func samples(count: Int, mean: Double, seed: UInt64, interval: Double = 0.12) -> ThroughputSeries {
        var generator = SeededGenerator(seed: seed)
        let mbps = (0..<count).map { _ in max(0, mean + Double.random(in: -1...1, using: &generator)) }
        return ThroughputSeries(mbps: mbps, interval: interval)
    }

    static func metadata(
        replay: String = "Pandora-05132024",
        at seconds: Double = 0,
        provider: String? = "Verizon (cellular)",
        network: String? = "LTE",
        address: String? = "198.51.100.77"
    ) -> TestMetadata {
        TestMetadata(
            replayName: replay,
            startedAt: date(seconds),
            provider: provider,
            networkType: network,
            clientVersion: "3.3",
            clientAddress: address,
            serverName: "replay-1.example",
            extraString: "0"
        )
    }

    static func replay(_ key: TestKey, testID: Int, mean: Double, at seconds: Double = 0, count: Int = 20)
        -> ReplayRecord
    {
        ReplayRecord(
            key: key.replay(testID),
            replayName: testID == 0 ? "Pandora-05132024" : "PandoraRandom-05132024",
            samples: samples(count: count, mean: mean, seed: UInt64(abs(key.historyCount) * 10 + testID)),
            receivedAt: date(seconds + Double(testID) * 15),
            clientDurationSeconds: 12.5
        )
    }

    static func summary(_ verdict: Verdict, area: Double = 0.4) -> AnalysisSummary {
        AnalysisSummary(
            areaTest: area,
            ks2RatioTest: 0.97,
            originalMeanMbps: 2.1,
            controlMeanMbps: 7.9,
            ksStatistic: 0.61,
            ksPValue: verdict == .differentiation ? 1e-9 : 0.4,
            verdict: verdict,
            direction: verdict == .differentiation ? .throttled : nil,
            thresholds: AppliedThresholds(area: 0.5, ksPValue: 0.01, ks2Ratio: nil, ruleSet: "android"),
            note: verdict == .inconclusive ? "area only" : nil
        )
    }

    static func analysis(_ key: TestKey, _ verdict: Verdict, at seconds: Double = 40) -> AnalysisRecord {
        AnalysisRecord(test: key, comparedTestID: 1, summary: summary(verdict), analysedAt: date(seconds))
    }

    /// A whole test: both replays, and an analysis when `verdict` is given.
    static func test(
        user: String = "@abc123xyz",
        count: Int,
        replay: String = "Pandora-05132024",
        provider: String? = "Verizon (cellular)",
        network: String? = "LTE",
        at seconds: Double,
        verdict: Verdict? = nil,
        samples sampleCount: Int = 20
    ) -> TestRecord {
        let key = TestKey(userID: user, historyCount: count)
        return TestRecord(
            key: key,
            metadata: metadata(replay: replay, at: seconds, provider: provider, network: network),
            replays: [
                Fixtures.replay(key, testID: 0, mean: 2, at: seconds, count: sampleCount),
                Fixtures.replay(key, testID: 1, mean: 8, at: seconds, count: sampleCount),
            ],
            analyses: verdict.map { [analysis(key, $0, at: seconds + 40)] } ?? []
        )
    }

    /// What a store gives back for `record`: times at microsecond resolution, address anonymised.
    static func stored(_ record: TestRecord, policy: AnonymizationPolicy = .default) -> TestRecord {
        var copy = record
        copy.metadata.startedAt = record.metadata.startedAt.storeRounded
        copy.metadata.clientAddress = policy.anonymize(record.metadata.clientAddress)
        copy.replays = record.replays.sorted { $0.key.testID < $1.key.testID }.map {
            var replay = $0
            replay.receivedAt = $0.receivedAt.storeRounded
            return replay
        }
        copy.analyses = record.analyses.sorted { $0.comparedTestID < $1.comparedTestID }.map {
            var analysis = $0
            analysis.analysedAt = $0.analysedAt.storeRounded
            return analysis
        }
        return copy
    }
}
