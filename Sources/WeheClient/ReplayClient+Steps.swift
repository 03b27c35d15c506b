import NIOSSL
import Synchronization
import WeheAnalysis
import WeheCore
import WeheReplay
import WeheWire

/// The building blocks of a test that other flows reuse (the WeHeY localization runs single replays against each
/// server of a pair and asks each server for its analysis).
extension ReplayClient {
    /// Runs one replay of `trace` over its own side channel against `address` with the given history count.
    /// - Parameters:
    ///   - endOfTest: whether this is the last replay of the test on that server (field 6 of the declaration).
    ///   - appDuration: the catalog's duration of the app test, if any (sample interval).
    ///   - tls: the context for the side channel (used only when the configuration asks for TLS there).
    ///   - publicAddresses: what the server's address discovery answered earlier in this test, per port; the
    ///     discovery (a connection and a request, two round trips) runs only for a port it has no answer for.
    ///   - ahead: within a test of many replays, the side channels opened ahead of the replays that use them.
    /// - Returns: the replay's outcome and what else the session saw (the received datagrams of a UDP replay).
    /// - Throws: `ReplayClientError` as `ReplaySession.run` does.
    func replaySession(
        _ trace: ReplayTrace,
        role: ReplayRole,
        historyCount: Int,
        endOfTest: Bool,
        appDuration: Double?,
        address: String,
        tls: NIOSSLContext?,
        deadline: Duration? = nil,
        keepsRefusedSamples: Bool = false,
        publicAddresses: PublicAddressCache? = nil,
        ahead: SideChannelAhead? = nil,
        slice: UDPSlice? = nil,
        onProgress: @escaping @Sendable (ReplayProgress) -> Void
    ) async throws(ReplayClientError) -> ReplaySession.Outcome {
        var realIP = "127.0.0.1"
        if trace.transport == .tcp, discoversAddress(address), let port = trace.flows.first?.serverPort {
            let discovered: String?
            if let known = publicAddresses?.answer(port: Int(port)) {
                discovered = known
            } else {
                discovered = try await whatsMyIP(address: address, port: Int(port))
                publicAddresses?.record(discovered, port: Int(port))
            }
            if let ip = discovered, ip != "127.0.0.1" { realIP = ip }
        }
        let declaration = IDDeclaration(
            userID: configuration.userID, testID: role.rawValue, replayName: trace.name,
            extraString: configuration.extraString, historyCount: historyCount, endOfTest: endOfTest,
            realIP: realIP, clientVersion: configuration.clientVersion)
        var session = ReplaySession(
            serverAddress: address, configuration: configuration, tls: configuration.sideChannelTLS ? tls : nil,
            declaration: declaration, trace: trace, appDuration: appDuration, onProgress: onProgress)
        session.deadline = deadline
        session.keepsRefusedSamples = keepsRefusedSamples
        session.ahead = ahead
        session.slice = slice
        return try await session.run()
    }

    /// Reports the received datagrams of a UDP replay to the analyzer of `address` (`DatagramReceipt`).
    /// - Returns: `nil` when the server took the report, else why not.
    func reportDatagrams(
        _ received: [UInt32],
        address: String,
        tls: NIOSSLContext?,
        historyCount: Int,
        testID: Int
    ) async throws(ReplayClientError) -> String? {
        let analyzer = analyzerClient(address: address, tls: tls)
        return try await analyzer.reportDatagrams(
            userID: configuration.userID, historyCount: historyCount, testID: testID, received: received)
    }

