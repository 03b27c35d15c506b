import NIOSSL
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
        onProgress: @escaping @Sendable (ReplayProgress) -> Void
    ) async throws(ReplayClientError) -> ReplaySession.Outcome {
        var realIP = "127.0.0.1"
        if trace.transport == .tcp, discoversAddress(address), let port = trace.flows.first?.serverPort,
            let ip = try await whatsMyIP(address: address, port: Int(port)), ip != "127.0.0.1"
        {
            realIP = ip
        }
        let declaration = IDDeclaration(
            userID: configuration.userID, testID: role.rawValue, replayName: trace.name,
            extraString: configuration.extraString, historyCount: historyCount, endOfTest: endOfTest,
            realIP: realIP, clientVersion: configuration.clientVersion)
        let session = ReplaySession(
            serverAddress: address, configuration: configuration, tls: configuration.sideChannelTLS ? tls : nil,
            declaration: declaration, trace: trace, appDuration: appDuration, onProgress: onProgress)
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
    /// - Throws: `ReplayClientError` (`.analyzerFailed`, `.resultMismatch`, network errors, `.cancelled`).
    func analysis(address: String, tls: NIOSSLContext?, historyCount: Int) async throws(ReplayClientError)
        -> AnalysisSummary
    {
        let analyzer = analyzerClient(address: address, tls: tls)
        let numbers = try await analyzer.analyse(userID: configuration.userID, historyCount: historyCount)
        let decision = configuration.verdictRules.decide(
            areaTest: numbers.areaTest, ksPValue: numbers.ksPValue, ks2Ratio: numbers.ks2RatioTest,
            originalMeanMbps: numbers.originalMeanMbps, controlMeanMbps: numbers.controlMeanMbps)
        return AnalysisSummary(
            areaTest: numbers.areaTest, ks2RatioTest: numbers.ks2RatioTest,
            originalMeanMbps: numbers.originalMeanMbps, controlMeanMbps: numbers.controlMeanMbps,
            ksStatistic: numbers.ksStatistic, ksPValue: numbers.ksPValue, verdict: decision.verdict,
            direction: decision.direction, thresholds: decision.thresholds)
    }

    /// The analyzer client of `address` with this configuration's port, TLS trust and timing.
    private func analyzerClient(address: String, tls: NIOSSLContext?) -> AnalyzerClient {
        AnalyzerClient(
            http: HTTPClient(
                tls: configuration.analyzerTLS ? tls : nil, connectTimeout: configuration.timing.connect,
                requestTimeout: configuration.timing.httpRequest),
            host: address, port: configuration.analyzerPort, timing: configuration.timing,
            logger: configuration.logger)
    }
}
