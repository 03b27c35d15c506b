public import Foundation

/// Hours of the day in which the monitor starts no test (`23-7`: from 23:00 to 07:00 local time).
public struct QuietHours: Sendable, Hashable, CustomStringConvertible {
    /// First quiet hour (0-23).
    public var start: Int
    /// First hour that is no longer quiet (0-23); equal to `start` means no quiet hours.
    public var end: Int

    /// Creates quiet hours from `start` up to (not including) `end`.
    public init(start: Int, end: Int) {
        self.start = start
        self.end = end
    }

    /// Parses `23-7` (hours 0-23); `none` gives `nil`.
    /// - Throws: `MonitorError.invalidQuietHours` for anything else.
    public static func parse(_ text: String) throws(MonitorError) -> QuietHours? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty || trimmed == "none" { return nil }
        let parts = trimmed.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Int(parts[0]), let end = Int(parts[1]), (0...23).contains(start),
            (0...23).contains(end), start != end
        else { throw MonitorError.invalidQuietHours(text) }
        return QuietHours(start: start, end: end)
    }

    /// Whether `hour` (0-23) is quiet.
    public func contains(hour: Int) -> Bool {
        start < end ? (start..<end).contains(hour) : hour >= start || hour < end
    }

    /// Whether `date` falls in the quiet hours of `calendar`'s time zone.
    public func contains(_ date: Date, calendar: Calendar) -> Bool {
        contains(hour: calendar.component(.hour, from: date))
    }

    /// The first moment after `date` that is no longer quiet (`date` itself when it is not quiet).
    public func end(after date: Date, calendar: Calendar) -> Date {
        guard contains(date, calendar: calendar) else { return date }
        let next =
            calendar.nextDate(
                after: date, matching: DateComponents(hour: end, minute: 0, second: 0), matchingPolicy: .nextTime)
            ?? date.addingTimeInterval(3600)
        return next
    }

    public var description: String { "\(start)-\(end)" }
}

/// When the monitor runs next: a Poisson process (exponential gaps with mean `86400 / runsPerDay` seconds) over the
/// hours that are not quiet, with at most `maximumPerDay` runs in one calendar day, so that runs fall at random times
/// (M-Lab asks integrations for at most 4 runs a day at random times) and never on a fixed clock tick that would
/// make every monitor on the fleet test at once.
///
/// The clock (`now`), the calendar (its time zone says what a day and an hour are) and the random source are given,
/// so that tests drive it without waiting.
public struct MonitorSchedule: Sendable, Hashable {
    /// Mean number of runs a day before the cap (default 3: the cap of 4 is seldom reached).
    public var runsPerDay: Double
    /// Hard cap on the runs started in one calendar day.
    public var maximumPerDay: Int
    /// Hours with no run.
    public var quietHours: QuietHours?

    /// Creates a schedule.
    public init(runsPerDay: Double = 3, maximumPerDay: Int = 4, quietHours: QuietHours? = nil) {
        self.runsPerDay = runsPerDay
        self.maximumPerDay = maximumPerDay
        self.quietHours = quietHours
    }

    /// Mean gap between two runs, seconds.
    public var meanGapSeconds: Double { 86_400 / max(runsPerDay, 0.01) }

    /// The time of the next run after `now`, given the times of the runs already made (`previous`, any order).
    ///
    /// A gap is drawn from the exponential distribution; a time that falls in quiet hours moves the draw's start to
    /// the end of the quiet hours and draws again (the process is memoryless, so this is a Poisson process over the
    /// time that is not quiet); a day that already holds `maximumPerDay` runs moves it to the next day's start.
    public func next<R: RandomNumberGenerator>(
        after now: Date, previous: [Date], calendar: Calendar, random: inout R
    ) -> Date {
        var cursor = now
        // Each step moves the cursor forward; a few hundred are far more than any real draw needs.
        for _ in 0..<1000 {
            let uniform = Double.random(in: Double.ulpOfOne..<1, using: &random)
            let candidate = cursor.addingTimeInterval(-log(uniform) * meanGapSeconds)
            if let quietHours, quietHours.contains(candidate, calendar: calendar) {
                cursor = quietHours.end(after: candidate, calendar: calendar)
                continue
            }
            let day = calendar.startOfDay(for: candidate)
            let sameDay = previous.filter { calendar.startOfDay(for: $0) == day }.count
            if sameDay >= maximumPerDay {
                cursor = calendar.date(byAdding: .day, value: 1, to: day) ?? candidate.addingTimeInterval(86_400)
                continue
            }
            return candidate
        }
        return cursor
    }

    /// Whether a run may start at `now` given the previous runs: not in quiet hours and under the day's cap.
    public func allows(_ now: Date, previous: [Date], calendar: Calendar) -> Bool {
        if let quietHours, quietHours.contains(now, calendar: calendar) { return false }
        let day = calendar.startOfDay(for: now)
        return previous.filter { calendar.startOfDay(for: $0) == day }.count < maximumPerDay
    }
}

/// What the monitor's parsing and planning refuse.
public enum MonitorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Quiet hours not of the form `23-7`.
    case invalidQuietHours(String)
    /// A size not of the form `1GB`, `500MB`, `250kB` or a number of bytes.
    case invalidSize(String)

    public var description: String {
        switch self {
        case .invalidQuietHours(let text):
            return "quiet hours must be two hours 0-23 such as 23-7 (or 'none'), not '\(text)'"
        case .invalidSize(let text):
            return "a size is a number with kB, MB or GB (decimal: 1GB = 1000000000 bytes), not '\(text)'"
        }
    }
}
