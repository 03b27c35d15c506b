import NIOSSL
import Synchronization
import WeheWire

/// The next replay's side channel, opened while the current replay runs, within one test of many replays against
/// one server (the adaptive verdict's rounds).
///
/// Why: each replay is an ordinary Wehe test with a side channel of its own, and opening one costs the TCP handshake
/// and, with TLS, the TLS handshake: two of the seven round trips that every replay paid besides its bytes
/// (`Docs/testbed.md`, "Round trips per replay"). A replay opens the next one when its own replay starts, so the
/// handshakes are over by the time it has handed over its samples. (Opened once the replay's bytes were in, the TLS
/// handshake still cost a round trip after the samples' `OK` on a 100-ms path.) Nothing is sent on the new connection
/// until the current side channel's exchange is over (the samples' `OK` is in and the close started), so the server
/// sees the same messages in the same order as from a client that connects afterwards; the published server kills an
/// earlier side channel of the same user at the next declaration, which therefore never happens to a side channel
/// still in use.
///
/// What it leaves: the last round of a test opens one connection that is never used; it is closed without a byte,
/// which our server counts as unused, not as an error (`PreDeclarationEnd`). A server that closes a connection waiting
/// unused (ours does after 10 s without a declaration, as in a long round on a slow path) costs the next replay a
/// connection of its own, as before.
final class SideChannelAhead: Sendable {
    /// A connection and where its `STARTED`/`DONE` notifications go once a replay takes it.
    struct Ready: Sendable {
        var connection: SideChannelConnection
        var notifications: NotificationRoute
    }

    private struct Pending {
        var host: String
        var port: Int
        var tls: ObjectIdentifier?
        var task: Task<Ready?, Never>
    }

    private let pending = Mutex<Pending?>(nil)

    init() {}

    /// Starts opening a side channel to `host`:`port` unless one is already opening or open. A failure is kept
    /// quiet: the replay that wants the connection then opens its own, and meets the error itself.
    func open(host: String, port: Int, tls: NIOSSLContext?, connectTimeout: Duration) {
        pending.withLock { pending in
            guard pending == nil else { return }
            let task = Task<Ready?, Never> {
                let route = NotificationRoute()
                do {
                    let connection = try await SideChannelConnection.connect(
                        host: host, port: port, tls: tls, connectTimeout: connectTimeout,
                        onNotification: { route.deliver($0) })
                    return Ready(connection: connection, notifications: route)
                } catch {
                    return nil
                }
            }
            pending = Pending(host: host, port: port, tls: tls.map(ObjectIdentifier.init), task: task)
        }
    }

    /// The connection opened for `host`:`port` with `tls`, once its handshakes are done; `nil` when none was
    /// opened, it failed, or it was opened for another server (it is then closed).
    func take(host: String, port: Int, tls: NIOSSLContext?) async -> Ready? {
        guard
            let taken = pending.withLock({ pending -> Pending? in
                defer { pending = nil }
                return pending
            })
        else { return nil }
        guard let ready = await taken.task.value else { return nil }
        guard taken.host == host, taken.port == port, taken.tls == tls.map(ObjectIdentifier.init),
            ready.connection.isOpen
        else {
            await ready.connection.close()
            return nil
        }
        return ready
    }

    /// Closes a connection opened and not taken (the test ended or was cancelled). Returns at once; the close
    /// runs in the background and takes at most the connect timeout and one second.
    func discard() {
        guard
            let taken = pending.withLock({ pending -> Pending? in
                defer { pending = nil }
                return pending
            })
        else { return }
        Task {
            if let ready = await taken.task.value { await ready.connection.close() }
        }
    }

    /// Whether a connection is opening or open (tests).
    var isHolding: Bool { pending.withLock { $0 != nil } }
}

/// Where a side channel's `STARTED`/`DONE` notifications go: set by the replay that uses the connection, which may
/// be opened before that replay exists. Notifications only follow a declaration, so none arrives before it is set.
final class NotificationRoute: Sendable {
    private let handler = Mutex<(@Sendable (SideChannelMessage.Notification) -> Void)?>(nil)

    init() {}

    /// Sends every later notification to `handler`.
    func deliver(to handler: @escaping @Sendable (SideChannelMessage.Notification) -> Void) {
        self.handler.withLock { $0 = handler }
    }

    /// Delivers one notification (dropped when nobody took the connection yet).
    func deliver(_ notification: SideChannelMessage.Notification) {
        let handler = self.handler.withLock { $0 }
        handler?(notification)
    }
}
