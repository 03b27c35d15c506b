import NIOCore

extension EventLoopFuture where Value: Sendable {
    /// Awaits the future; when the waiting task is cancelled, `onCancel` runs (it should fail the promise behind the
    /// future, e.g. by closing the channel), so a cancelled task never hangs on the network.
    func value(onCancel: @escaping @Sendable () -> Void) async throws -> Value {
        try await withTaskCancellationHandler {
            try await self.get()
        } onCancel: {
            onCancel()
        }
    }
}

/// Thrown into pending reads when the waiting task is cancelled.
struct ReadCancelled: Error {}
