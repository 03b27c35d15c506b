import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import WeheCore
import WeheStore
import WeheWire

/// Fetches the other server's measurements for a WeHeY localization (protocol.md 12 step 6):
/// `GET https://<peer>:<port>/Results?command=getMeasurements&measurementType=…`, verified against the configured CA
/// and signed with the fleet secret (`FleetAuthenticator`). One request per measurement, `Connection: close`,
/// bounded in time and size. Every failure comes back as a `ReplayServerError` with code `.peer` and a reason that
/// the localization note repeats.
///
/// Each signed request costs the peer a remembered nonce, and `localize` (which anyone may call) triggers them, so
/// the requests to each peer are bounded: at most `budget.perMinute` a minute (a burst of as many), and a
/// measurement asked again within `PeerAnswerCache.lifetime` is answered from `cache` without a new request.
struct PeerMeasurements: Sendable {
    /// CA certificate file that peer servers' certificates chain to; `nil` asks no peer (signed requests never go
    /// over plain HTTP).
    let caCertificatePath: String?
    /// Analyzer port of peers.
    let port: Int
    /// Longest time for one request, connection included.
    let timeout: Duration
    /// Signs the requests; `nil` sends them unsigned (the peer will refuse).
    let authenticator: FleetAuthenticator?
    /// Wall clock for the signature date.
    let now: @Sendable () -> Date
    /// Signed requests allowed to each peer (keyed by host name), a minute.
    let budget: RateLimiter
    /// Recent successful answers.
    let cache: PeerAnswerCache
    /// Largest answer accepted (a loss timeline of 90 000 readings is about 3 MB of JSON).
    static let maximumBytes = 8 << 20

    init(
        caCertificatePath: String?, port: Int, timeout: Duration, authenticator: FleetAuthenticator?,
        requestsPerMinute: Int, now: @escaping @Sendable () -> Date, cache: PeerAnswerCache = PeerAnswerCache()
    ) {
        self.caCertificatePath = caCertificatePath
        self.port = port
        self.timeout = timeout
        self.authenticator = authenticator
        self.now = now
        self.budget = RateLimiter(perMinute: Double(requestsPerMinute), burst: requestsPerMinute, capacity: 4_096)
        self.cache = cache
    }

    /// The original replay's throughput samples (Mbit/s) of `userID/historyCount` on `host`.
    func clientThroughput(host: String, userID: String, historyCount: Int) async -> Result<[Double], ReplayServerError>
    {
        let result = await measurement(
            host: host, type: "clientXputs", userID: userID, historyCount: historyCount, kwargs: "{}")
        return result.flatMap { value in
            guard case .array(let lists) = value, case .array(let values)? = lists.first,
                let samples = Self.numbers(values), samples.allSatisfy({ $0 >= 0 })
            else { return .failure(ReplayServerError(.peer, "\(host): clientXputs answer is malformed")) }
            return .success(samples)
        }
    }

