import WeheCore

/// What the server saw of one session's replay, and the rule that decides whether the replay ran here: an upload of
/// more samples than the grant's allowance (`SampleBound.floor`) is stored only for a replay that ran (one packet to a
/// replay port is not a test), so a fake test stores no more than a real one.
///
/// The rule, from the replay's own size (`requirement(for:)`): the replay ran when
///
/// * **bytes**: the server received at least half of the trace's client bytes (TCP request bytes; UDP datagram
///   payload) and, for TCP, handed at least half of the trace's response bytes to the socket; or
/// * **time**: the replay's traffic went on for at least half of its expected duration, `min(trace duration,
///   client deadline)` for timed replays (45 s TCP, 40 s UDP), the 30-s deadline for untimed port tests, and at least
///   `minimumActiveSeconds` (a trace recorded in an instant must not make the time rule free). TCP traffic
///   counts from the first request bytes to the last response write the client drained (a client that never completes
///   a request group moves nothing); UDP traffic is the client's datagrams.
///
/// The time rule keeps throttled tests: a replay slowed so much that the client's deadline cut it moved only part of
/// its bytes, but for the whole deadline. A fake test must play half of the trace, or hold its replay connection open
/// (and drain responses) for half its duration.
package struct ReplayProgress: Sendable, Equatable {
    /// Bytes received from the client on the replay (TCP request bytes, UDP datagram payload).
    package var clientBytes = 0
    /// Bytes handed to the socket for the client (TCP responses, UDP datagrams).
    package var serverBytes = 0
    /// Seconds from the first to the last traffic that counts as activity (see the type's documentation).
    package var activeSeconds = 0.0

    /// What a replay must reach to count as run (either of the two rules).
    package struct Requirement: Sendable, Equatable {
        /// Client bytes for the byte rule.
        package var clientBytes: Int
        /// Server bytes for the byte rule (0 for UDP: the server streams whatever the client does).
        package var serverBytes: Int
        /// Seconds of activity for the time rule.
        package var activeSeconds: Double

        /// Creates a requirement.
        package init(clientBytes: Int, serverBytes: Int, activeSeconds: Double) {
            self.clientBytes = clientBytes
            self.serverBytes = serverBytes
            self.activeSeconds = activeSeconds
        }
    }

    /// Creates a progress record.
    package init(clientBytes: Int = 0, serverBytes: Int = 0, activeSeconds: Double = 0) {
        self.clientBytes = clientBytes
        self.serverBytes = serverBytes
        self.activeSeconds = activeSeconds
    }

    /// The client's deadline of a TCP app replay, a UDP app replay, and a port test (protocol.md 6.1, 7.1).
    package static let tcpDeadline = 45.0, udpDeadline = 40.0, portTestDeadline = 30.0
    /// The least activity the time rule asks for.
    package static let minimumActiveSeconds = 1.0

    /// Half of the trace's client bytes (and TCP response bytes), and half of its expected duration.
    package static func requirement(for replay: LoadedReplay) -> Requirement {
        let clientBytes: Int
        var serverBytes = 0
        if replay.transport == .tcp {
            let groups = replay.server.tcpFlows.first?.groups ?? []
            clientBytes = groups.reduce(0) { $0 + $1.requestLength }
            serverBytes = groups.reduce(0) { $0 + $1.responseLength }
        } else {
            clientBytes = replay.client.packets.reduce(0) { $0 + $1.payload.count }
        }
        let deadline = replay.transport == .tcp ? tcpDeadline : udpDeadline
        let traceDuration = replay.client.duration - replay.firstPacketTime
        let expected = replay.timed ? min(max(0, traceDuration), deadline) : portTestDeadline
        return Requirement(
            clientBytes: (clientBytes + 1) / 2, serverBytes: (serverBytes + 1) / 2,
            activeSeconds: max(minimumActiveSeconds, expected / 2))
    }

    /// Whether this progress meets `requirement` by bytes or by time.
    package func meets(_ requirement: Requirement) -> Bool {
        (clientBytes >= requirement.clientBytes && serverBytes >= requirement.serverBytes)
            || activeSeconds >= requirement.activeSeconds
    }

    /// Why a replay does not count as run, for the refusal and the session log.
    package func shortfall(of requirement: Requirement) -> String {
        let seconds = (activeSeconds * 10).rounded() / 10
        let needed = (requirement.activeSeconds * 10).rounded() / 10
        return "the replay did not run here: \(clientBytes) of the \(requirement.clientBytes) client bytes and "
            + "\(serverBytes) of the \(requirement.serverBytes) server bytes needed arrived or were sent, over "
            + "\(seconds) s of traffic (\(needed) s would do)"
    }
}
