import NIOCore
import Testing
import WeheServer
import WeheTestKit

@Suite("Analyzer /healthz", .timeLimit(.minutes(5)))
struct HealthzTests {
    @Test("GET /healthz on the analyzer port answers 200 with a JSON status while the server runs")
    func healthy() async throws {
        try await ServerHarness.run { server in
            let port = try #require(server.ports.analyzerPlain)
            let connection = try await RawConnection.connect(port: port)
            let answer = try await connection.channel.executeThenClose { inbound, outbound in
                try await outbound.write(
                    ByteBuffer(string: "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
                var text = ""
                for try await chunk in inbound { text += String(buffer: chunk) }
                return text
            }
            #expect(answer.hasPrefix("HTTP/1.1 200"))
            #expect(answer.hasSuffix(#"{"status": "ok"}"#))
        }
    }
}