    /// The loss timeline of the original replay `userID/historyCount` on `host`: `minRttAndDuration`, then
    /// `lossRatios` at the resolution of the peer's readings.
    func loss(host: String, userID: String, historyCount: Int) async -> Result<ReplayLossRecord, ReplayServerError> {
        let summary = await measurement(
            host: host, type: "minRttAndDuration", userID: userID, historyCount: historyCount, kwargs: "{}")
        let minimumRTT: Double
        let duration: Double
        switch summary {
        case .failure(let error): return .failure(error)
        case .success(let value):
            guard let rtt = value["minRtt"].flatMap(Self.number), let length = value["duration"].flatMap(Self.number),
                rtt > 0, length >= 0
            else {
                return .failure(
                    ReplayServerError(.peer, "\(host): minRttAndDuration answer is malformed or has no RTT"))
            }
            minimumRTT = rtt
            duration = length
        }
        let frame = await measurement(
            host: host, type: "lossRatios", userID: userID, historyCount: historyCount,
            kwargs: #"{"resolution":"readings"}"#)
        return frame.flatMap { value in
            guard value["columns"] == .array([.string("time"), .string("bytesSent"), .string("bytesLost")]),
                case .array(let rows)? = value["data"]
            else { return .failure(ReplayServerError(.peer, "\(host): lossRatios answer is not a reading frame")) }
            var samples: [ReplayLossRecord.Sample] = []
            samples.reserveCapacity(rows.count)
            for row in rows {
                guard case .array(let cells) = row, let numbers = Self.numbers(cells), numbers.count == 3 else {
                    return .failure(ReplayServerError(.peer, "\(host): lossRatios row is malformed"))
                }
                samples.append(.init(time: numbers[0], bytesSent: numbers[1], bytesLost: numbers[2]))
            }
            let record = ReplayLossRecord(
                key: ReplayKey(userID: userID, historyCount: historyCount, testID: 0), recordedAt: now(),
                minimumRTT: minimumRTT, duration: duration, samples: samples)
            do throws(WeheStoreError) {
                return .success(try record.validated(database: host))
            } catch {
                return .failure(ReplayServerError(.peer, "\(host): loss timeline refused: \(error.message)"))
            }
        }
    }

    /// The merge-point probe delays of the original replay `userID/historyCount` on `host` (our extension
    /// `mergePointProbes`).
    func mergePointProbes(host: String, userID: String, historyCount: Int) async
        -> Result<MergePointProbeRecord, ReplayServerError>
    {
        let result = await measurement(
            host: host, type: "mergePointProbes", userID: userID, historyCount: historyCount, kwargs: "{}")
        return result.flatMap { value in
            guard let record = Self.mergePointProbes(value) else {
                return .failure(ReplayServerError(.peer, "\(host): mergePointProbes answer is malformed"))
            }
            return .success(record)
        }
    }

    /// Reads a `mergePointProbes` result: four lists of at most `maximumProbes` delays (seconds, finite, ≥ 0, or
    /// `null` for no answer) and the TTL.
    static func mergePointProbes(_ value: JSONValue) -> MergePointProbeRecord? {
        let maximumProbes = 1_000
        guard let ttlValue = value["mergeTTL"], let ttl = number(ttlValue), let mergeTTL = Int(exactly: ttl) else {
            return nil
        }
        func delays(_ name: String) -> [Double?]? {
            guard case .array(let items)? = value[name], items.count <= maximumProbes else { return nil }
            var result: [Double?] = []
            for item in items {
                if item == .null {
                    result.append(nil)
                } else if let delay = number(item), delay >= 0 {
                    result.append(delay)
                } else {
                    return nil
                }
            }
            return result
        }
        guard let flow = delays("flowToMergePoint"), let base = delays("baselineToMergePoint"),
            let flowPath = delays("flowToClient"), let basePath = delays("baselineToClient")
        else { return nil }
        var note: String?
        if case .string(let text)? = value["note"] { note = String(text.prefix(200)) }
        return MergePointProbeRecord(
            mergeTTL: mergeTTL, flowToMergePoint: flow, baselineToMergePoint: base, flowToClient: flowPath,
            baselineToClient: basePath, note: note)
    }

    /// One `getMeasurements` request; the `result` of a successful answer.
    private func measurement(
        host: String, type: String, userID: String, historyCount: Int, kwargs: String
    ) async -> Result<JSONValue, ReplayServerError> {
        let query = FormParameters.encode([
            ("command", "getMeasurements"), ("measurementType", type), ("userID", userID),
            ("historyCount", String(historyCount)), ("testID", "0"), ("kwargs", kwargs),
        ])
        let target = "/Results?" + query
        let cacheKey = FleetAuthenticator.hostName(host) + " " + target
        if let cached = cache.answer(cacheKey) { return .success(cached) }
        guard budget.allow(FleetAuthenticator.hostName(host)) else {
            return .failure(
                ReplayServerError(
                    .peer,
                    "\(host) not asked for \(type): this server's budget of \(Int(budget.perMinute)) signed requests "
                        + "a minute to it is spent; try again in a minute"))
        }
        let status: Int
        let body: String
        do {
            (status, body) = try await get(host: host, target: target)
        } catch let error as ReplayServerError {
            return .failure(error)
        } catch {
            return .failure(ReplayServerError(.peer, "\(host): \(type) request failed: \(error)"))
        }
        let root = try? JSONValue.parse(Array(body.utf8))
        guard status == 200, let root, root["success"] == .bool(true), let result = root["measurements"]?["result"]
        else {
            var reason = "HTTP \(status)"
            if case .string(let message)? = root?["error"] { reason += ", \(message)" }
            return .failure(ReplayServerError(.peer, "\(host) refused \(type): \(reason)"))
        }
        cache.store(cacheKey, result, bytes: body.utf8.count)
        return .success(result)
    }

    private func get(host: String, target: String) async throws -> (status: Int, body: String) {
        // The request is signed: it goes only over TLS, to a peer whose certificate chains to the configured CA and
        // names the peer (its DNS name, or for an address literal an IP subject alternative name).
        guard let caCertificatePath else {
            throw ReplayServerError(
                .peer, "\(host) not asked: signed peer requests go only over HTTPS (no peer CA configured)")
        }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file(caCertificatePath)
        configuration.certificateVerification = .fullVerification
        configuration.minimumTLSVersion = .tlsv12
        let tls = try NIOSSLContext(configuration: configuration)
        let serverName: String? = AddressText.isIPAddress(host) ? nil : host
        let connectTimeout = TimeAmount(timeout)
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(connectTimeout)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ReplayServerError(.peer, "\(host):\(port) unreachable: \(error)")
        }
        let timedOut = ManagedAtomicFlag()
        let deadline = channel.channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            timedOut.set()
            channel.channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        var headers = "Host: \(host.contains(":") ? "[\(host)]" : host)\r\nConnection: close\r\n"
        for (name, value) in authenticator?.headers(method: "GET", host: host, target: target, now: now()) ?? [] {
            headers += "\(name): \(value)\r\n"
        }
        let request = "GET \(target) HTTP/1.1\r\n\(headers)\r\n"
        let response: String
        do {
            response = try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(string: request))
                var received = ByteBuffer()
                for try await var chunk in inbound {
                    guard received.readableBytes + chunk.readableBytes <= Self.maximumBytes else {
                        throw ReplayServerError(.peer, "\(host): answer larger than \(Self.maximumBytes) bytes")
                    }
                    received.writeBuffer(&chunk)
                }
                return String(buffer: received)
            }
        } catch let error as ReplayServerError {
            throw error
        } catch {
            if timedOut.isSet { throw ReplayServerError(.peer, "\(host): no answer within \(timeout)") }
            throw ReplayServerError(.peer, "\(host): connection failed: \(error)")
        }
        guard let split = response.range(of: "\r\n\r\n") else {
            if timedOut.isSet { throw ReplayServerError(.peer, "\(host): no answer within \(timeout)") }
            throw ReplayServerError(.peer, "\(host): incomplete HTTP answer")
        }
        let head = response[..<split.lowerBound]
        let statusLine = head.split(separator: "\r\n").first ?? ""
        let fields = statusLine.split(separator: " ")
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/1."), let status = Int(fields[1]) else {
            throw ReplayServerError(.peer, "\(host): malformed HTTP status line")
        }
        let body = String(response[split.upperBound...])
        guard head.lowercased().contains("transfer-encoding: chunked") else { return (status, body) }
        return (status, Self.dechunk(body))
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .number(let number, _) where number.isFinite: number
        case .string(let text): Double(text).flatMap { $0.isFinite ? $0 : nil }
        default: nil
        }
    }

    private static func numbers(_ values: [JSONValue]) -> [Double]? {
        var numbers: [Double] = []
        numbers.reserveCapacity(values.count)
        for value in values {
            guard let number = number(value) else { return nil }
            numbers.append(number)
        }
        return numbers
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

/// Successful `getMeasurements` answers of peers for `lifetime`, keyed by peer and request target: a `localize`
/// asked again (a client's retry, or one caller repeating it) costs the peer no new signed request. Bounded in
/// entries and in answer bytes; the oldest answers go first.
final class PeerAnswerCache: Sendable {
    private struct Entry {
        var value: JSONValue
        var bytes: Int
        var stored: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var bytes = 0
    }

    private let state = Mutex(State())
    /// How long an answer is reused. A replay's measurements do not change once stored.
    let lifetime: Duration
    /// Most answers kept.
    let maximumEntries: Int
    /// Most answer bytes (JSON text) kept.
    let maximumBytes: Int

    init(lifetime: Duration = .seconds(300), maximumEntries: Int = 256, maximumBytes: Int = 32 << 20) {
        self.lifetime = lifetime
        self.maximumEntries = maximumEntries
        self.maximumBytes = maximumBytes
    }

    /// The answer stored for `key` if it is younger than `lifetime`.
    func answer(_ key: String, now: ContinuousClock.Instant = .now) -> JSONValue? {
        state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            guard entry.stored.duration(to: now) < lifetime else {
                Self.remove(key, from: &state)
                return nil
            }
            return entry.value
        }
    }

    /// Keeps `value` (`bytes` of JSON text) for `key`, forgetting the oldest answers beyond the bounds.
    func store(_ key: String, _ value: JSONValue, bytes: Int, now: ContinuousClock.Instant = .now) {
        guard bytes <= maximumBytes else { return }
        state.withLock { state in
            Self.remove(key, from: &state)
            while let oldest = state.order.first,
                state.order.count >= maximumEntries || state.bytes + bytes > maximumBytes
                    || state.entries[oldest].map({ $0.stored.duration(to: now) >= lifetime }) == true
            {
                Self.remove(oldest, from: &state)
            }
            state.entries[key] = Entry(value: value, bytes: bytes, stored: now)
            state.order.append(key)
            state.bytes += bytes
        }
    }

    /// Answers kept now.
    var count: Int { state.withLock { $0.entries.count } }

    private static func remove(_ key: String, from state: inout State) {
        guard let entry = state.entries.removeValue(forKey: key) else { return }
        state.bytes -= entry.bytes
        state.order.removeAll { $0 == key }
    }
}
