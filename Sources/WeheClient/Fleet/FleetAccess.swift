/// The way into a fleet for one session of tests: the located targets are tried in order until one's access
/// envelope opens; that target's side-channel host is then used for every connection, and the envelope stays open
/// until `close()`.
public struct FleetAccess: Sendable {
    /// The target whose envelope opened.
    public let target: FleetTarget
    /// How many targets were tried (1 when the first one opened): the side channel's extra string (field 4), as
    /// the command-line client sends it.
    public let attempts: Int
    /// The open envelope.
    public let envelope: AccessEnvelope
    /// The host (or address, with an override) the replay client connects to.
    public let server: String

    /// What happened to one target that was tried.
    public struct Attempt: Sendable, Hashable {
        /// The machine.
        public var machine: String
        /// Why its envelope did not open.
        public var reason: String
    }

    /// Opens the first envelope that opens, trying `answer`'s targets in order.
    /// - Parameters:
    ///   - answer: the located targets.
    ///   - configuration: timeouts, trust, address overrides.
    ///   - onAttempt: called with each target that did not open, and why.
    /// - Throws: `FleetError` `.noEnvelope` naming every target tried and why it failed.
    public static func open(
        _ answer: LocateAnswer,
        configuration: FleetConfiguration,
        onAttempt: @Sendable (Attempt) -> Void = { _ in }
    ) async throws(FleetError) -> FleetAccess {
        var failures: [Attempt] = []
        for (index, target) in answer.targets.enumerated() {
            guard let url = target.envelopeURL else {
                let attempt = Attempt(machine: target.machine, reason: "no envelope URL in the locate answer")
                failures.append(attempt)
                onAttempt(attempt)
                continue
            }
            do {
                let envelope = try await AccessEnvelope.open(
                    url: url, machine: target.machine, timeout: configuration.envelopeTimeout,
                    additionalTrustPEM: configuration.additionalTrustPEM,
                    addressOverrides: configuration.addressOverrides)
                let host = target.sideChannelHost
                return FleetAccess(
                    target: target, attempts: index + 1, envelope: envelope,
                    server: configuration.addressOverrides[host] ?? host)
            } catch {
                if error.code == .invalidConfiguration || Task.isCancelled { throw error }
                let attempt = Attempt(machine: target.machine, reason: error.message)
                failures.append(attempt)
                onAttempt(attempt)
            }
        }
        let list = failures.map { "\($0.machine): \($0.reason)" }.joined(separator: "; ")
        let reused =
            answer.reused
            ? " (the locate answer of \(answer.receivedAt) was reused: its next_request forbids asking again yet)"
            : ""
        throw FleetError(
            .noEnvelope,
            "no access envelope opened (\(failures.count) server\(failures.count == 1 ? "" : "s") tried: \(list))"
                + reused)
    }

    /// Closes the envelope.
    public func close() async {
        await envelope.close()
    }
}
