import NIOSSL
import WeheWire

/// Recorded tests (`wehe record`) the client may send to a server that does not have them: when the server answers
/// a replay's declaration with "unknown replay" (`0;1`), the trace file of that replay name is uploaded to the
/// analyzer's `/client-traces` (our extension, `--accept-client-traces` on the server) and the replay is declared
/// once more. The server derives what it sends from the uploaded client trace and holds it only for this user id
/// and address, until the replay takes it.
public struct ClientTraceUpload: Sendable {
    /// The client trace file (`*.pcap_client_all.json`) of each replay name that may be uploaded: the recorded
    /// tests' originals and controls, nothing else.
    public var files: [String: String]
    /// Told the replay name and the bytes before they are sent.
    public var announce: @Sendable (_ replayName: String, _ bytes: Int) -> Void
    /// Longest the upload may take (the server bounds it too, by its analyzer request timeout).
    public var timeout: Duration

    /// Creates the set of uploadable traces.
    public init(
        files: [String: String], timeout: Duration = .seconds(60),
        announce: @escaping @Sendable (_ replayName: String, _ bytes: Int) -> Void
    ) {
        self.files = files
        self.timeout = timeout
        self.announce = announce
    }

    /// The path of the analyzer's routes.
    static let path = "/client-traces"

    /// What a server without the option answers, reworded for people (the server's own reason is kept after it).
    public static let refusedMessage =
        "this server does not run tests it does not have; ask its operator to enable --accept-client-traces, "
        + "or run your own: wehe-server serve --replays <dir>"

    /// Uploads the trace of `replayName` to the analyzer of `host`.
    /// - Throws: `.clientTracesRefused` when the server does not take it (with its reason), `.missingTrace` when
    ///   the file cannot be read, network errors.
    func upload(
        replayName: String, userID: String, host: String, configuration: ReplayClientConfiguration,
        tls: NIOSSLContext?
    ) async throws(ReplayClientError) {
        guard let file = files[replayName] else {
            throw ReplayClientError(.admissionRefused, "the server does not have the test \(replayName)")
        }
        let body: [UInt8]
        do {
            body = try ReplayFileReader().read(file)
        } catch {
            throw ReplayClientError(.missingTrace, "cannot read the recorded trace \(file): \(error.message)")
        }
        announce(replayName, body.count)
        let http = HTTPClient(
            tls: configuration.analyzerTLS ? tls : nil, connectTimeout: configuration.timing.connect,
            requestTimeout: timeout)
        let query = FormParameters.encode([("userID", userID)])
        let response = try await http.request(
            method: .POST, host: host, port: configuration.analyzerPort, path: Self.path + "?" + query, body: body,
            contentType: "application/json", what: "the analyzer")
        guard response.status != 200 else { return }
        var reason = "HTTP status \(response.status)"
        if case .string(let text)? = (try? JSONValue.parse(response.body))?["error"] { reason = text }
        if response.status == 403 || response.status == 404 || response.status == 405 {
            // 404/405: a server without the extension (the published one) has no such route.
            throw ReplayClientError(.clientTracesRefused, Self.refusedMessage + " (the server said: \(reason))")
        }
        throw ReplayClientError(.clientTracesRefused, "the server refused the recorded test \(replayName): \(reason)")
    }
}
