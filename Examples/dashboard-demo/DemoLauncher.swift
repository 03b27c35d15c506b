import Foundation
import WeheCore
import WeheStore
import WeheWeb

/// Simulates tests started from the browser: reports phases and samples over a few seconds, then stores a
/// generated result in the demo store.
actor DemoLauncher: TestLauncher {
    private let store: any ResultStore
    private var nextHistoryCount: Int
    private var generator = DemoHistory(seed: 99)
    /// The demo asks for consent once, in the browser, as `wehe dashboard` does before the first test.
    private var consentGiven = false

    init(store: any ResultStore, nextHistoryCount: Int) {
        self.store = store
        self.nextHistoryCount = nextHistoryCount
    }

    nonisolated func availableTests() async throws -> [LaunchableTest] {
        DemoHistory.apps.map {
            LaunchableTest(
                id: $0.id, name: $0.name,
                category: $0.category.rawValue.lowercased().replacingOccurrences(of: "_", with: " "),
                durationSeconds: $0.seconds,
                sizeMB: $0.isPort ? 10 : ($0.seconds * 6).rounded())
        }
    }

    func consentRequest() async throws -> ConsentRequest? {
        consentGiven
            ? nil
            : ConsentRequest(
                title: "Before you run a test",
                text:
                    "This demo only pretends to test: no traffic leaves this computer.\n\nA real Wehe test sends the recorded traffic of an app and a disguised copy to a Wehe server, and stores the speeds and your provider's name with an anonymous id."
            )
    }

    func acceptConsent() async throws {
        consentGiven = true
    }

    func runTest(id: String, progress: @escaping @Sendable (TestProgressEvent) -> Void) async throws -> TestKey {
        guard let app = DemoHistory.apps.first(where: { $0.id == id }),
            let provider = DemoHistory.providers.first(where: { $0.name == "Orange (cellular)" })
        else { throw DemoError(message: "unknown test \(id)") }
        let key = TestKey(userID: DemoHistory.personUserID, historyCount: nextHistoryCount)
        nextHistoryCount += 1
        let record = generator.test(key: key, provider: provider, app: app, startedAt: Date())
        let clock = ContinuousClock()
        progress(.phase(.connecting))
        progress(.message("Connecting to the Wehe server replay-1.example.net"))
        try await clock.sleep(for: .milliseconds(400))
        // As the client does, a first result other than "no differentiation" runs the test again to confirm it: the
        // replays start again from time 0 (the live chart shows the break between the two runs).
        let confirm = record.mainAnalysis.map { $0.summary.verdict != .noDifferentiation } ?? false
        for run in 0..<(confirm ? 2 : 1) {
            if run == 1 { progress(.message("Running \(app.name) again to confirm the first result")) }
            for (role, phase) in [(ReplayRole.original, TestPhase.original), (.control, .control)] {
                progress(.phase(phase))
                guard let samples = record.replay(role.rawValue)?.samples else { continue }
                progress(.message("Replaying \(app.name) (\(role == .original ? "original" : "control"))"))
                for index in 0..<samples.count where index % 2 == 0 {
                    progress(.sample(role, seconds: samples.times[index], mbps: samples.mbps[index]))
                    let done = Double(role.rawValue) * 0.45 + 0.45 * Double(index) / Double(samples.count)
                    progress(.fraction((0.05 + done) * Double(run + 1) / Double(confirm ? 2 : 1)))
                    try await clock.sleep(for: .milliseconds(confirm ? 20 : 40))
                }
            }
        }
        progress(.phase(.analysing))
        try await clock.sleep(for: .milliseconds(300))
        progress(.phase(.saving))
        try await store.save(test: record)
        progress(.fraction(1))
        return key
    }
}

/// A demo failure.
struct DemoError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Fixed health figures.
struct DemoHealth: ServerHealthSource {
    let startedAt: Date

    func healthSnapshot() async -> ServerHealthSnapshot {
        ServerHealthSnapshot(
            startedAt: startedAt,
            items: [
                HealthItem(name: "Active sessions", value: "3"),
                HealthItem(name: "Result queue", value: "0 waiting"),
                HealthItem(name: "Replay listeners", value: "TCP 80, 443, 8080 · UDP 63308"),
            ])
    }
}

/// WeHeY runs from a fixed list.
struct DemoLocalizations: LocalizationListing {
    let runs: [LocalizationRun]

    func localizationRuns(from: Date?, to: Date?, limit: Int) async throws -> [LocalizationRun] {
        Array(
            runs.filter { run in
                (from.map { run.requestedAt >= $0 } ?? true) && (to.map { run.requestedAt < $0 } ?? true)
            }.prefix(limit))
    }
}
