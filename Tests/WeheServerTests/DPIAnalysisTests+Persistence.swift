import Foundation
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheStoreSQL
import WeheTestKit
import WeheWire

/// DPI searches kept in the store: a search survives a restart of the server.
extension DPIAnalysisTests {
    /// Runs a server on `directory`'s replays with `store`.
    static func withServer<T: Sendable>(
        replays: String, store: any ResultStore, _ body: @Sendable (Int) async throws -> T
    ) async throws -> T {
        let configure: (inout ReplayServerConfiguration) -> Void = { $0.store = store }
        return try await ServerHarness.run(replays: replays, configure: configure) { server in
            try await body(try #require(server.ports.analyzerPlain))
        }
    }

    /// Half a D1 search on one server, then the rest on a new server with the store reopened.
    static func checkRestart(
        replays: String, user: String = user, open: @Sendable () async throws -> SQLResultStore
    ) async throws {
        let keywords = [Keyword(packet: "C_1", bytes: 100..<108)]
        let key = Self.key("DPIVec-11212026", user: user)
        let first = try await open()
        let handedOut: [DPIProbeMessage] = try await closing(first) { store in
            try await withServer(replays: replays, store: store) { port in
                var probes: [DPIProbeMessage] = []
                try await StoredTestLimitsTests.seedIfMissing(store, user: user, replay: "DPIVec-11212026")
                var answer = try parse(
                    try await post(
                        port, DPIAnalysisRequest.currentProbe(key: key, historyCount: 1, testID: 2).formPairs)
                ).get()
                while case .probe(let probe) = answer, probes.count < 12 {
                    probes.append(probe)
                    try await StoredTestLimitsTests.seedIfMissing(
                        store, user: user, replay: "DPIVec-11212026", probe: 2 + probes.count)
                    let report = DPIAnalysisRequest(
                        key: key, historyCount: 1, testID: 2 + probes.count, testedLeft: probe.testRegionLeft,
                        testedRight: probe.testRegionRight, diff: breaks(probe, keywords: keywords), probeBytes: 500)
                    answer = try parse(try await post(port, report.formPairs)).get()
                }
                return probes
            }
        }
        #expect(handedOut.count == 12)
        try await closing(try await open()) { store in
            try await withServer(replays: replays, store: store) { port in
                // The restarted server hands out the 13th probe and finishes the search where it stopped.
                let (probes, outcome) = try await search(
                    port: port, store: store, replay: "DPIVec-11212026", keywords: keywords, probeBytes: 500, user: user
                )
                #expect(probes.first?.numTests == 12)
                #expect(probes.count == 27 - 12)
                let rule = try #require(rules(outcome).first)
                #expect(rule.left == 100 && rule.right == 108)
                guard case .rules(let found) = outcome else { return }
                #expect(found.numTests == 27)
                #expect(found.bytesUsed == 27 * 500)
            }
        }
        try await closing(try await open()) { store in
            let results = try await store.dpiResults(
                DPIResultQuery(userID: user, carrierName: carrier, rulesOnly: true))
            #expect(results.count == 1)
            #expect(results.first?.probes == 27)
            #expect(results.first?.historyCount == 1)
        }
    }

    /// Runs `body` with `store`, closing the store afterwards whether `body` threw or not.
    static func closing<T: Sendable>(
        _ store: SQLResultStore, _ body: (SQLResultStore) async throws -> T
    ) async throws -> T {
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }

    static let logger = ServerHarness.logger

    @Test("a search survives a server restart on SQLite")
    func restartSQLite() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/results.sqlite"
        try await Self.checkRestart(replays: directory) {
            try await SQLResultStore.open(
                configuration: SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: path))), logger: Self.logger)
        }
    }

    @Test(
        "a search survives a server restart on PostgreSQL",
        .enabled(
            if: ProcessInfo.processInfo.environment["WEHE_TEST_POSTGRES_URL"].map { !$0.isEmpty } ?? false,
            "needs WEHE_TEST_POSTGRES_URL (scripts/with-postgres.sh)"))
    func restartPostgres() async throws {
        let url = try #require(ProcessInfo.processInfo.environment["WEHE_TEST_POSTGRES_URL"])
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The test database is shared between runs: a user of its own keeps this search apart.
        let user = "@pg" + String(UUID().uuidString.prefix(8)).replacingOccurrences(of: "-", with: "")
        try await Self.checkRestart(replays: directory, user: user) {
            try await SQLResultStore.open(
                configuration: SQLStoreConfiguration(
                    backend: .postgres(PostgresOptions(url: url, maximumConnections: 2))),
                logger: Self.logger)
        }
    }
}
