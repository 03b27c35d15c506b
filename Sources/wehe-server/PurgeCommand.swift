import ArgumentParser
import Foundation
import WeheServer
import WeheStore
import WeheStoreSQL

extension DBCommand {
    /// `db purge --older-than <days>`: deletes tests (samples, analyses), localization runs, loss timelines,
    /// session-log entries and DPI searches older than the given number of days, in one transaction.
    struct Purge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Delete results, samples, loss timelines, session events and DPI searches older than a number of days."
        )

        @OptionGroup var store: StoreOptions

        @Option(name: .long, help: "Delete what is older than this many days (at least 1).")
        var olderThan: Int

        func validate() throws {
            guard olderThan >= 1 else { throw ValidationError("--older-than must be at least 1 (days)") }
        }

        func run() async throws {
            let cutoff = RetentionPurger.cutoff(days: olderThan, now: Date())
            let store = try await DBCommand.open(self.store, schemaMode: .verify, createIfMissing: false)
            let counts: PurgeCounts
            do {
                counts = try await store.purge(before: cutoff)
            } catch {
                await store.close()
                throw DBCommand.fail(error)
            }
            await store.close()
            print(
                "database \(store.databaseName): purged what was older than \(olderThan) days (before "
                    + "\(ISO8601DateFormatter().string(from: cutoff))): \(counts)")
        }
    }
}
