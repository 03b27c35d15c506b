import Logging
import NIOHTTP1
import WeheWire

/// Talks to the analyzer (`/Results`, protocol.md section 9): `POST command=analyze` (form body, retried when no
/// answer comes back), then `GET command=singleResult` with growing pauses until the result is ready. It never asks
/// again after a successful answer (the reference server does not answer a second query), and checks that the
/// result belongs to this user and test.
struct AnalyzerClient: Sendable {
    let http: HTTPClient
    let host: String
    let port: Int
    let timing: ReplayClientConfiguration.Timing
    let logger: Logger

    /// Requests the analysis of `(userID, historyCount)` and waits for its numbers.
    func analyse(userID: String, historyCount: Int, testID: Int = 1) async throws(ReplayClientError) -> SingleResult {
        try await requestAnalysis(userID: userID, historyCount: historyCount, testID: testID)
        return try await pollResult(userID: userID, historyCount: historyCount, testID: testID)
    }

    /// Tells the server which datagrams of a UDP replay arrived (`DatagramReceipt`, our extension), so that it has
    /// the replay's loss timeline. One attempt.
    /// - Returns: `nil` when the server took the report, else why not (a server without the extension, such as the
    ///   published one, refuses the unknown command).
    func reportDatagrams(
        userID: String,
        historyCount: Int,
        testID: Int,
        received: [UInt32]
    ) async throws(ReplayClientError) -> String? {
        let form = FormParameters.encode([
            ("command", DatagramReceipt.command), ("userID", userID), ("historyCount", String(historyCount)),
            ("testID", String(testID)), ("received", DatagramReceipt.encode(received)),
        ])
        let response = try await http.request(
            method: .POST, host: host, port: port, path: "/Results", body: Array(form.utf8),
            contentType: "application/x-www-form-urlencoded", what: "the analyzer")
        do {
            let answer = try Self.decode(response.body)
            return answer.success ? nil : (answer.message ?? "refused")
        } catch {
            return error.message
        }
    }

    private func requestAnalysis(userID: String, historyCount: Int, testID: Int) async throws(ReplayClientError) {
        let form = FormParameters.encode([
            ("command", "analyze"), ("userID", userID), ("historyCount", String(historyCount)),
            ("testID", String(testID)),
        ])
        var lastError: ReplayClientError?
        for attempt in 1...max(1, timing.analyzeAttempts) {
            do throws(ReplayClientError) {
                let response = try await http.request(
                    method: .POST, host: host, port: port, path: "/Results", body: Array(form.utf8),
                    contentType: "application/x-www-form-urlencoded", what: "the analyzer")
                let answer = try Self.decode(response.body)
                guard answer.success else {
                    throw ReplayClientError(
                        .analyzerFailed, "the analyzer refused the analysis: \(answer.message ?? "no reason given")")
                }
                return
            } catch {
                if error.code == .cancelled || error.code == .analyzerFailed || error.code == .tlsFailed { throw error }
                lastError = error
                logger.debug(
                    "analyze request failed", metadata: ["wehe.attempt": "\(attempt)", "wehe.error": "\(error)"])
                if attempt < timing.analyzeAttempts { try await pause(timing.firstPollDelay) }
            }
        }
        throw lastError ?? ReplayClientError(.analyzerFailed, "the analyzer did not answer")
    }

    private func pollResult(userID: String, historyCount: Int, testID: Int) async throws(ReplayClientError)
        -> SingleResult
    {
        // The Java client does not percent-encode the values; we do (the server decodes both).
        let path =
            "/Results?"
            + FormParameters.encode([
                ("userID", userID), ("command", "singleResult"), ("historyCount", String(historyCount)),
                ("testID", String(testID)),
            ])
        var delay = timing.firstPollDelay
        var lastMessage = "no answer"
        for attempt in 1...max(1, timing.pollAttempts) {
            try await pause(delay)
            delay = min(delay * timing.pollBackoff, timing.maximumPollDelay)
            let response: HTTPClient.Response
            do {
                response = try await http.request(
                    method: .GET, host: host, port: port, path: path, what: "the analyzer")
            } catch {
                if error.code == .cancelled || error.code == .tlsFailed { throw error }
                lastMessage = error.message
                continue
            }
            let parsed: Result<SingleResult, AnalyzerFailure>
            do {
                parsed = try SingleResult.parse(response.body)
            } catch {
                lastMessage = "unreadable answer (HTTP \(response.status)): \(error.message)"
                continue
            }
            switch parsed {
            case .success(let result):
                try Self.check(result, userID: userID, historyCount: historyCount)
                logger.debug("analysis result received", metadata: ["wehe.attempt": "\(attempt)"])
                return result
            case .failure(let failure) where failure.isNotReady:
                lastMessage = failure.message
            case .failure(let failure):
                throw ReplayClientError(.analyzerFailed, "the analyzer failed: \(failure.message)")
            }
        }
        throw ReplayClientError(
            .analyzerFailed,
            "the analyzer had no result after \(timing.pollAttempts) queries (last answer: \(lastMessage))")
    }

    /// The result must name this user (case-insensitive, trimmed) and this history count.
    static func check(_ result: SingleResult, userID: String, historyCount: Int) throws(ReplayClientError) {
        let theirs = result.userID.trimmingSpaces().lowercased()
        guard theirs == userID.trimmingSpaces().lowercased(), result.historyCount == historyCount else {
            throw ReplayClientError(
                .resultMismatch,
                "the analyzer answered for another test (user \(result.userID), test \(result.historyCount))")
        }
    }

    private static func decode(_ body: [UInt8]) throws(ReplayClientError) -> (success: Bool, message: String?) {
        let root: JSONValue
        do {
            root = try JSONValue.parse(body)
        } catch {
            throw ReplayClientError(.analyzerFailed, "the analyzer's answer is not JSON")
        }
        guard case .bool(let success)? = root["success"] else {
            throw ReplayClientError(.analyzerFailed, "the analyzer's answer has no 'success'")
        }
        if success { return (true, nil) }
        var message: String?
        if case .string(let text)? = root["error"] { message = text }
        return (false, message ?? root.serialized())
    }

    /// A GET of `path` asked again, with the polls' growing pauses and at most `pollAttempts` times in all, while the
    /// analyzer answers 503: the server says so when it could not act now and nothing changed (its store or its
    /// per-network analysis queue was busy), and that the request may come again. The last answer is returned
    /// whatever its status, with the number of times it was asked.
    func getAskingAgainWhileUnavailable(_ path: String, what: String) async throws(ReplayClientError) -> (
        response: HTTPClient.Response, asked: Int
    ) {
        var delay = timing.firstPollDelay
        var asked = 1
        var response = try await http.request(method: .GET, host: host, port: port, path: path, what: what)
        while response.status == 503, asked < max(1, timing.pollAttempts) {
            logger.debug("\(what) answered 503; asking again", metadata: ["after": "\(delay)"])
            try await pause(delay)
            delay = min(delay * timing.pollBackoff, timing.maximumPollDelay)
            response = try await http.request(method: .GET, host: host, port: port, path: path, what: what)
            asked += 1
        }
        return (response, asked)
    }

    private func pause(_ duration: Duration) async throws(ReplayClientError) {
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw ReplayClientError(.cancelled, "the test was cancelled")
        }
    }
}

extension String {
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while scalars.first?.isWhitespace == true { scalars.removeFirst() }
        while scalars.last?.isWhitespace == true { scalars.removeLast() }
        return String(scalars)
    }
}
