import NIOCore

/// Accepts connections until the listener closes; one child task per connection. Each connection takes a slot of
/// the pool's share of the connection budget or is closed at once with a log line. With `evictable`, a connection
/// holds its slot only loosely until its handler calls the `established` closure it is given (the side channel: once
/// its declaration is complete): when the share is full, the oldest such connection is closed for a newcomer, so
/// idle and trickling connections cannot keep real clients out; established ones are never evicted.
///
/// A connection is wrapped for async use in its own task, just before its handler runs (which always finishes the
/// wrapper); when the loop ends (the listener closed, or the server stopped), the connections still queued in the
/// accept stream are closed as plain channels.
func acceptLoop(
    _ listener: ReplayServer.TCPListener,
    kind: String,
    pool: ConnectionLimiter.Pool,
    evictable: Bool = false,
    context: ServerContext,
    pause: AcceptPause,
    handler:
        @escaping @Sendable (NIOAsyncChannel<ByteBuffer, ByteBuffer>, _ established: @escaping @Sendable () -> Void)
        async -> Void
) async {
    let queued = listener.queued
    let failures = listener.failures
    do {
        try await withThrowingDiscardingTaskGroup { group in
            defer { queued.closeAll() }
            try await listener.accepts.executeThenClose { inbound in
                await pause.wait()
                for try await child in inbound {
                    queued.take(child)
                    let address = AddressText.normalized(child.remoteAddress?.ipAddress ?? "unknown")
                    let ticket = context.limiter.admit(address: address, pool: pool) {
                        context.metrics.connectionFailed(kind, reason: "evicted")
                        child.close(promise: nil)
                    }
                    guard let ticket else {
                        context.metrics.connectionRejected(kind)
                        context.logger.notice(
                            "connection refused: connection limit reached",
                            metadata: [
                                "wehe.channel": "\(kind)", "wehe.peer": "\(AddressText.redacted(address))",
                                "wehe.open": "\(context.limiter.current)",
                            ])
                        child.close(promise: nil)
                        continue
                    }
                    if !evictable { context.limiter.established(ticket) }
                    context.metrics.connectionAccepted(kind)
                    group.addTask {
                        defer { context.limiter.release(ticket) }
                        guard let wrapped = await wrapAccepted(child, failures: failures) else { return }
                        await handler(wrapped) { context.limiter.established(ticket) }
                    }
                }
            }
        }
    } catch is CancellationError {
        context.logger.debug("listener stopped", metadata: ["wehe.channel": "\(kind)"])
    } catch {
        context.logger.error("listener stopped", metadata: ["wehe.channel": "\(kind)", "wehe.error": "\(error)"])
    }
}

/// Wraps an accepted connection for async use on its event loop and hands it what its `EarlyReadBuffer` kept; `nil`,
/// with the connection closed, when the server is stopping (the task is cancelled), the connection is already closed
/// or cannot be wrapped (a failed setup, logged and counted). The wrapper returned must be finished
/// (`executeThenClose`): the handlers always do.
private func wrapAccepted(
    _ channel: any Channel, failures: ConnectionSetupFailureLog
) async -> NIOAsyncChannel<ByteBuffer, ByteBuffer>? {
    guard !Task.isCancelled else {
        channel.close(promise: nil)
        return nil
    }
    do {
        return try await channel.eventLoop.submit {
            // Throws for a connection closed while queued (evicted, idle deadline, the client left).
            let wrapped = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                wrappingChannelSynchronously: channel,
                configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 4)))
            // From here the wrapper exists and is returned whatever happens: its handler finishes it.
            do {
                try channel.removeEarlyReadBuffer()
            } catch let error as ChannelError where error == .ioOnClosedChannel {
                // Closed already (its handlers are not yet removed, so the wrapper could be added): the handler
                // sees the end at once.
            } catch {
                failures.record(error, stage: .pipeline)
                channel.close(promise: nil)
            }
            return wrapped
        }.get()
    } catch {
        channel.close(promise: nil)
        if let error = error as? ChannelError, error == .ioOnClosedChannel { return nil }
        failures.record(error, stage: .pipeline)
        return nil
    }
}
