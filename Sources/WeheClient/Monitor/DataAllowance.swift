public import Foundation

/// Byte sizes as people write them: `1GB`, `500MB`, `250kB`, `1000` (bytes); decimal units (1 kB = 1000 bytes),
/// as network plans count.
public enum ByteSize {
    /// Parses a size; `1.5GB` is accepted.
    /// - Throws: `MonitorError.invalidSize` for anything else, a negative or an absurd size.
    public static func parse(_ text: String) throws(MonitorError) -> Int {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("GB", 1e9), ("MB", 1e6), ("KB", 1e3), ("B", 1)]
        var number = Substring(trimmed)
        var factor = 1.0
        for (suffix, value) in units where trimmed.uppercased().hasSuffix(suffix) {
            number = trimmed.dropLast(suffix.count)
            factor = value
            break
        }
        let digits = number.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(digits), value.isFinite, value >= 0, value * factor <= 1e15
        else { throw MonitorError.invalidSize(text) }
        return Int((value * factor).rounded())
    }

    /// `1.2 GB`, `350 MB`, `12 kB`, `800 B`: three significant figures at most.
    public static func text(_ bytes: Int) -> String {
        let value = Double(bytes)
        for (unit, factor) in [("GB", 1e9), ("MB", 1e6), ("kB", 1e3)] where value >= factor {
            let scaled = value / factor
            let shown = scaled >= 100 ? String(Int(scaled.rounded())) : String(format: "%.3g", scaled)
            return "\(shown) \(unit)"
        }
        return "\(bytes) B"
    }
}

/// What the monitor has used of its allowance in the current period, and its last runs: kept in the data directory
/// and changed only under its lock.
public struct MonitorLedger: Codable, Sendable, Hashable {
    /// Start of the period `usedBytes` counts (the first day of a calendar month).
    public var periodStart: Date?
    /// Bytes moved by scheduled runs since `periodStart`, as the results count them.
    public var usedBytes: Int
    /// The last runs, oldest first (at most `MonitorLedger.keptRuns`).
    public var runs: [MonitorRunRecord]
    /// When `wehe monitor run` plans its next run (`nil` when no foreground monitor has planned one).
    public var nextRun: Date?

    /// How many runs are kept.
    public static let keptRuns = 50

    /// An empty ledger.
    public init(periodStart: Date? = nil, usedBytes: Int = 0, runs: [MonitorRunRecord] = []) {
        self.periodStart = periodStart
        self.usedBytes = usedBytes
        self.runs = runs
    }

    /// Starts a new period when `now` is past the current one: the used bytes go back to 0.
    public mutating func roll(to now: Date, allowance: DataAllowance, calendar: Calendar) {
        let start = allowance.periodStart(containing: now, calendar: calendar)
        if periodStart != start {
            periodStart = start
            usedBytes = 0
        }
    }

    /// Records a run (its bytes counted against the allowance).
    public mutating func record(_ run: MonitorRunRecord) {
        usedBytes += run.bytes
        runs.append(run)
        if runs.count > Self.keptRuns { runs.removeFirst(runs.count - Self.keptRuns) }
    }

    /// The last conclusive monitored verdict of `test` on `provider` (differentiation or none; for change notices).
    public func lastVerdict(test: String, provider: String) -> MonitorRunRecord.Outcome? {
        let conclusive: Set = ["differentiation", "no-differentiation"]
        for run in runs.reversed() {
            if let outcome = run.outcomes.last(where: {
                $0.test == test && $0.provider == provider && conclusive.contains($0.verdict)
            }) {
                return outcome
            }
        }
        return nil
    }
}

/// One scheduled run: when, what it moved, and each test's verdict (or why nothing ran).
public struct MonitorRunRecord: Codable, Sendable, Hashable {
    /// One test's verdict in a run.
    public struct Outcome: Codable, Sendable, Hashable {
        public var test: String
        public var verdict: String
        /// The provider it was measured on (AS name, the name given, or "unknown").
        public var provider: String
        public var historyCount: Int
        public var bytes: Int
        /// The change this verdict was from the previous one on the same provider (`newly-throttled`, …), if any.
        public var change: String?

