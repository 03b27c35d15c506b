import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs `body` so that Ctrl-C cancels it (the client then closes its side channel so the server frees the slot).
///
/// One SIGINT source serves the whole process, installed at the first use and never cancelled: on Linux, a second
/// signal source created after the first was cancelled and SIGINT reset to its default never received the signal
/// (SIGINT stayed ignored), so Ctrl-C during a localization that followed its test in the same command did nothing.
/// A Ctrl-C while no body runs ends the process with 130, as the default action would.
enum Interrupts {
    /// The bodies running now, by ticket: each gets one yield per Ctrl-C.
    private static let listeners = Mutex<[Int: AsyncStream<Void>.Continuation]>([:])
    private static let nextTicket = Atomic<Int>(0)
    /// The process's SIGINT source (kept alive), once installed.
    private static let source = Mutex<(any DispatchSourceSignal)?>(nil)

    /// Installs the SIGINT source once; returns when it watches.
    private static func install() async {
        let created = source.withLock { current -> (any DispatchSourceSignal)? in
            guard current == nil else { return nil }
            signal(SIGINT, SIG_IGN)
            let made = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
            made.setEventHandler {
                let running = listeners.withLock { Array($0.values) }
                if running.isEmpty { exit(130) }
                for listener in running { listener.yield() }
            }
            current = made
            return made
        }
        guard let created else { return }
        // The source starts watching asynchronously; until then an ignored SIGINT would be lost, so wait for it.
        await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
            created.setRegistrationHandler { registered.resume() }
            created.resume()
        }
    }

    /// Runs `body` in a child task next to a SIGINT watcher; the first Ctrl-C cancels `body`, which then throws
    /// its cancellation error.
    static func cancellingOnSIGINT<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        await install()
        let (interrupts, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let ticket = nextTicket.add(1, ordering: .relaxed).newValue
        listeners.withLock { $0[ticket] = continuation }
        defer {
            listeners.withLock { $0[ticket] = nil }
            continuation.finish()
        }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                for await _ in interrupts { break }
                return nil
            }
            while let next = try await group.next() {
                group.cancelAll()
                if let value = next { return value }
            }
            throw CancellationError()
        }
    }
}