    /// Asks the analyzer of `address` for the numbers of `(userID, historyCount)` and applies the verdict rule.
    ///
    /// Too few measurements make the verdict inconclusive: when the server says so (our server's
    /// `insufficient_data`), or when the rule does not find differentiation and the client's own samples (as the
    /// server analyses them: without the last, partial sample) have fewer positive values than the analysis needs —
    /// the published server sends no reason and may answer numbers that the rule would read as "no
    /// differentiation". The same rule as our server's (`DifferentiationAnalyzer.summary(for:)`).
    /// - Parameters:
    ///   - originalSamples: the samples this client measured in the original replay, if it ran it.
    ///   - controlSamples: the same for the control replay (or the DPI probe).
    ///   - testID: the replay compared with the original (testID 0): 1 for the control, ≥ 2 for a DPI probe.
    ///   - serverAS: called with the AS the server's table gives for this client's address, when it answers one.
    /// - Throws: `ReplayClientError` (`.analyzerFailed`, `.resultMismatch`, network errors, `.cancelled`).
    func analysis(
        address: String,
        tls: NIOSSLContext?,
        historyCount: Int,
        originalSamples: ThroughputSeries? = nil,
        controlSamples: ThroughputSeries? = nil,
        testID: Int = 1,
        serverAS: (ASTable.Entry) -> Void = { _ in }
    ) async throws(ReplayClientError) -> AnalysisSummary {
        let analyzer = analyzerClient(address: address, tls: tls)
        let numbers = try await analyzer.analyse(
            userID: configuration.userID, historyCount: historyCount, testID: testID)
        if let number = numbers.asNumber { serverAS(ASTable.Entry(number: number, name: numbers.asName)) }
        var decision = configuration.verdictRules.decide(
            areaTest: numbers.areaTest, ksPValue: numbers.ksPValue, ks2Ratio: numbers.ks2RatioTest,
            originalMeanMbps: numbers.originalMeanMbps, controlMeanMbps: numbers.controlMeanMbps)
        var reason = numbers.insufficientData
        if reason == nil, decision.verdict != .differentiation, let originalSamples, let controlSamples {
            reason = DifferentiationConfiguration(minimumPositiveSamples: configuration.minimumPositiveSamples)
                .insufficientDataReason(
                    originalValues: originalSamples.droppingLastSample().mbps,
                    controlValues: controlSamples.droppingLastSample().mbps)
        }
        if reason != nil {
            decision = VerdictDecision(verdict: .inconclusive, direction: nil, thresholds: decision.thresholds)
        }
        var areaTest = numbers.areaTest
        if numbers.insufficientData != nil {
            // Our server then answers a conventional ±1 (see the server's AnalyzerAPI); the true area_test follows
            // from the two means, which it answers as they are.
            let larger = max(numbers.originalMeanMbps, numbers.controlMeanMbps)
            areaTest = larger > 0 ? (numbers.controlMeanMbps - numbers.originalMeanMbps) / larger : 0
        }
        return AnalysisSummary(
            areaTest: areaTest, ks2RatioTest: numbers.ks2RatioTest,
            originalMeanMbps: numbers.originalMeanMbps, controlMeanMbps: numbers.controlMeanMbps,
            ksStatistic: numbers.ksStatistic, ksPValue: numbers.ksPValue, verdict: decision.verdict,
            direction: decision.direction, thresholds: decision.thresholds, note: reason)
    }

    /// The analyzer client of `address` with this configuration's port, TLS trust and timing.
    func analyzerClient(address: String, tls: NIOSSLContext?) -> AnalyzerClient {
        AnalyzerClient(
            http: HTTPClient(
                tls: configuration.analyzerTLS ? tls : nil, connectTimeout: configuration.timing.connect,
                requestTimeout: configuration.timing.httpRequest),
            host: address, port: configuration.analyzerPort, timing: configuration.timing,
            logger: configuration.logger)
    }
}

/// The server's answers to address discovery (`/WHATSMYIPMAN`) within one test, per server port, so that a test of
/// many replays (the adaptive verdict's rounds: twenty or more) asks once per port instead of once per replay. On a
/// 150-ms path the two round trips of each discovery were a tenth of a round's time. A failed discovery is kept
/// too: asking again would cost every later replay the same timeouts. One test's client address does not change
/// between its rounds; a new test asks again.
final class PublicAddressCache: Sendable {
    private let answers = Mutex<[Int: String?]>([:])

    init() {}

    /// The answer recorded for `port`: the address, `.some(nil)` when the discovery failed, `nil` when not asked.
    func answer(port: Int) -> String?? {
        answers.withLock { $0[port] }
    }

    /// Records what the discovery on `port` answered.
    func record(_ address: String?, port: Int) {
        answers.withLock { $0[port] = .some(address) }
    }
}
