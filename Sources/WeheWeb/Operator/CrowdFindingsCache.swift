import Foundation
import WeheAnalysis

/// Crowd-analysis findings computed for an operator selection, kept for a while: the analysis reads every
/// test's samples, too slow to repeat on each page view.
actor CrowdFindingsCache {
    /// Findings of one selection.
    struct Entry: Sendable {
        var computedAt: Date
        var tests: Int
        var reports: [CrowdGroupReport]
    }

    private var entries: [OperatorFilter: Entry] = [:]
    private let capacity = 64

    /// The entry for a selection if computed less than `maximumAge` seconds before `now`.
    func entry(for filter: OperatorFilter, now: Date, maximumAge: Double) -> Entry? {
        guard let entry = entries[filter], now.timeIntervalSince(entry.computedAt) <= maximumAge,
            now >= entry.computedAt
        else { return nil }
        return entry
    }

    /// Keeps an entry, dropping the oldest when full.
    func store(_ entry: Entry, for filter: OperatorFilter) {
        if entries.count >= capacity, entries[filter] == nil,
            let oldest = entries.min(by: { $0.value.computedAt < $1.value.computedAt })?.key
        {
            entries[oldest] = nil
        }
        entries[filter] = entry
    }
}
