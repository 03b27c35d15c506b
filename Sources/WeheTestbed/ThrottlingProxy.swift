public import NIOCore
internal import NIOPosix

/// A userspace throttling middlebox: a TCP and UDP relay that classifies flows by their first bytes or by port and
/// shapes the matched ones with a token bucket.
///
/// It stands in for an ISP's DPI shaper in tests and demos that cannot use the kernel testbed
/// (`scripts/testbed.sh`, which needs root): point the client at the proxy's listening addresses and the proxy
/// at the server. Because it terminates TCP, throttling appears as a smooth application-level pace (no queue
/// growth, no loss recovery); see ``ThrottlingProxyConfiguration/Loss`` for what loss means here.
///
/// ```swift
/// let proxy = try ThrottlingProxy(configuration: .init(
///     routes: [.init(.tcp, listen: .init(host: "127.0.0.1", port: 0),
///                    upstream: .init(host: "127.0.0.1", port: 8443))],
///     classifier: .patterns([Array("googlevideo".utf8)]),
///     shaping: .init(rateBitsPerSecond: 1_500_000)))
/// try await proxy.withRunning { bound in
///     // connect to bound[0].listenAddress …
/// }
/// ```
public final class ThrottlingProxy: Sendable {
    /// A route and the address its listener actually bound (the system's port when the route asked for 0).
    public struct BoundRoute: Sendable, Hashable, CustomStringConvertible {
        /// The configured route.
        public var route: ThrottlingProxyConfiguration.Route
        /// The bound listening address.
        public var listenAddress: ThrottlingProxyConfiguration.Endpoint
        /// `tcp 127.0.0.1:40123 -> 127.0.0.1:443`.
        public var description: String {
            "\(route.transport.rawValue) \(listenAddress) -> \(route.upstream)" + (route.isClassified ? "" : " (plain)")
        }
    }

    /// The configuration, as validated at creation.
    public let configuration: ThrottlingProxyConfiguration
    private let group: any EventLoopGroup
    private let counters = StatisticsCounters()

    /// Creates a proxy; nothing is bound until ``run(onReady:)`` or ``withRunning(_:)``. Without an event loop
    /// group the proxy uses SwiftNIO's shared one.
    ///
    /// - Throws: ``WeheTestbedError/Code/invalidConfiguration`` for a value out of range.
    public init(
        configuration: ThrottlingProxyConfiguration,
        eventLoopGroup: (any EventLoopGroup)? = nil
    ) throws(WeheTestbedError) {
        try configuration.validate()
        self.configuration = configuration
        group = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
    }

    /// The counters so far.
    public var statistics: ThrottlingProxyStatistics { counters.snapshot }

    /// Binds every route, runs `body` with the bound addresses while relaying, then stops relaying and closes
    /// every socket (also when `body` throws).
    ///
    /// - Throws: ``WeheTestbedError/Code/bindFailed`` when a listener cannot be opened, or what `body` throws.
    public func withRunning<Result: Sendable>(
        _ body: (_ bound: [BoundRoute]) async throws -> Result
    ) async throws -> Result {
        let listeners = try await bindAll()
        let context = RelayContext(configuration: configuration, group: group, counters: counters)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            for listener in listeners {
                group.addTask { try await listener.serve(context) }
            }
            defer { group.cancelAll() }
            return try await body(listeners.map(\.bound))
        }
    }

    /// Binds every route, calls `onReady` with the bound addresses, and relays until the task is cancelled.
    ///
    /// - Throws: ``WeheTestbedError/Code/bindFailed`` when a listener cannot be opened.
    public func run(onReady: @Sendable (_ bound: [BoundRoute]) -> Void = { _ in }) async throws {
        let listeners = try await bindAll()
        let context = RelayContext(configuration: configuration, group: group, counters: counters)
        onReady(listeners.map(\.bound))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for listener in listeners {
                group.addTask { try await listener.serve(context) }
            }
            try await group.waitForAll()
        }
    }

    /// A bound listener of either transport.
    private enum Listener: Sendable {
        case tcp(ThrottlingProxyConfiguration.Route, TCPRelay.Listener, BoundRoute)
        case udp(ThrottlingProxyConfiguration.Route, UDPRelay.Socket, BoundRoute)

        var bound: BoundRoute {
            switch self {
            case .tcp(_, _, let bound), .udp(_, _, let bound): bound
            }
        }

        func serve(_ context: RelayContext) async throws {
            switch self {
            case .tcp(let route, let listener, _): try await TCPRelay(route: route, context: context).serve(listener)
            case .udp(let route, let socket, _): try await UDPRelay(route: route, context: context).serve(socket)
            }
        }

        func close() async {
            switch self {
            case .tcp(_, let listener, _): try? await listener.executeThenClose { _ in }
            case .udp(_, let socket, _): try? await socket.executeThenClose { _, _ in }
            }
        }
    }

    private func bindAll() async throws(WeheTestbedError) -> [Listener] {
        var listeners: [Listener] = []
        for route in configuration.routes {
            do {
                switch route.transport {
                case .tcp:
                    let listener = try await TCPRelay.bind(route, group: group)
                    listeners.append(.tcp(route, listener, Self.bound(route, listener.channel.localAddress)))
                case .udp:
                    let socket = try await UDPRelay.bind(route, group: group)
                    listeners.append(.udp(route, socket, Self.bound(route, socket.channel.localAddress)))
                }
            } catch {
                for listener in listeners { await listener.close() }
                throw WeheTestbedError(
                    .bindFailed,
                    "cannot listen on \(route.transport.rawValue) \(route.listen)",
                    field: "routes",
                    underlying: error
                )
            }
        }
        return listeners
    }

    private static func bound(_ route: ThrottlingProxyConfiguration.Route, _ address: SocketAddress?) -> BoundRoute {
        var endpoint = route.listen
        if let port = address?.port { endpoint.port = port }
        return BoundRoute(route: route, listenAddress: endpoint)
    }
}
