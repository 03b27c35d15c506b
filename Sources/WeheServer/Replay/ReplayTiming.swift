/// The timing record of one TCP replay, per request group (the lateness report):
/// - request-arrival lateness: when the group's last request byte arrived, versus `replayStart + requestTime` from
///   the client trace (the replay start is placed so that the first payload arrived on schedule);
/// - response lateness: when the server began the group's response burst, versus the same scheduled instant (the
///   recorded server answered right after the request);
/// - reaction: response start minus request completion (the server's own delay).
struct ReplayTiming: Sendable {
    struct Group: Sendable {
        var requestLateness: Double
        var responseLateness: Double?
        var reaction: Double?
    }

    var groups: [Group] = []

    /// A number with three decimals.
    static func fixed(_ value: Double) -> String {
        guard value.isFinite else { return "\(value)" }
        let scaled = (value * 1000).rounded()
        return "\(scaled / 1000)"
    }

    /// Median, 99th percentile and maximum of a list, in milliseconds.
    static func summary(_ values: [Double]) -> (median: Double, p99: Double, max: Double)? {
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
    var detail: String {
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
