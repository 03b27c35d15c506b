import Foundation
import Synchronization
import WeheCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs the CPU-bound part of analyses off the request path: on threads of their own, at a lowered priority, a
/// bounded number at once server-wide and a bounded number per client network.
///
/// An analysis computed inline held one of Swift's cooperative threads (as many as cores) for as long as it ran,
/// so a few expensive ones stopped every side channel, replay and analyzer request of the process. Here each runs on
/// a dedicated thread niced to +10 (Linux), so the event loops and the cooperative pool keep the CPU they need, and:
///
/// * at most `running` compute at once (default: half the cores, at least 1); the next wait in arrival order;
/// * at most `perNetwork` per client network (/24 or /64) are running or waiting; more are refused at once
///   (`Refusal.networkBusy`), so one network cannot fill the queue ahead of everyone else;
/// * at most `waiting` wait server-wide; more are refused (`Refusal.queueFull`).
///
/// A refused analysis is not lost: the samples stay stored and the next `singleResult` asks again.
final class AnalysisScheduler: Sendable {
    /// The bounds.
    struct Limits: Sendable, Hashable {
        /// Analyses computing at once, server-wide.
        var running: Int
        /// Analyses running or waiting from one client network.
        var perNetwork: Int
        /// Analyses waiting for a slot, server-wide.
        var waiting: Int

        /// Half the cores (at least 1) running, 2 per network, 64 waiting.
        static var standard: Limits { Limits(ReplayServerConfiguration.Limits()) }

        /// Creates the bounds.
        init(running: Int, perNetwork: Int, waiting: Int) {
            self.running = running
            self.perNetwork = perNetwork
            self.waiting = waiting
        }

        /// The bounds a server's configuration sets (`--analysis-workers`, `--analyses-per-network`,
        /// `--analysis-queue`); no running count means half the cores, at least 1.
        init(_ limits: ReplayServerConfiguration.Limits) {
            self.init(
                running: max(1, limits.analysesRunning ?? ProcessInfo.processInfo.activeProcessorCount / 2),
                perNetwork: max(1, limits.analysesPerNetwork), waiting: max(0, limits.analysesWaiting))
        }
    }

    /// Why an analysis was not accepted.
    enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// The client's network already has `perNetwork` analyses running or waiting.
        case networkBusy(String)
        /// `waiting` analyses already wait.
        case queueFull

        var description: String {
            switch self {
            case .networkBusy(let network): "analyses of network \(network) are already running or waiting"
            case .queueFull: "the analysis queue is full"
            }
        }
    }

    private struct Waiter {
        var network: String
        var continuation: CheckedContinuation<Void, Never>
    }

    private enum Admission {
        case now
        case queued
        case refused(Refusal)
    }

    private struct State {
        var running = 0
        var admitted: [String: Int] = [:]
        var waiters: [Waiter] = []
    }

    /// The bounds in force.
    let limits: Limits
    /// Niceness of the analysis threads (Linux; 0 leaves them at the process's priority).
    let niceness: Int32
    private let state = Mutex(State())

    /// Creates a scheduler (each bound at least 1).
    init(limits: Limits = .standard, niceness: Int32 = 10) {
        self.limits = Limits(
            running: max(1, limits.running), perNetwork: max(1, limits.perNetwork), waiting: max(0, limits.waiting))
        self.niceness = niceness
    }

    /// Analyses running now.
    var running: Int { state.withLock { $0.running } }
    /// Analyses waiting for a slot now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Runs `work` on an analysis thread once a slot is free, for a client of `network`.
    /// - Throws: `Refusal` when the network or the queue is full (at once, `work` not run); whatever `work` throws.
    func run<T: Sendable>(network: String, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        let admission = state.withLock { state -> Admission in
            if state.admitted[network, default: 0] >= limits.perNetwork { return .refused(.networkBusy(network)) }
            if state.running < limits.running {
                state.running += 1
                state.admitted[network, default: 0] += 1
                return .now
            }
            if state.waiters.count >= limits.waiting { return .refused(.queueFull) }
            state.admitted[network, default: 0] += 1
            return .queued
        }
        switch admission {
        case .refused(let refusal): throw refusal
        case .now: break
        case .queued:
            // The slot is handed over by `finished` (the running count stays); cancellation does not drop the
            // place: the analysis is wanted by whoever asks next.
            await withCheckedContinuation { continuation in
                state.withLock { $0.waiters.append(Waiter(network: network, continuation: continuation)) }
            }
        }
        defer { finished(network: network) }
        let niceness = niceness
        return try await onOwnThread(named: "wehe-analysis", prepare: { Self.lowerPriority(by: niceness) }, work)
    }

    private func finished(network: String) {
        let next = state.withLock { state -> Waiter? in
            let left = state.admitted[network, default: 1] - 1
            state.admitted[network] = left > 0 ? left : nil
            if state.waiters.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.continuation.resume()
    }

    /// Nices the calling thread (Linux threads have their own nice value; elsewhere nothing happens).
    private static func lowerPriority(by niceness: Int32) {
        #if os(Linux)
            guard niceness != 0 else { return }
            var buffer = [CChar](repeating: 0, count: 64)
            let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
            guard length > 0 else { return }
            let text = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard let thread = text.split(separator: "/").last.flatMap({ id_t($0) }) else { return }
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread, niceness)
        #endif
    }
}
