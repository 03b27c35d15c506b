package import Foundation
package import NIOCore
import Synchronization
package import WeheCore
package import WeheWire

/// One admitted replay: who declared it, from where, which replay, and the side channel it can notify.
///
/// Shared between the side-channel task (which owns it), the registry, and the replay listeners that find it by
/// client address. Mutable state sits behind a mutex; everything else is fixed at admission.
package final class Session: Sendable {
    /// Registry-unique number.
    package let id: UInt64
    /// The client's ID declaration.
    package let declaration: IDDeclaration
    /// The socket peer address of the side channel (normalised, no IPv4-mapped prefix).
    package let peerAddress: String
    /// The key admission used (protocol.md 5.3 step 4).
    package let admissionKey: String
    /// The replay being played.
    package let replay: LoadedReplay
    /// When the session was admitted (wall clock, stored with the test).
    package let admittedAt: Date
    /// When the session was admitted (for ages and the lateness record).
    package let admittedInstant: ContinuousClock.Instant
    /// Writes framed messages on this session's side channel.
    package let notifier: SideChannelNotifier
    private let state = Mutex(State())

    struct State {
        var ready = false
        var tcpClaimed = false
        var tcpFinished = false
        var udpFlowsStarted: [String] = []
        var closeReason: String?
        var ended = false
        var clientBytes = 0
        var serverBytes = 0
        var firstActive: ContinuousClock.Instant?
        var lastActive: ContinuousClock.Instant?
    }

    /// Creates a session.
    package init(
        id: UInt64,
        declaration: IDDeclaration,
        peerAddress: String,
        admissionKey: String,
        replay: LoadedReplay,
        admittedAt: Date,
        notifier: SideChannelNotifier
    ) {
        self.id = id
        self.declaration = declaration
        self.peerAddress = peerAddress
        self.admissionKey = admissionKey
        self.replay = replay
        self.admittedAt = admittedAt
        self.admittedInstant = .now
        self.notifier = notifier
    }

    /// The replay key.
    package var key: ReplayKey { declaration.replayKey }

    /// Marks the session ready for replay traffic (after the port map and sender count were sent).
    package func markReady() { state.withLock { $0.ready = true } }

    /// Claims the session's TCP replay connection; `false` if it is not ready, not TCP, or already claimed.
    package func claimTCP() -> Bool {
        guard replay.transport == .tcp else { return false }
        return state.withLock { state in
            guard state.ready, !state.tcpClaimed else { return false }
            state.tcpClaimed = true
            return true
        }
    }

    /// Marks the session's TCP replay connection over (closed by the client, or failed): its traffic is all counted.
    package func markTCPFinished() { state.withLock { $0.tcpFinished = true } }

    /// Whether the session's TCP replay connection is over (`markTCPFinished()`).
    package var tcpFinished: Bool { state.withLock { $0.tcpFinished } }

    /// Whether replay traffic reached this session: its TCP connection was claimed or a UDP flow started.
    package var replayStarted: Bool { state.withLock { $0.tcpClaimed || !$0.udpFlowsStarted.isEmpty } }

    /// Records replay traffic: bytes received from the client and bytes handed to the socket for it; `active` marks
    /// the instant as replay activity, from the first such instant to the last (`ReplayProgress`: a TCP connection's
    /// first bytes and each response write the client drained, every UDP datagram from the client).
    package func recordTraffic(
        clientBytes: Int = 0, serverBytes: Int = 0, active: Bool, at instant: ContinuousClock.Instant = .now
    ) {
        state.withLock { state in
            state.clientBytes += clientBytes
            state.serverBytes += serverBytes
            guard active else { return }
            if state.firstActive == nil { state.firstActive = instant }
            if state.lastActive.map({ $0 < instant }) ?? true { state.lastActive = instant }
        }
    }

    /// Marks the session ended (its side channel is gone): replay listeners stop counting traffic for it.
    package func markEnded() { state.withLock { $0.ended = true } }

    /// Whether the session ended (`markEnded()`).
    package var ended: Bool { state.withLock { $0.ended } }

    /// Waits until the replay's progress meets `requirement`, its count has stood still for `quiet`, or `grace` has
    /// passed, and returns the progress then.
    ///
    /// The client sends DONE on the side channel after its last datagram or request; a busy replay listener may
    /// read those from its socket a moment after the side channel read DONE, so a replay that ran must not be judged
    /// on a count that is still catching up. A count that stands still is not catching up: a replay the client ended
    /// early on purpose (an adaptive verdict's short round, a client at its time limit) is judged after `quiet`, not
    /// after the whole grace, which on a 150-ms path was 2 s of every such round's 3. A TCP replay whose connection
    /// is already over is judged at once: its count is final. Bounded: a replay that did not run costs its side
    /// channel at most `grace`.
    package func progress(
        meeting requirement: ReplayProgress.Requirement, within grace: Duration, quiet: Duration
    ) async -> ReplayProgress {
        let clock = ContinuousClock()
        let deadline = clock.now + grace
        var current = progress
        var changed = clock.now
        // A TCP replay whose connection is over has nothing late to count: the client closed it before its DONE.
        while !current.meets(requirement), !tcpFinished, clock.now < deadline, changed.duration(to: clock.now) < quiet {
            try? await Task.sleep(for: .milliseconds(20))
            let next = progress
            if next != current { changed = clock.now }
            current = next
        }
        return current
    }

    /// What the server saw of the replay so far.
    package var progress: ReplayProgress {
        state.withLock { state in
            var seconds = 0.0
            if let first = state.firstActive, let last = state.lastActive {
                let span = first.duration(to: last).components
                seconds = max(0, Double(span.seconds) + Double(span.attoseconds) / 1e18)
            }
            return ReplayProgress(
                clientBytes: state.clientBytes, serverBytes: state.serverBytes, activeSeconds: seconds)
        }
    }

    /// Whether a TCP replay connection can still be claimed.
    package var awaitsTCP: Bool {
        replay.transport == .tcp && state.withLock { $0.ready && !$0.tcpClaimed }
    }

    /// Claims a UDP flow for a client address and port; returns the flow's index (in start order) or `nil` when
    /// the session is not ready, not UDP, or already plays as many flows as its sender count.
    package func claimUDPFlow(source: String) -> Int? {
        guard replay.transport == .udp else { return nil }
        let limit = max(1, replay.senderCount)
        return state.withLock { state in
            guard state.ready else { return nil }
            if state.udpFlowsStarted.contains(source) { return nil }
            guard state.udpFlowsStarted.count < limit else { return nil }
            state.udpFlowsStarted.append(source)
            return state.udpFlowsStarted.count - 1
        }
    }

    /// Whether another UDP flow may start for this session.
    package var awaitsUDP: Bool {
        replay.transport == .udp && state.withLock { $0.ready && $0.udpFlowsStarted.count < max(1, replay.senderCount) }
    }

    /// Records why the session was ended from outside (replaced, shutdown); the side channel is closed.
    package func terminate(reason: String) {
        state.withLock { $0.closeReason = $0.closeReason ?? reason }
        notifier.close()
    }

    /// The reason recorded by `terminate(reason:)`, if any.
    package var terminationReason: String? { state.withLock { $0.closeReason } }
}

