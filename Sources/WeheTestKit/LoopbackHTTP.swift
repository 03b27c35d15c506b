import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Plain HTTP/1.1 requests to a server the test started (a dashboard, a `wehe-server` page), over SwiftNIO.
///
/// Why not `URLSession`: on Linux it hands libcurl's sockets to libdispatch read and write sources, and tearing
/// those down races the sockets' close. That race belongs to the family that crashes the dispatch manager thread in
/// `_dispatch_event_loop_drain` (swift-corelibs-foundation narrowed it, not closed it), and one such crash ends the
/// whole test process and every suite in it. Here each request is one connection on NIO's event loops, closed by
/// the server after the answer (`Connection: close`), so nothing reaches libdispatch.
public enum LoopbackHTTP {
    /// An answer: the last one when redirects were followed.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// The address that gave this answer (where redirects ended).
        public var url: String
        /// The header fields, in the order they came.
        public var headers: [(name: String, value: String)]
        /// The body, as UTF-8.
        public var body: String

        /// The first value of a header field (case-insensitive name).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// The request could not be made, or no answer came in time.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// GET `address`, following redirects.
    public static func get(_ address: String, timeout: Duration = .seconds(60)) async throws -> Response {
        try await send(method: .GET, address: address, form: nil, timeout: timeout)
    }

    /// POST a form to `address`; a redirect (301, 302, 303) is followed with a GET, as browsers do.
    public static func post(_ address: String, form: String, timeout: Duration = .seconds(60)) async throws
        -> Response
    {
        try await send(method: .POST, address: address, form: form, timeout: timeout)
    }

    private static func send(method: HTTPMethod, address: String, form: String?, timeout: Duration) async throws
        -> Response
    {
        var method = method
        var form = form
        var current = address
        // A bound on redirects, as every client has: a loop between two pages is an error, not a hang.
        for _ in 0..<10 {
            let (asked, sent, posted) = (current, method, form)
            let response = try await withDeadline(timeout, address: asked) {
                try await exchange(method: sent, address: asked, form: posted)
            }
            guard [301, 302, 303, 307, 308].contains(response.status), let location = response.header("Location")
            else { return response }
            guard let base = URL(string: current), let next = URL(string: location, relativeTo: base) else {
                throw Failure(description: "\(current) redirected to an address that does not parse: \(location)")
            }
            current = next.absoluteString
            if [301, 302, 303].contains(response.status) {
                method = .GET
                form = nil
            }
        }
        throw Failure(description: "\(address): more than 10 redirects")
    }

    private static func withDeadline(
        _ timeout: Duration, address: String, _ work: @escaping @Sendable () async throws -> Response
    ) async throws -> Response {
        try await withThrowingTaskGroup(of: Response?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let response = first else {
                throw Failure(description: "\(address): no whole answer within \(timeout)")
            }
            return response
        }
    }

    private static func exchange(method: HTTPMethod, address: String, form: String?) async throws -> Response {
        guard let url = URLComponents(string: address), url.scheme == "http", let host = url.host else {
            throw Failure(description: "not a plain HTTP address: \(address)")
        }
        let port = url.port ?? 80
        // The path and query as written, escapes kept (`%40`, `%2F` mean something else unescaped).
        var target = url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath
        if let query = url.percentEncodedQuery { target += "?" + query }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http1_1, method: method, uri: target)
            head.headers.add(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
            head.headers.add(name: "Connection", value: "close")
            let body = form.map { ByteBuffer(string: $0) }
            if let body {
                head.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                head.headers.add(name: "Content-Length", value: "\(body.readableBytes)")
            }
            // The whole request in one write and one flush: written part by part, a server that has what it needs
            // (a GET's head, a form's head and body) may answer and close before the next part is written, and that
            // write then fails with "I/O on closed channel" (seen under the full parallel run).
            var parts: [HTTPClientRequestPart] = [.head(head)]
            if let body { parts.append(.body(.byteBuffer(body))) }
            parts.append(.end(nil))
            try await outbound.write(contentsOf: parts)
            var answer: HTTPResponseHead?
            var received = ByteBuffer()
            for try await part in inbound {
                switch part {
                case .head(let responseHead):
                    answer = responseHead
                case .body(var chunk):
                    received.writeBuffer(&chunk)
                case .end:
                    guard let answer else { throw Failure(description: "\(address): an answer without a head") }
                    return Response(
                        status: Int(answer.status.code), url: address,
                        headers: answer.headers.map { (name: $0.name, value: $0.value) },
                        body: String(buffer: received))
                }
            }
            throw Failure(description: "\(address): the connection closed before the answer ended")
        }
    }
}
