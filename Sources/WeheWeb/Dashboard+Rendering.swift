import Foundation
import Hummingbird

extension Dashboard {
    /// The history page as served at `/` (for benchmarks and tools that render without a server).
    package func renderHistoryPage(language: Language) async throws -> String {
        try await historyHTML(requestInfo(path: configuration.personPath + "/", language: language))
    }

    /// The operator overview as served at `/operator/` with the default range.
    package func renderOperatorPage(language: Language) async throws -> String {
        try await operatorHTML(requestInfo(path: configuration.operatorPath + "/", language: language))
    }

    private func requestInfo(path: String, language: Language) -> RequestInfo {
        let request = Request(
            head: HTTPRequest(
                method: .get, scheme: "http", authority: "localhost", path: path + "?lang=" + language.rawValue),
            body: RequestBody(buffer: ByteBuffer()))
        return RequestInfo(request: request, configuration: configuration)
    }
}
