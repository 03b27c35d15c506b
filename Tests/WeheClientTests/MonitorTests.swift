import Foundation
import Testing
import WeheClient
import WeheTestKit

/// A seeded random source, so that a schedule's draws repeat.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private var utc: Calendar {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar
}

private func date(_ text: String) -> Date {
    let formatter = ISO8601DateFormatter()
    return formatter.date(from: text)!
}

@Suite("wehe monitor: schedule, allowance, guards (injected clock and sources)")
struct MonitorTests {
    @Test("a year of scheduled runs: never more than the daily cap, never in quiet hours, about the mean rate")
    func scheduleOverAYear() throws {
        let schedule = MonitorSchedule(runsPerDay: 3, maximumPerDay: 4, quietHours: try QuietHours.parse("23-7"))
        var random = SplitMix(state: 42)
        var now = date("2026-01-01T00:00:00Z")
        var runs: [Date] = []
        let end = date("2027-01-01T00:00:00Z")
        while true {
            let next = schedule.next(after: now, previous: runs, calendar: utc, random: &random)
            #expect(next > now)
            if next >= end { break }
            runs.append(next)
            now = next
        }
        let perDay = Dictionary(grouping: runs) { utc.startOfDay(for: $0) }.mapValues(\.count)
        #expect(perDay.values.max() ?? 0 <= 4)
        #expect(runs.allSatisfy { !(utc.component(.hour, from: $0) >= 23 || utc.component(.hour, from: $0) < 7) })
        // Three a day over the 16 hours that are not quiet: about 3 × 16/24 × 365 = 730, a little fewer by the cap.
        #expect((600...760).contains(runs.count), "\(runs.count) runs")
        // Random times: the runs do not share one minute of the day.
        let minutes = Set(runs.map { utc.component(.hour, from: $0) * 60 + utc.component(.minute, from: $0) })
        #expect(minutes.count > 300)
    }

    @Test("a day that holds the cap moves the next run to the next day; quiet hours refuse a run now")
    func capAndQuietHours() throws {
        let quiet = try #require(try QuietHours.parse("23-7"))
        let schedule = MonitorSchedule(runsPerDay: 1000, maximumPerDay: 4, quietHours: quiet)
        let morning = date("2026-03-10T08:00:00Z")
        let four = (0..<4).map { morning.addingTimeInterval(Double($0) * 60) }
        var random = SplitMix(state: 7)
        let next = schedule.next(after: four.last!, previous: four, calendar: utc, random: &random)
        #expect(next >= date("2026-03-11T07:00:00Z"))
        #expect(!schedule.allows(morning.addingTimeInterval(3600), previous: four, calendar: utc))
        #expect(schedule.allows(morning.addingTimeInterval(3600), previous: [], calendar: utc))
        #expect(!schedule.allows(date("2026-03-10T23:30:00Z"), previous: [], calendar: utc))
        #expect(!schedule.allows(date("2026-03-10T06:59:00Z"), previous: [], calendar: utc))
        #expect(QuietHours(start: 1, end: 5).contains(hour: 3) && !QuietHours(start: 1, end: 5).contains(hour: 5))
        #expect(throws: MonitorError.self) { try QuietHours.parse("25-7") }
        #expect(throws: MonitorError.self) { try QuietHours.parse("night") }
        #expect(try QuietHours.parse("none") == nil)
    }

    @Test("sizes: decimal kB/MB/GB, bytes, and clear refusals")
    func sizes() throws {
        #expect(try ByteSize.parse("1GB") == 1_000_000_000)
        #expect(try ByteSize.parse("1.5 GB") == 1_500_000_000)
        #expect(try ByteSize.parse("500MB") == 500_000_000)
        #expect(try ByteSize.parse("250kB") == 250_000)
        #expect(try ByteSize.parse("1000") == 1000)
        for bad in ["", "GB", "-1GB", "1TB", "one GB", "1e3MB"] {
            #expect(throws: MonitorError.self, "\(bad)") { try ByteSize.parse(bad) }
        }
        #expect(ByteSize.text(1_200_000_000) == "1.2 GB")
        #expect(ByteSize.text(800) == "800 B")
    }

    @Test("the allowance: tests planned by their largest estimate within the per-run cap and what is left")
    func allowancePlan() {
        let allowance = DataAllowance(monthlyBytes: 10_000_000, perRunBytes: 6_000_000)
        func cost(_ most: Int) -> TestCost { TestCost(bytes: most / 2, seconds: 1, mostBytes: most, mostSeconds: 2) }
        let candidates = [("a", cost(4_000_000)), ("b", cost(3_000_000)), ("c", cost(1_000_000))].map {
            (id: $0.0, cost: $0.1)
        }
        let fresh = allowance.plan(candidates, used: 0)
        #expect(fresh.tests == ["a", "c"])
        #expect(fresh.plannedBytes == 5_000_000 && fresh.budgetBytes == 6_000_000)
        let late = allowance.plan(candidates, used: 8_500_000)
        #expect(late.tests == ["c"] && late.leftBytes == 1_500_000)
        let spent = allowance.plan(candidates, used: 10_000_000)
        #expect(spent.tests.isEmpty && spent.leftBytes == 0 && spent.cheapestSkippedBytes == 1_000_000)
    }