        public init(
            test: String, verdict: String, provider: String, historyCount: Int, bytes: Int, change: String? = nil
        ) {
            self.change = change
            self.test = test
            self.verdict = verdict
            self.provider = provider
            self.historyCount = historyCount
            self.bytes = bytes
        }
    }

    public var startedAt: Date
    /// Bytes moved (0 for a run refused or skipped).
    public var bytes: Int
    public var outcomes: [Outcome]
    /// Why it did not run or stopped (a guard, the allowance, an error); `nil` when every test ran.
    public var note: String?

    public init(startedAt: Date, bytes: Int, outcomes: [Outcome], note: String? = nil) {
        self.startedAt = startedAt
        self.bytes = bytes
        self.outcomes = outcomes
        self.note = note
    }
}

/// A monthly data allowance for scheduled tests, with a cap per run.
///
/// The period is the calendar month: the allowance renews on the first day of the next month (in `calendar`'s time
/// zone). A run is planned from each test's largest estimate (`TestCost.mostBytes`, the confirmation or the adaptive
/// cap included), so that a run that starts can never take more than what is left.
public struct DataAllowance: Sendable, Hashable {
    /// Bytes a month (default 1 GB).
    public var monthlyBytes: Int
    /// Bytes one run may plan at most (default 100 MB).
    public var perRunBytes: Int

    /// 1 GB.
    public static let defaultMonthlyBytes = 1_000_000_000
    /// 100 MB.
    public static let defaultPerRunBytes = 100_000_000

    public init(
        monthlyBytes: Int = DataAllowance.defaultMonthlyBytes, perRunBytes: Int = DataAllowance.defaultPerRunBytes
    ) {
        self.monthlyBytes = monthlyBytes
        self.perRunBytes = perRunBytes
    }

    /// The first moment of the month holding `date`.
    public func periodStart(containing date: Date, calendar: Calendar) -> Date {
        calendar.dateInterval(of: .month, for: date)?.start ?? calendar.startOfDay(for: date)
    }

    /// When the allowance of the period holding `date` renews: the first moment of the next month.
    public func renewal(after date: Date, calendar: Calendar) -> Date {
        calendar.dateInterval(of: .month, for: date)?.end ?? date.addingTimeInterval(30 * 86_400)
    }

    /// Bytes left in the period given what was used.
    public func left(used: Int) -> Int { max(0, monthlyBytes - used) }

    /// What a run may do: which of the candidate tests (in order) fit, each by its largest estimate, in the lesser of
    /// the per-run cap and what is left of the month.
    public func plan(_ candidates: [(id: String, cost: TestCost)], used: Int) -> AllowancePlan {
        let budget = min(perRunBytes, left(used: used))
        var chosen: [String] = []
        var planned = 0
        var skipped: [(id: String, bytes: Int)] = []
        for candidate in candidates {
            if planned + candidate.cost.mostBytes <= budget {
                chosen.append(candidate.id)
                planned += candidate.cost.mostBytes
            } else {
                skipped.append((candidate.id, candidate.cost.mostBytes))
            }
        }
        return AllowancePlan(
            tests: chosen, plannedBytes: planned, budgetBytes: budget, leftBytes: left(used: used),
            skipped: skipped.map(\.id), cheapestSkippedBytes: skipped.map(\.bytes).min())
    }
}

/// The tests a run may make within the allowance.
public struct AllowancePlan: Sendable, Hashable {
    /// The tests that fit, in order.
    public var tests: [String]
    /// Their largest estimates, summed.
    public var plannedBytes: Int
    /// What this run could spend: the lesser of the per-run cap and what is left.
    public var budgetBytes: Int
    /// What is left of the month.
    public var leftBytes: Int
    /// The tests left out because they did not fit.
    public var skipped: [String]
    /// The smallest estimate of a test left out.
    public var cheapestSkippedBytes: Int?
}
