import Foundation
import Synchronization
import Testing
import WeheCore
import WeheStore
import WeheTestKit
import WeheWire

@testable import WeheServer

#if canImport(Glibc)
    import Glibc
#endif

/// What an analysis may cost: samples bounded by the replay window and interval (`SampleBound`), analyses run a
/// bounded number at once, globally and per network, on their own threads (`AnalysisScheduler`).
@Suite("Analysis cost bounds", .timeLimit(.minutes(6)))
struct AnalysisBoundTests {
    static func series(_ count: Int, interval: Double) -> ThroughputSeries {
        ThroughputSeries(mbps: (0..<count).map { Double($0 % 7) }, interval: interval)
    }

    // MARK: samples

    @Test("real uploads fit: ~560 samples at 10 ms over a 5.7 s window, 99 at 0.39 s, Java's rounded timer")
    func realUploadsFit() throws {
        try SampleBound.check(Self.series(560, interval: 0.01), sampleCount: 100, windowSeconds: 5.7)
        // The published client's 99 samples of a 39 s replay, uploaded by a scripted client without the wait: the
        // 2·N floor (the grant asked for 100).
        try SampleBound.check(Self.series(99, interval: 0.39), sampleCount: 100, windowSeconds: 0.05)
        try SampleBound.check(Self.series(200, interval: 0.5), sampleCount: 100, windowSeconds: 0)
        // Java stamps d = 1.4 ms but its timer fires every round(1.4) = 1 ms: 1400 samples in 1.4 s.
        try SampleBound.check(Self.series(1400, interval: 0.0014), sampleCount: 100, windowSeconds: 1.4)
        // A 45 s replay of a 12 s app (d = 0.12 s) runs past its nominal length: 375 samples.
        try SampleBound.check(Self.series(375, interval: 0.12), sampleCount: 100, windowSeconds: 46)
    }