/// Writes frames on a side channel from any task. Each frame is one write of one buffer, so frames written
/// concurrently (UDP `STARTED`/`DONE` notifications and the handler's replies) never interleave mid-frame.
package struct SideChannelNotifier: Sendable {
    private let writeFrame: @Sendable (ByteBuffer) async throws -> Void
    private let closeChannel: @Sendable () -> Void
    private let readMinimumRTT: @Sendable () async -> Double?

    /// Creates a notifier from a write and a close operation, and a reading of the side channel's smallest RTT in
    /// seconds (the kernel's `TCP_INFO`; `nil` when not measured).
    package init(
        write: @escaping @Sendable (ByteBuffer) async throws -> Void,
        close: @escaping @Sendable () -> Void,
        minimumRTT: @escaping @Sendable () async -> Double? = { nil }
    ) {
        self.writeFrame = write
        self.closeChannel = close
        self.readMinimumRTT = minimumRTT
    }

    /// The side channel's smallest RTT so far, seconds: the path of a UDP replay, which has no acknowledgements.
    package func minimumRTT() async -> Double? { await readMinimumRTT() }

    /// Sends one framed text message.
    package func send(_ body: String) async throws {
        try await writeFrame(ByteBuffer(bytes: SideChannelFramer.frame(body)))
    }

    /// Sends one framed binary message.
    package func send(bytes body: [UInt8]) async throws {
        try await writeFrame(ByteBuffer(bytes: SideChannelFramer.frame(body)))
    }

    /// Sends a UDP notification, ignoring failure (the client may be gone; the replay goes on).
    package func notify(_ notification: SideChannelMessage.Notification) async {
        try? await send(notification.body)
    }

    /// Closes the side channel.
    package func close() { closeChannel() }
}
