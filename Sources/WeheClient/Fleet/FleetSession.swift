public import Foundation
import WeheReplay

/// Access envelopes for a command of any length. M-Lab's envelope holds a client's access for at most
/// max(token expiry, open + 10 minutes) and its access tokens are valid for 1 minute, so a command opens one envelope
/// per step (a test with its confirmation, a localization, a DPI search) rather than one for all of them: from the
/// last locate answer while its tokens are valid (each token is used once), else from a new locate answer (through
/// `next_request` where it applies).
public actor FleetSession {
    /// What the session did, for progress lines.
    public enum Event: Sendable {
        /// The locate service was asked (or its kept answer reused, `answer.reused`).
        case located(LocateAnswer)
        /// A target's envelope did not open.
        case attemptFailed(FleetAccess.Attempt)
        /// The kept answer's tokens are stale and `next_request` forbids asking before this time: waiting.
        case waiting(until: Date)
    }

    /// The configuration.
    public nonisolated let configuration: FleetConfiguration
    /// The longest wait for a `next_request` that forbids asking again while the kept answer's tokens are stale.
    public nonisolated let longestWait: Duration
    private var answer: LocateAnswer?
    /// Whether `answer` came from this session's own locate call: only then are its unused tokens known to be
    /// unspent (a kept answer from an earlier command may have had its tokens used, and was asked for with that
    /// command's sites and priority token).
    private var answerIsOwn = false
    private var used: Set<String> = []
    /// Locate calls this session made (reused answers not counted).
    public private(set) var locateCalls = 0
    private let onEvent: @Sendable (Event) -> Void

    /// Creates a session.
    /// - Parameters:
    ///   - configuration: the fleet.
    ///   - previous: a kept answer (its `next_request` may forbid asking yet).
    ///   - longestWait: how long to wait for `next_request`'s `nbf` when nothing else can be used.
    ///   - onEvent: progress.
    public init(
        configuration: FleetConfiguration,
        previous: LocateAnswer? = nil,
        longestWait: Duration = .seconds(120),
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.answer = previous
        self.longestWait = longestWait
        self.onEvent = onEvent
    }

    /// How many locate calls `steps` envelopes cost at most: one per step (a step of 10 minutes or less outlives the
    /// 1-minute tokens of the answer before it), the steps on a given machine (a localization after its test)
    /// included.
    public static func locateCalls(forSteps steps: Int) -> Int { steps }

    /// Whether the tokens of `answer` are still good for an envelope opened now (with the envelope timeout and a
    /// 5-second margin for the connection to arrive).
    func fresh(_ answer: LocateAnswer, now: Date) -> Bool {
        let margin = configuration.envelopeTimeout + .seconds(5)
        let usable = (configuration.tokenLifetime - margin).inSeconds
        return now.timeIntervalSince(answer.receivedAt) < usable
    }

    /// Opens an envelope for one step.
    /// - Parameter machine: the machine the step must run on (a localization after its test); `nil` for any.
    /// - Throws: `FleetError` from locate or `.noEnvelope`.
    public func open(machine: String? = nil) async throws(FleetError) -> FleetAccess {
        if let answer, answerIsOwn, fresh(answer, now: Date()) {
            do {
                if let access = try await tryTargets(of: answer, machine: machine) { return access }
            } catch {
                // Every unused target of the kept answer refused (a 503: its slots are taken): ask locate again.
                if error.code != .noEnvelope || Task.isCancelled { throw error }
            }
        }
        var configuration = self.configuration
        if let machine, let site = FleetTarget(machine: machine).site { configuration.sites = [site] }
        var located = try await locate(configuration)
        if located.reused, !fresh(located, now: Date()) {
            // next_request forbids asking before nbf, and the kept answer's tokens have expired.
            guard let next = located.nextRequest, next.notBefore.timeIntervalSinceNow <= longestWait.inSeconds else {
                let when = located.nextRequest.map { ISO8601DateFormatter().string(from: $0.notBefore) } ?? "later"
                throw FleetError(
                    .noEnvelope,
                    "the locate answer's access tokens have expired and locate asked not to be called again before "
                        + "\(when); run the remaining tests then")
            }
            onEvent(.waiting(until: next.notBefore))
            do {
                try await Task.sleep(for: .seconds(max(0, next.notBefore.timeIntervalSinceNow) + 0.1))
            } catch {
                throw FleetError(.noEnvelope, "cancelled")
            }
            located = try await locate(configuration)
        }
        if let access = try await tryTargets(of: located, machine: machine) { return access }
        let wanted = machine.map { " (the step must run on \($0), the machine of its test)" } ?? ""
        throw FleetError(
            .noEnvelope,
            "no access envelope opened: the locate answer of \(ISO8601DateFormatter().string(from: located.receivedAt)) "
                + "has no unused target\(wanted)")
    }

    private func locate(_ configuration: FleetConfiguration) async throws(FleetError) -> LocateAnswer {
        let previous = configuration.sites == self.configuration.sites ? answer : nil
        let located = try await FleetLocator(configuration: configuration).locate(previous: previous)
        if !located.reused { locateCalls += 1 }
        onEvent(.located(located))
        if configuration.sites == self.configuration.sites || answer == nil {
            answer = located
            answerIsOwn = !located.reused
        }
        return located
    }

    /// Tries the unused targets of `answer` (only `machine`'s, when given); `nil` when there is none to try.
    /// - Throws: `.noEnvelope` when every target tried failed.
    private func tryTargets(of answer: LocateAnswer, machine: String?) async throws(FleetError) -> FleetAccess? {
        let unused = answer.targets.filter { target in
            guard let url = target.envelopeURL, !used.contains(url) else { return false }
            return machine == nil || target.machine == machine
        }
        guard !unused.isEmpty else { return nil }
        var subset = answer
        subset.targets = unused
        let onEvent = self.onEvent
        do {
            let access = try await FleetAccess.open(subset, configuration: configuration) {
                onEvent(.attemptFailed($0))
            }
            // Only the targets tried are spent (each token is single-use); the rest serve the next steps.
            markUsed(unused.prefix(access.attempts))
            return access
        } catch {
            markUsed(unused[...])
            throw error
        }
    }

    private func markUsed(_ targets: ArraySlice<FleetTarget>) {
        for target in targets { if let url = target.envelopeURL { used.insert(url) } }
    }
}