    @Test("more samples than the window could produce are refused, naming count, window, interval and bound")
    func oversizedUploadsRefused() {
        // 20 000 samples claimed at 10 ms (200 s of replay) one second after the grant.
        #expect {
            try SampleBound.check(Self.series(20_000, interval: 0.01), sampleCount: 100, windowSeconds: 1)
        } throws: { error in
            guard let error = error as? ReplayServerError else { return false }
            return error.code == .protocolViolation && error.message.contains("20000 samples")
                && error.message.contains("1.0 s") && error.message.contains("0.01 s")
                && error.message.contains("at most 200")
        }
        // At a claimed 1 ms, 10 000 samples need about 9.1 s of window; 20 000 about 18.2 s.
        #expect(throws: ReplayServerError.self) {
            try SampleBound.check(Self.series(10_000, interval: 0.001), sampleCount: 100, windowSeconds: 9)
        }
        #expect(throws: Never.self) {
            try SampleBound.check(Self.series(10_000, interval: 0.001), sampleCount: 100, windowSeconds: 9.2)
        }
        #expect(throws: ReplayServerError.self) {
            try SampleBound.check(Self.series(20_000, interval: 0.001), sampleCount: 100, windowSeconds: 18)
        }
        // A claimed interval below 1 ms counts as 1 ms; times all zero too.
        #expect(throws: ReplayServerError.self) {
            try SampleBound.check(Self.series(5_000, interval: 1e-6), sampleCount: 100, windowSeconds: 4)
        }
        let zeros = ThroughputSeries(mbps: Array(repeating: 1, count: 5_000), times: Array(repeating: 0, count: 5_000))
        #expect(throws: ReplayServerError.self) {
            try SampleBound.check(zeros, sampleCount: 100, windowSeconds: 4)
        }
        #expect(SampleBound.maximumSamples(sampleCount: 100, windowSeconds: .infinity, interval: .nan) == 200)
    }

    @Test("the server refuses an upload its replay window cannot hold (no OK, nothing stored), keeps a real one")
    func serverRefusesOversizedUpload() async throws {
        let original = try ReplayLibrary(directory: TestResources.fixtureReplays)
            .trace(file: "TinyWeb_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            var client = ScriptedClient()
            client.userID = "@oversized1"
            let values = (0..<5_001).map { String($0 % 5) }.joined(separator: ",")
            let times = (1...5_001).map { String(Double($0) * 0.01) }.joined(separator: ",")
            client.samples = "[[\(values)],[\(times)]]"
            let refused = try await client.run(original, testID: 0, server: server)
            #expect(refused.grant.hasPrefix("1;"))
            // The refusal replaces the OK, with the reason.
            #expect(refused.okAfterSamples?.hasPrefix("Refused;throughput upload refused: 5000 samples") == true)
            let key = TestKey(userID: "@oversized1", historyCount: 1)
            #expect(try await server.store.test(key)?.replay(0) == nil)
            client.userID = "@realsize1"
            client.samples = ScriptedClient().samples
            let accepted = try await client.run(original, testID: 0, server: server)
            #expect(accepted.okAfterSamples == "OK")
            #expect(try await server.store.test(TestKey(userID: "@realsize1", historyCount: 1))?.replay(0) != nil)
        }
    }

    // MARK: scheduler

    /// Work that blocks its analysis thread until released, and records how many such blocks run at once.
    final class Gate: Sendable {
        private struct State {
            var running = 0
            var most = 0
            var started = 0
            var released = 0
        }
        private let state = Mutex(State())

        func work() {
            let ticket = state.withLock { state -> Int in
                state.running += 1
                state.started += 1
                state.most = max(state.most, state.running)
                return state.started
            }
            while state.withLock({ $0.released < ticket }) { usleep(200) }
            state.withLock { $0.running -= 1 }
        }

        func release() { state.withLock { $0.released += 1 } }
        var started: Int { state.withLock { $0.started } }
        var most: Int { state.withLock { $0.most } }
    }

    static func until(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    @Test("the scheduler's bounds come from the server's configuration; by default half the cores, 2, 64")
    func boundsFromConfiguration() {
        let standard = AnalysisScheduler.Limits(ReplayServerConfiguration.Limits())
        #expect(standard.running == max(1, ProcessInfo.processInfo.activeProcessorCount / 2))
        #expect(standard.perNetwork == 2 && standard.waiting == 64)
        var limits = ReplayServerConfiguration.Limits()
        limits.analysesRunning = 7
        limits.analysesPerNetwork = 3
        limits.analysesWaiting = 0
        let configured = AnalysisScheduler.Limits(limits)
        #expect(configured == AnalysisScheduler.Limits(running: 7, perNetwork: 3, waiting: 0))
    }

    @Test("at most `running` analyses compute at once; the next wait and run in turn")
    func globalLimit() async throws {
        let scheduler = AnalysisScheduler(limits: .init(running: 1, perNetwork: 2, waiting: 8))
        let gate = Gate()
        let tasks = (0..<3).map { index in
            Task { try await scheduler.run(network: "10.0.\(index).0/24") { gate.work() } }
        }
        await Self.until { gate.started == 1 && scheduler.waiting == 2 }
        #expect(scheduler.running == 1)
        for expected in 2...3 {
            gate.release()
            await Self.until { gate.started == expected }
        }
        gate.release()
        for task in tasks { try await task.value }
        #expect(gate.most == 1)
        #expect(scheduler.running == 0 && scheduler.waiting == 0)
    }

    @Test("a network with `perNetwork` analyses running or waiting is refused at once; others still queue")
    func perNetworkLimit() async throws {
        let scheduler = AnalysisScheduler(limits: .init(running: 1, perNetwork: 2, waiting: 8))
        let gate = Gate()
        let first = Task { try await scheduler.run(network: "10.0.9.0/24") { gate.work() } }
        let second = Task { try await scheduler.run(network: "10.0.9.0/24") { gate.work() } }
        await Self.until { gate.started == 1 && scheduler.waiting == 1 }
        await #expect(throws: AnalysisScheduler.Refusal.networkBusy("10.0.9.0/24")) {
            try await scheduler.run(network: "10.0.9.0/24") { gate.work() }
        }
        let other = Task { try await scheduler.run(network: "10.0.10.0/24") { gate.work() } }
        await Self.until { scheduler.waiting == 2 }
        for expected in 2...3 {
            gate.release()
            await Self.until { gate.started == expected }
        }
        gate.release()
        try await first.value
        try await second.value
        try await other.value
        // The network's slots are free again.
        try await scheduler.run(network: "10.0.9.0/24") {}
    }

    @Test("the queue is bounded server-wide")
    func queueBound() async throws {
        let scheduler = AnalysisScheduler(limits: .init(running: 1, perNetwork: 2, waiting: 1))
        let gate = Gate()
        let running = Task { try await scheduler.run(network: "a") { gate.work() } }
        let queued = Task { try await scheduler.run(network: "b") { gate.work() } }
        await Self.until { gate.started == 1 && scheduler.waiting == 1 }
        await #expect(throws: AnalysisScheduler.Refusal.queueFull) {
            try await scheduler.run(network: "c") { gate.work() }
        }
        gate.release()
        await Self.until { gate.started == 2 }
        gate.release()
        try await running.value
        try await queued.value
    }

    @Test("analyses run on a thread of their own, niced (Linux; the cooperative pool is not), errors pass through")
    func ownThread() async throws {
        let scheduler = AnalysisScheduler(limits: .init(running: 1, perNetwork: 1, waiting: 0), niceness: 10)
        #if os(Linux)
            let niceness = try await scheduler.run(network: "a") { () -> Int32 in
                var buffer = [CChar](repeating: 0, count: 64)
                let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
                let text = String(decoding: buffer[0..<max(0, length)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let thread = text.split(separator: "/").last.flatMap { id_t($0) } ?? 0
                return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread)
            }
            #expect(niceness >= 10)
        #endif
        struct Failure: Error, Equatable {}
        await #expect(throws: Failure()) { try await scheduler.run(network: "a") { throw Failure() } }
        #expect(scheduler.running == 0)
    }
}
