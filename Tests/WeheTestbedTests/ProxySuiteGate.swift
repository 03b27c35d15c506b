/// The suites that replay published traces through the userspace throttling proxy take turns. Each moves tens of
/// megabytes through a debug-built proxy and compares rates against a throttle. Run side by side in one test process
/// on two cores, one full run measured a control replay at 1.2 Mbit/s against a 1 Mbit/s throttle (the time-limit
/// test) and read differentiation where both replays were throttled alike (the port-shaping case); the cause was not
/// traced further, and these suites measure verdicts, not how they share a loaded machine.
actor ProxySuiteGate {
    static let shared = ProxySuiteGate()

    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    private func enter() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func leave() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }

    /// Runs `body` once no other proxy suite runs (first come, first served).
    static func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await shared.enter()
        do {
            let value = try await body()
            await shared.leave()
            return value
        } catch {
            await shared.leave()
            throw error
        }
    }
}
