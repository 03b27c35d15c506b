import Synchronization

/// A seam for tests: a pause at a point of the side-channel exchange (`nil`: none). A loaded server may resume the
/// side channel's task only after the client has already acted on the message it just received; a test pauses the
/// task there on purpose to check that nothing depends on its running first.
package final class ProtocolSeams: Sendable {
    private let afterSenderCount = Mutex<(@Sendable (Session) async -> Void)?>(nil)
    private let sideChannelsTaken = Atomic<Int>(0)

    /// Side-channel connections whose handler has started (a connection closed before then never reaches one).
    package var sideChannelHandlersStarted: Int { sideChannelsTaken.load(ordering: .relaxed) }

    func sideChannelHandlerStarted() {
        sideChannelsTaken.add(1, ordering: .relaxed)
    }

    /// Creates a seam without a pause.
    package init() {}

    /// Sets (or clears) what runs right after the sender count (the last message before replay traffic) was sent.
    package func pauseAfterSenderCount(_ pause: (@Sendable (Session) async -> Void)?) {
        afterSenderCount.withLock { $0 = pause }
    }

    func senderCountSent(_ session: Session) async {
        await afterSenderCount.withLock { $0 }?(session)
    }
}
