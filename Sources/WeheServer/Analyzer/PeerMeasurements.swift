import NIOCore
import NIOPosix
import NIOSSL
import WeheWire

/// Fetches a peer server's client throughput samples for a WeHeY localization (protocol.md 12 step 6):
/// `GET https://<peer>:<port>/Results?command=getMeasurements&measurementType=clientXputs&…`, verified against the
/// configured CA (the servers of a WeHeY pair share one). One request, `Connection: close`, bounded in time and size.
struct PeerMeasurements: Sendable {
    /// CA certificate file that peer servers' certificates chain to; `nil` uses plain HTTP.
    let caCertificatePath: String?
    /// Analyzer port of peers.
    let port: Int
    /// Longest time for the whole request.
    let timeout: Duration
    /// Largest answer accepted.
    static let maximumBytes = 4 << 20

    /// The original replay's samples (Mbit/s) of `userID/historyCount` on `host`, or `nil` when the peer has none or
    /// cannot be reached.
    func clientThroughput(host: String, userID: String, historyCount: Int) async -> [Double]? {
        let query = FormParameters.encode([
            ("command", "getMeasurements"), ("measurementType", "clientXputs"), ("userID", userID),
            ("historyCount", String(historyCount)), ("testID", "0"), ("kwargs", "{}"),
        ])
        guard let body = try? await get(host: host, path: "/Results?" + query),
            let root = try? JSONValue.parse(Array(body.utf8)), root["success"] == .bool(true),
            case .array(let lists)? = root["measurements"]?["result"], let first = lists.first,
            case .array(let values) = first
        else { return nil }
        var samples: [Double] = []
        for value in values {
            switch value {
            case .number(let number, _) where number.isFinite && number >= 0: samples.append(number)
            case .string(let text):
                if let number = Double(text), number.isFinite, number >= 0 { samples.append(number) }
            default: return nil
            }
        }
        return samples
    }

    private func get(host: String, path: String) async throws -> String {
        let tls: NIOSSLContext?
        if let caCertificatePath {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(caCertificatePath)
            configuration.certificateVerification = .noHostnameVerification
            tls = try NIOSSLContext(configuration: configuration)
        } else {
            tls = nil
        }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tls, serverHostname: nil))
                    }
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let deadline = channel.channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            channel.channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        let response = try await channel.executeThenClose { inbound, outbound in
            let hostHeader = host.contains(":") ? "[\(host)]" : host
            try await outbound.write(
                ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nConnection: close\r\n\r\n"))
            var received = ByteBuffer()
            for try await var chunk in inbound {
                guard received.readableBytes + chunk.readableBytes <= Self.maximumBytes else {
                    throw ReplayServerError(.protocolViolation, "peer answer larger than \(Self.maximumBytes) bytes")
                }
                received.writeBuffer(&chunk)
            }
            return String(buffer: received)
        }
        guard response.hasPrefix("HTTP/1.1 200"), let split = response.range(of: "\r\n\r\n") else {
            throw ReplayServerError(.protocolViolation, "peer answered without 200 OK")
        }
        let head = response[..<split.lowerBound].lowercased()
        let body = String(response[split.upperBound...])
        guard head.contains("transfer-encoding: chunked") else { return body }
        return Self.dechunk(body)
    }

    /// Joins the chunks of a chunked transfer-encoded body.
    static func dechunk(_ body: String) -> String {
        var bytes = Array(body.utf8)[...]
        var out: [UInt8] = []
        while let lineEnd = bytes.firstIndex(of: UInt8(ascii: "\r")) {
            let sizeText = String(decoding: bytes[bytes.startIndex..<lineEnd], as: UTF8.self)
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            guard start + size <= bytes.endIndex else { break }
            out.append(contentsOf: bytes[start..<(start + size)])
            bytes = bytes[min(bytes.endIndex, start + size + 2)...]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