    @Test("the ledger counts bytes moved, renews on the first of the month, and keeps the last conclusive verdict")
    func ledger() {
        let allowance = DataAllowance()
        var ledger = MonitorLedger()
        let march = date("2026-03-31T22:00:00Z")
        ledger.roll(to: march, allowance: allowance, calendar: utc)
        ledger.record(
            MonitorRunRecord(
                startedAt: march, bytes: 1234,
                outcomes: [
                    .init(test: "tinyweb", verdict: "no-differentiation", provider: "AS1", historyCount: 1, bytes: 1234)
                ]))
        ledger.record(
            MonitorRunRecord(
                startedAt: march, bytes: 10,
                outcomes: [.init(test: "tinyweb", verdict: "inconclusive", provider: "AS1", historyCount: 2, bytes: 10)]
            ))
        #expect(ledger.usedBytes == 1244)
        #expect(ledger.lastVerdict(test: "tinyweb", provider: "AS1")?.verdict == "no-differentiation")
        #expect(ledger.lastVerdict(test: "tinyweb", provider: "AS2") == nil)
        #expect(allowance.renewal(after: march, calendar: utc) == date("2026-04-01T00:00:00Z"))
        ledger.roll(to: march.addingTimeInterval(3600), allowance: allowance, calendar: utc)
        #expect(ledger.usedBytes == 1244)
        ledger.roll(to: date("2026-04-01T00:00:01Z"), allowance: allowance, calendar: utc)
        #expect(ledger.usedBytes == 0 && ledger.runs.count == 2)
    }

    @Test("guards: metered from nmcli's output, a low battery not charging, quiet hours")
    func guards() throws {
        let nmcli = """
            GENERAL.DEVICE:wlp2s0
            GENERAL.STATE:100 (connected)
            GENERAL.METERED:yes (guessed)

            GENERAL.DEVICE:lo
            GENERAL.STATE:100 (connected (externally))
            GENERAL.METERED:no
            """
        #expect(MeteredState.parseNetworkManager(nmcli) == .metered("wlp2s0"))
        let disconnected = nmcli.replacingOccurrences(
            of: "100 (connected)\nGENERAL.METERED:yes", with: "30 (disconnected)\nGENERAL.METERED:yes")
        #expect(MeteredState.parseNetworkManager(disconnected) == .notMetered)
        #expect(MeteredState.parseNetworkManager("") == .unknown("NetworkManager reported no device"))

        let root = TestResources.temporaryDirectory("wehe-power")
        defer { try? FileManager.default.removeItem(atPath: root) }
        func supply(_ name: String, type: String, capacity: String?, status: String?) throws {
            try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true)
            #expect(TestResources.write(type + "\n", to: root + "/\(name)/type"))
            if let capacity { #expect(TestResources.write(capacity + "\n", to: root + "/\(name)/capacity")) }
            if let status { #expect(TestResources.write(status + "\n", to: root + "/\(name)/status")) }
        }
        try supply("AC", type: "Mains", capacity: nil, status: nil)
        try supply("BAT0", type: "Battery", capacity: "15", status: "Discharging")
        let batteries = BatteryState.read(root: root)
        #expect(batteries == [BatteryState(name: "BAT0", percent: 15, onMains: false)])

        let guards = MonitorGuards(allowMetered: false, quietHours: try QuietHours.parse("23-7"))
        let noon = date("2026-05-01T12:00:00Z")
        let bad = guards.check(now: noon, calendar: utc, metered: .metered("wlp2s0"), batteries: batteries)
        #expect(bad.blocked.count == 2 && !bad.mayRun)
        let charging = [BatteryState(name: "BAT0", percent: 15, onMains: true)]
        let fine = guards.check(now: noon, calendar: utc, metered: .unknown("no nmcli"), batteries: charging)
        #expect(fine.mayRun)
        #expect(fine.states["metered"]?.contains("unknown") == true)
        let night = guards.check(now: date("2026-05-01T23:10:00Z"), calendar: utc, metered: .notMetered, batteries: [])
        #expect(night.blocked == ["quiet hours 23-7"])
        var allowing = guards
        allowing.allowMetered = true
        #expect(allowing.check(now: noon, calendar: utc, metered: .metered("wwan0"), batteries: []).mayRun)
        #expect(BatteryState.read(root: root + "/missing").isEmpty)
    }

    @Test("verdict changes: newly throttled, no longer, and no change on an inconclusive run")
    func changes() {
        #expect(
            VerdictChange.between(previous: "no-differentiation", current: "differentiation", test: "t", provider: "p")?
                .kind == .newlyThrottled)
        #expect(
            VerdictChange.between(previous: "differentiation", current: "no-differentiation", test: "t", provider: "p")?
                .kind == .noLongerThrottled)
        #expect(
            VerdictChange.between(previous: "differentiation", current: "inconclusive", test: "t", provider: "p") == nil
        )
        #expect(VerdictChange.between(previous: nil, current: "differentiation", test: "t", provider: "p") == nil)
    }
}
