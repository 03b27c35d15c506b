import NIOCore

/// A minimal HTTP/1.1 client for tests: one request with `Connection: close`, the body of the answer.
enum HTTPProbe {
    static func request(
        port: Int, method: String = "GET", path: String, body: String = "", from source: String? = nil
    ) async throws -> String {
        let connection = try await RawConnection.connect(port: port, from: source)
        let text = try await connection.channel.executeThenClose { inbound, outbound in
            var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            if method == "POST" {
                head += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n"
            }
            try await outbound.write(ByteBuffer(string: head + "\r\n" + body))
            var text = ""
            for try await chunk in inbound { text += String(buffer: chunk) }
            return text
        }
        guard let range = text.range(of: "\r\n\r\n") else { return text }
        return String(text[range.upperBound...])
    }
}
