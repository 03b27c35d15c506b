package import Foundation
internal import SQLKit
package import WeheStore

extension SQLResultStore {
    /// See `ResultStore.purge(before:)`. One write transaction: each table's old rows are counted, then deleted
    /// (analyses and replays explicitly before their tests, so the counts do not depend on cascading deletes).
    package func purge(before cutoff: Date) async throws(WeheStoreError) -> PurgeCounts {
        let time = cutoff.storeMicroseconds
        return try await write { database in
            let oldTests: SQLQueryString = "SELECT id FROM wehe_tests WHERE started_at < \(bind: time)"
            func count(_ sql: SQLQueryString) async throws -> Int {
                try await database.raw(sql).first()?.decode(column: "n", as: Int.self) ?? 0
            }
            var counts = PurgeCounts()
            counts.analyses = try await count(
                "SELECT COUNT(*) AS n FROM wehe_analyses WHERE test_id IN (\(oldTests))")
            counts.replays = try await count("SELECT COUNT(*) AS n FROM wehe_replays WHERE test_id IN (\(oldTests))")
            counts.tests = try await count("SELECT COUNT(*) AS n FROM wehe_tests WHERE started_at < \(bind: time)")
            counts.localizations = try await count(
                "SELECT COUNT(*) AS n FROM wehe_localizations WHERE requested_at < \(bind: time)")
            counts.losses = try await count(
                "SELECT COUNT(*) AS n FROM wehe_replay_losses WHERE recorded_at < \(bind: time)")
            counts.events = try await count("SELECT COUNT(*) AS n FROM wehe_session_events WHERE at < \(bind: time)")
            counts.dpiSearches = try await count(
                "SELECT COUNT(*) AS n FROM wehe_dpi_searches WHERE updated_at < \(bind: time)")
            counts.dpiResults = try await count(
                "SELECT COUNT(*) AS n FROM wehe_dpi_results WHERE finished_at < \(bind: time)")
            try await database.raw("DELETE FROM wehe_analyses WHERE test_id IN (\(oldTests))").run()
            try await database.raw("DELETE FROM wehe_replays WHERE test_id IN (\(oldTests))").run()
            try await database.raw("DELETE FROM wehe_tests WHERE started_at < \(bind: time)").run()
            try await database.raw("DELETE FROM wehe_localizations WHERE requested_at < \(bind: time)").run()
            try await database.raw("DELETE FROM wehe_replay_losses WHERE recorded_at < \(bind: time)").run()
            try await database.raw("DELETE FROM wehe_session_events WHERE at < \(bind: time)").run()
            try await database.raw("DELETE FROM wehe_dpi_searches WHERE updated_at < \(bind: time)").run()
            try await database.raw("DELETE FROM wehe_dpi_results WHERE finished_at < \(bind: time)").run()
            return counts
        }
    }
}
