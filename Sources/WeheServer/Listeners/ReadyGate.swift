import Synchronization

/// Opens once with the listening ports (or fails with the startup error); waiters resume then.
final class ReadyGate: Sendable {
    private enum State {
        case waiting([CheckedContinuation<ReplayServer.ListeningPorts, any Error>])
        case ready(ReplayServer.ListeningPorts)
        case failed(any Error)
    }
    private let state = Mutex(State.waiting([]))

    func open(_ ports: ReplayServer.ListeningPorts) { finish(.success(ports)) }

    func fail(_ error: any Error) { finish(.failure(error)) }

    private func finish(_ result: Result<ReplayServer.ListeningPorts, any Error>) {
        let waiters: [CheckedContinuation<ReplayServer.ListeningPorts, any Error>] = state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            switch result {
            case .success(let ports): state = .ready(ports)
            case .failure(let error): state = .failed(error)
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    func wait() async throws -> ReplayServer.ListeningPorts {
        try await withCheckedThrowingContinuation { continuation in
            let immediate: Result<ReplayServer.ListeningPorts, any Error>? = state.withLock { state in
                switch state {
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                case .ready(let ports): return .success(ports)
                case .failed(let error): return .failure(error)
                }
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }
}
