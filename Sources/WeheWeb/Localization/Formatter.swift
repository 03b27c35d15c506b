package import Foundation
import WeheCore

/// Formats numbers and dates for one language and time zone without locale data (the same output on every
/// machine): `3.52` / `3,52`, `4 Mar 2026, 14:05` / `4 mars 2026, 14:05`.
package struct Formatter: Sendable {
    /// The language.
    package let language: Language
    /// The time zone of dates.
    package let timeZone: TimeZone
    private let calendar: Calendar

    /// Creates a formatter.
    package init(language: Language, timeZone: TimeZone) {
        self.language = language
        self.timeZone = timeZone
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    private static let englishMonths = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    private static let frenchMonths = [
        "janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.", "déc.",
    ]

    /// A number with `digits` decimals and the language's decimal separator; `–` for a non-finite value.
    package func number(_ value: Double, digits: Int = 2) -> String {
        guard value.isFinite else { return "–" }
        let text = String(format: "%.\(max(0, min(digits, 12)))f", value)
        return language == .french ? text.replacingOccurrences(of: ".", with: ",") : text
    }

    /// An integer with thousands separators (`12,345` / `12 345`).
    package func integer(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var groups: [Substring] = []
        var end = digits.endIndex
        while end > digits.startIndex {
            let start = digits.index(end, offsetBy: -3, limitedBy: digits.startIndex) ?? digits.startIndex
            groups.insert(digits[start..<end], at: 0)
            end = start
        }
        let separator = language == .french ? "\u{202F}" : ","
        return (value < 0 ? "-" : "") + groups.joined(separator: separator)
    }

    /// A p-value: fixed decimals down to 0.0001, scientific below (`3.2e-12`).
    package func pValue(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        if value == 0 || value >= 0.0001 { return number(value, digits: 4) }
        let text = String(format: "%.1e", value)
        return language == .french ? text.replacingOccurrences(of: ".", with: ",") : text
    }

    /// A percentage of a fraction (`0.42` → `42 %` in French, `42%` in English).
    package func percent(_ fraction: Double, digits: Int = 0) -> String {
        let value = number(fraction * 100, digits: digits)
        return language == .french ? value + "\u{202F}%" : value + "%"
    }

    /// Date and time (`4 Mar 2026, 14:05`).
    package func dateTime(_ date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        return day(parts) + ", " + String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    /// Date only (`4 Mar 2026`).
    package func date(_ date: Date) -> String {
        day(calendar.dateComponents([.year, .month, .day], from: date))
    }

    /// Short date for axis labels (`4 Mar`).
    package func shortDate(_ date: Date) -> String {
        let parts = calendar.dateComponents([.month, .day], from: date)
        let months = language == .french ? Self.frenchMonths : Self.englishMonths
        let month = months[max(0, min(11, (parts.month ?? 1) - 1))]
        return "\(parts.day ?? 1) \(month)"
    }

    /// `YYYY-MM-DD` in the formatter's time zone (form values, file names).
    package func isoDay(_ date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
    }

    /// ISO 8601 instant in UTC (exports).
    package static func isoInstant(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    private func day(_ parts: DateComponents) -> String {
        let months = language == .french ? Self.frenchMonths : Self.englishMonths
        let month = months[max(0, min(11, (parts.month ?? 1) - 1))]
        return "\(parts.day ?? 1) \(month) \(parts.year ?? 1970)"
    }

    /// Midnight starting the day `YYYY-MM-DD` in the formatter's time zone, or `nil` when malformed.
    package func parseDay(_ text: String) -> Date? {
        let fields = text.split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0].count == 4, fields[1].count == 2, fields[2].count == 2,
            fields.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let year = Int(fields[0]), let month = Int(fields[1]), let day = Int(fields[2]),
            (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        let components = DateComponents(year: year, month: month, day: day)
        guard let date = calendar.date(from: components),
            calendar.dateComponents([.year, .month, .day], from: date) == components
        else { return nil }
        return date
    }

    /// The start of the day after the one containing `date`.
    package func nextDay(after date: Date) -> Date {
        let start = calendar.startOfDay(for: date)
        return calendar.date(byAdding: .day, value: 1, to: start) ?? start.addingTimeInterval(86_400)
    }

    /// The start of the day containing `date`.
    package func startOfDay(_ date: Date) -> Date {
        calendar.startOfDay(for: date)
    }
}
