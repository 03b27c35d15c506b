import Foundation

/// The timeline's filters, read from the query and checked: the period (`from`, `to`, `YYYY-MM-DD`, at most
/// `maximumDays` days), a provider and an app (names of at most `maximumNameLength` printable characters).
struct TimelineQuery: Sendable, Hashable {
    /// The longest period a request may ask for, in days.
    static let maximumDays = 366
    /// The period shown when none is asked for, in days (ending today).
    static let defaultDays = 90
    /// At most this many runs go into one timeline (the newest of the period are kept).
    static let maximumRuns = 5_000
    /// At most this many history entries are read to find them.
    static let maximumScanned = 20_000
    /// The longest provider or app name accepted.
    static let maximumNameLength = 128

    /// The first day's midnight.
    var from: Date
    /// The last day's midnight (the day is included).
    var to: Date
    /// Only this provider (`nil`: all).
    var provider: String?
    /// Only this app, by display name (`nil`: all).
    var app: String?

    /// Reads and checks the query of a request; `now` gives the default period.
    /// - Throws: `WeheWebError` `.invalidParameter` naming the parameter that is wrong.
    static func parse(_ info: RequestInfo, now: Date, formatter: Formatter? = nil) throws(WeheWebError)
        -> TimelineQuery
    {
        let formatter = formatter ?? info.formatter
        func day(_ name: String) throws(WeheWebError) -> Date? {
            guard let text = info.value(name), !text.isEmpty else { return nil }
            guard let date = formatter.parseDay(text) else {
                throw WeheWebError(.invalidParameter, "'\(name)' must be a date written YYYY-MM-DD")
            }
            return date
        }
        func name(_ parameter: String) throws(WeheWebError) -> String? {
            guard let text = info.value(parameter), !text.isEmpty else { return nil }
            guard text.count <= maximumNameLength,
                text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value) })
            else {
                throw WeheWebError(
                    .invalidParameter,
                    "'\(parameter)' must be a name of at most \(maximumNameLength) printable characters")
            }
            return text
        }
        let today = formatter.startOfDay(now)
        let to = try day("to") ?? today
        let from = try day("from") ?? Self.day(before: to, count: defaultDays - 1, formatter: formatter)
        guard from <= to else { throw WeheWebError(.invalidParameter, "'from' must not be after 'to'") }
        let span = Self.days(from: from, to: to, formatter: formatter, limit: maximumDays + 1).count
        guard span <= maximumDays else {
            throw WeheWebError(.invalidParameter, "the period may span at most \(maximumDays) days")
        }
        return TimelineQuery(from: from, to: to, provider: try name("provider"), app: try name("app"))
    }

    /// The day `count` days before `day`.
    static func day(before day: Date, count: Int, formatter: Formatter) -> Date {
        formatter.startOfDay(day.addingTimeInterval(-Double(count) * 86_400 + 3 * 3_600))
    }

    /// Every day from `from` to `to` (both included) as `YYYY-MM-DD`, at most `limit`.
    static func days(from: Date, to: Date, formatter: Formatter, limit: Int) -> [String] {
        var days: [String] = []
        var day = from
        while day <= to, days.count < limit {
            days.append(formatter.isoDay(day))
            day = formatter.nextDay(after: day)
        }
        return days
    }

    /// The period's days.
    func days(formatter: Formatter) -> [String] {
        Self.days(from: from, to: to, formatter: formatter, limit: Self.maximumDays)
    }

    /// The query items of these filters (for links to the print page and the JSON).
    func items(formatter: Formatter) -> [(name: String, value: String)] {
        var items: [(name: String, value: String)] = [
            ("from", formatter.isoDay(from)), ("to", formatter.isoDay(to)),
        ]
        if let provider { items.append(("provider", provider)) }
        if let app { items.append(("app", app)) }
        return items
    }
}
