/// Collects the analyzer ports reported by Hummingbird once its listeners run. Waiting is cancellable: when an
/// analyzer cannot listen (its port is taken), the server's task group cancels the wait instead of hanging on it.
actor AnalyzerPorts {
    private let expected: Int
    private var tls: Int?
    private var plain: Int?
    private var waiters: [Int: CheckedContinuation<(tls: Int?, plain: Int?), any Error>] = [:]
    private var nextWaiter = 0

    init(expected: Int) { self.expected = expected }

    /// Whether every analyzer reported its port.
    var complete: Bool { (tls == nil ? 0 : 1) + (plain == nil ? 0 : 1) >= expected }

    func report(secure: Bool, port: Int) {
        if secure { tls = port } else { plain = port }
        guard complete else { return }
        for waiter in waiters.values { waiter.resume(returning: (tls, plain)) }
        waiters.removeAll()
    }

    /// The ports once every analyzer listens.
    /// - Throws: `CancellationError` when the waiting task is cancelled first.
    func wait() async throws -> (tls: Int?, plain: Int?) {
        if complete { return (tls, plain) }
        let id = nextWaiter
        nextWaiter += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters[id] = continuation
                }
            }
        } onCancel: {
            Task { await self.cancel(id) }
        }
    }

    private func cancel(_ id: Int) {
        waiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }
}
