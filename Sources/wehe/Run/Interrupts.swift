import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs `body` so that Ctrl-C cancels it (the client then closes its side channel so the server frees the slot).
enum Interrupts {
    /// Runs `body` in a child task next to a SIGINT watcher; the first Ctrl-C cancels `body`, which then throws
    /// its cancellation error. The default SIGINT action is restored afterwards.
    static func cancellingOnSIGINT<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let (interrupts, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        source.setEventHandler { continuation.yield() }
        // The source starts watching asynchronously; until then an ignored SIGINT would be lost, so wait for it.
        await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
            source.setRegistrationHandler { registered.resume() }
            source.resume()
        }
        defer {
            source.cancel()
            continuation.finish()
            signal(SIGINT, SIG_DFL)
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
