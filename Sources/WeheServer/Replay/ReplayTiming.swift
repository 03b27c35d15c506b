/// The timing record of one TCP replay, per request group (the lateness report):
/// - request-arrival lateness: when the group's last request byte arrived, versus `replayStart + requestTime` from
///   the client trace, with the replay start placed as early as the arrivals allow (the earliest group is on time,
///   so every value is ≥ 0 and measures how far the arrivals stray behind the recorded schedule);
/// - response lateness: when the server began the group's response burst, versus the same scheduled instant (the
///   recorded server answered right after the request);
/// - reaction: response start minus request completion (the server's own delay).
package struct ReplayTiming: Sendable {
    /// One request group's timing, seconds.
    package struct Group: Sendable {
        /// Request-arrival lateness.
        package var requestLateness: Double
        /// Response lateness (groups with a response).
        package var responseLateness: Double?
        /// Server reaction time (groups with a response).
        package var reaction: Double?
        /// Creates a record.
        package init(requestLateness: Double, responseLateness: Double? = nil, reaction: Double? = nil) {
            self.requestLateness = requestLateness
            self.responseLateness = responseLateness
            self.reaction = reaction
        }
    }

    /// Per request group, in order.
    package var groups: [Group] = []

    /// An empty record.
    package init() {}

    /// Moves the origin so that the group that arrived earliest relative to its schedule is exactly on time.
    package mutating func alignToEarliestGroup() {
        guard let shift = groups.map(\.requestLateness).min() else { return }
        for index in groups.indices {
            groups[index].requestLateness -= shift
            if let response = groups[index].responseLateness { groups[index].responseLateness = response - shift }
        }
    }

    /// A number with three decimals.
    static func fixed(_ value: Double) -> String {
        guard value.isFinite else { return "\(value)" }
        let scaled = (value * 1000).rounded()
        return "\(scaled / 1000)"
    }

    /// Median, 99th percentile and maximum of a list, in milliseconds.
    package static func summary(_ values: [Double]) -> (median: Double, p99: Double, max: Double)? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func quantile(_ q: Double) -> Double {
            let position = q * Double(sorted.count - 1)
            let low = Int(position.rounded(.down))
            let high = min(low + 1, sorted.count - 1)
            return sorted[low] + (sorted[high] - sorted[low]) * (position - Double(low))
        }
        return (quantile(0.5) * 1000, quantile(0.99) * 1000, (sorted.last ?? 0) * 1000)
    }

    /// One line for the log and the session log: counts and median/p99/max per measure, then every group.
    package var detail: String {
        func text(_ name: String, _ values: [Double]) -> String {
            guard let s = Self.summary(values) else { return "\(name) n/a" }
            return "\(name) ms median \(Self.fixed(s.median)) p99 \(Self.fixed(s.p99)) max \(Self.fixed(s.max))"
        }
        let perGroup = groups.enumerated().map { index, group in
            var item = "g\(index + 1) req \(Self.fixed(group.requestLateness * 1000))"
            if let response = group.responseLateness { item += " resp \(Self.fixed(response * 1000))" }
            return item
        }
        return "groups \(groups.count); " + text("request lateness", groups.map(\.requestLateness)) + "; "
            + text("response lateness", groups.compactMap(\.responseLateness)) + "; "
            + text("reaction", groups.compactMap(\.reaction)) + "; per group (ms): " + perGroup.joined(separator: ", ")
    }
}
