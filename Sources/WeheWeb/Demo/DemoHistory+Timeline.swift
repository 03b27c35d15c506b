package import Foundation
package import WeheStore

extension DemoHistory {
    /// A month of daily tests for the timeline, numbered from `firstHistoryCount`: YouTube on Orange, throttled for
    /// the last 12 days (before that not); Netflix on Free, throttled from 28 to 18 days ago and not since; both
    /// analysed for real, so some days come out inconclusive as real runs do.
    package mutating func timelineTests(firstHistoryCount: Int, now: Date, days: Int = 30) -> [TestRecord] {
        guard let youtube = Self.apps.first(where: { $0.id == "youtube" }),
            let netflix = Self.apps.first(where: { $0.id == "netflix" })
        else { return [] }
        func provider(_ name: String, capacity: Double, cap: (String, Double)?) -> Provider {
            Provider(
                name: name, capacity: capacity, caps: cap.map { [$0.0: $0.1] } ?? [:], blocked: [], weight: 1)
        }
        var records: [TestRecord] = []
        for age in stride(from: days, through: 1, by: -1) {
            let day = now.addingTimeInterval(-Double(age) * 86_400 + Double(age % 5) * 900)
            let orange = provider(
                "Orange (cellular)", capacity: 40, cap: age <= 12 ? (youtube.replay, 2.5) : nil)
            let free = provider(
                "Free (Wi-Fi)", capacity: 80, cap: (18...28).contains(age) ? (netflix.replay, 3) : nil)
            for (provider, app) in [(orange, youtube), (free, netflix)] {
                records.append(
                    test(
                        key: TestKey(userID: Self.personUserID, historyCount: firstHistoryCount + records.count),
                        provider: provider, app: app, startedAt: day))
            }
        }
        return records
    }
}
