package import Foundation

/// The operator page's selection: a day range (inclusive, in the dashboard's time zone) and optional providers
/// and apps (original replay names). Parsed strictly: a malformed value is a 400, not a silent default.
package struct OperatorFilter: Sendable, Hashable {
    /// First day, `YYYY-MM-DD`.
    package var fromDay: String
    /// Last day (inclusive), `YYYY-MM-DD`.
    package var toDay: String
    /// Start of `fromDay`.
    package var from: Date
    /// Start of the day after `toDay` (exclusive bound).
    package var to: Date
    /// Selected providers (empty: all).
    package var providers: [String]
    /// Selected apps as replay names (empty: all).
    package var apps: [String]

    /// Reads `from`, `to`, `provider` (repeatable) and `app` (repeatable).
    /// - Throws: `WeheWebError` `.invalidParameter` naming the bad parameter.
    static func parse(
        _ info: RequestInfo, now: Date, formatter: Formatter, defaultDays: Int, maximumDays: Int
    ) throws(WeheWebError) -> OperatorFilter {
        let today = formatter.startOfDay(now)
        func day(_ name: String) throws(WeheWebError) -> Date? {
            guard let text = info.value(name), !text.isEmpty else { return nil }
            guard let date = formatter.parseDay(text) else {
                throw WeheWebError(.invalidParameter, "'\(name)' must be a date written YYYY-MM-DD")
            }
            return date
        }
        let last = try day("to") ?? today
        let first =
            try day("from") ?? Calendar.gregorian(formatter.timeZone).date(
                byAdding: .day, value: -(defaultDays - 1), to: last) ?? last
        guard first <= last else {
            throw WeheWebError(.invalidParameter, "'from' must not be after 'to'")
        }
        let end = formatter.nextDay(after: last)
        guard end.timeIntervalSince(first) <= Double(maximumDays) * 86_400 + 3_600 else {
            throw WeheWebError(.invalidParameter, "the date range may span at most \(maximumDays) days")
        }
        func names(_ name: String) throws(WeheWebError) -> [String] {
            let values = info.values(name)
            guard values.count <= 100 else {
                throw WeheWebError(.invalidParameter, "at most 100 values of '\(name)' are accepted")
            }
            for value in values
            where value.count > 200 || value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                throw WeheWebError(.invalidParameter, "a '\(name)' value is too long or holds control characters")
            }
            return Array(Set(values)).sorted()
        }
        return OperatorFilter(
            fromDay: formatter.isoDay(first), toDay: formatter.isoDay(last), from: first, to: end,
            providers: try names("provider"), apps: try names("app"))
    }

    /// The filter as query items (for links and downloads).
    var queryItems: [(name: String, value: String)] {
        [("from", fromDay), ("to", toDay)] + providers.map { ("provider", $0) } + apps.map { ("app", $0) }
    }

    /// Whether a provider/app pair is selected.
    func includes(provider: String?, app: String?) -> Bool {
        (providers.isEmpty || provider.map(providers.contains) == true)
            && (apps.isEmpty || app.map(apps.contains) == true)
    }
}

extension Calendar {
    /// A Gregorian calendar in a time zone.
    static func gregorian(_ timeZone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }
}
