import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// The test page says when the client stopped a replay at the time limit: the verdicts then
/// judged only the part it covered. A test whose replays finished, or whose flag is not known, says nothing.
@Suite("test page: replays stopped by the time limit")
struct TestPageTimeLimitTests {
    @Test("a stopped replay is named with its time; finished and unknown replays add no row; JSON carries the flag")
    func page() async throws {
        let harness = try Harness()
        var records = try await seedPerson(harness.store, count: 2)
        records[0].replays[0].reachedTimeLimit = true
        records[0].replays[0].clientDurationSeconds = 45.04
        records[1].replays = records[1].replays.map {
            var replay = $0
            replay.reachedTimeLimit = nil
            return replay
        }
        try await harness.store.save(tests: records)
        let stopped = records[0].key.historyCount
        let finished = records[1].key.historyCount
        try await harness.test { client in
            let english = try await client.execute(uri: "/tests/demo-user/\(stopped)", method: .get).text
            #expect(english.contains("<dt>Time limit</dt>"), "\(english)")
            #expect(
                english.contains(
                    "time limit: the original replay was stopped after 45 s; the verdicts judge the part it covered"))
            let french = try await client.execute(uri: "/tests/demo-user/\(stopped)?lang=fr", method: .get).text
            #expect(french.contains("<dt>Limite de temps</dt>"))
            let plain = try await client.execute(uri: "/tests/demo-user/\(finished)", method: .get).text
            #expect(!plain.contains("<dt>Time limit</dt>"))
            let json = try await client.execute(uri: "/api/tests/demo-user/\(stopped)", method: .get)
            // The result record: its replay series carry the flag, and replaysCutShort names the replay.
            let record = try #require(
                try JSONSerialization.jsonObject(with: Data(json.text.utf8)) as? [String: Any])
            let series = try #require(record["replays"] as? [[String: Any]])
            #expect(series.first { $0["testID"] as? Int == 0 }?["reachedTimeLimit"] as? Bool == true)
            #expect(record["replaysCutShort"] as? [String] == ["original"])
        }
    }
}
