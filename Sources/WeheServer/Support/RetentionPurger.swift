package import Foundation
package import Logging
import ServiceLifecycle
package import WeheStore

/// Retention for a running server (`serve --retention-days`): deletes what is older than `days` from the store
/// (`ResultStore.purge(before:)`), at start and then every `interval`, until the server shuts down. A failed purge is
/// logged and tried again at the next interval; it never stops the server.
package struct RetentionPurger: Service {
    let store: any ResultStore
    let days: Int
    let interval: Duration
    let logger: Logger
    let now: @Sendable () -> Date

    /// Creates the purger.
    package init(
        store: any ResultStore, days: Int, interval: Duration = .seconds(3600), logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.days = days
        self.interval = interval
        self.logger = logger
        self.now = now
    }

    /// The instant `days` days before `now`.
    package static func cutoff(days: Int, now: Date) -> Date { now.addingTimeInterval(-Double(days) * 86_400) }

    /// Purges once; returns what was deleted, `nil` when the purge failed (logged).
    @discardableResult
    package func purgeOnce() async -> PurgeCounts? {
        let cutoff = Self.cutoff(days: days, now: now())
        do {
            let counts = try await store.purge(before: cutoff)
            if !counts.isEmpty {
                logger.notice(
                    "retention: purged old results",
                    metadata: ["wehe.retention.days": "\(days)", "wehe.retention.deleted": "\(counts)"])
            }
            return counts
        } catch {
            logger.warning(
                "retention: purge failed", metadata: ["wehe.retention.days": "\(days)", "wehe.error": "\(error)"])
            return nil
        }
    }

    /// Purges at start and every `interval` until graceful shutdown or cancellation.
    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await purgeOnce()
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }
}
