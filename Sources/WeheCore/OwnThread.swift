import Foundation

/// Runs `work`, which blocks (a capture loop, a child process and its pipes, a long analysis), on a thread of its
/// own and returns its result, holding no thread of Swift's shared pool meanwhile.
///
/// That pool has as many threads as cores (two on a small server or a CI machine), and every task of the process that
/// is not on an event loop runs there. One task that blocked a pool thread for seconds halved what the rest of the
/// process could do and two left it nothing: in the test process, a UDP replay on loopback waited past its server's
/// 20-s progress deadline while two tests blocked the pool waiting for commands they had started.
///
/// - Parameters:
///   - name: the thread's name, as `top -H` and a debugger show it.
///   - prepare: runs first on the new thread (e.g. to lower that thread's priority).
///   - work: the blocking work.
public func onOwnThread<T: Sendable>(
    named name: String? = nil, prepare: (@Sendable () -> Void)? = nil,
    _ work: @escaping @Sendable () throws -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            prepare?()
            continuation.resume(with: Result { try work() })
        }
        if let name { thread.name = name }
        thread.start()
    }
}

/// `onOwnThread` for work that cannot throw.
public func onOwnThread<T: Sendable>(
    named name: String? = nil, prepare: (@Sendable () -> Void)? = nil, _ work: @escaping @Sendable () -> T
) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            prepare?()
            continuation.resume(returning: work())
        }
        if let name { thread.name = name }
        thread.start()
    }
}
