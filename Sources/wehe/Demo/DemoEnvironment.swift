import Foundation
import Logging
import ServiceLifecycle
import WeheClient
import WeheServer
import WeheStore
import WeheTestbed

/// The demo's private world: our server running inside this process on 127.0.0.1 (every port chosen by the system,
/// TLS with a throwaway CA), and optionally the userspace throttling middlebox on 127.0.0.2 in front of it. Nothing
/// listens beyond loopback and nothing is written outside a temporary directory, removed at the end.
enum DemoEnvironment {
    /// Where the client finds the server.
    struct Endpoints: Sendable {
        /// Address the client talks to (the middlebox's when one is in the path).
        var server: String
        /// TLS side-channel port.
        var sideChannelPort: Int
        /// HTTPS analyzer port.
        var analyzerPort: Int
        /// The throwaway CA the client trusts.
        var trustedPEM: String
    }

    /// What the middlebox slows: the flows its classifier recognises (given the server's TCP port map), to one rate.
    struct Throttle: Sendable {
        var rateBitsPerSecond: Int
        var classifier: @Sendable ([Int: Int]) -> ThrottlingProxyConfiguration.Classifier
    }

    /// Address of the in-process server.
    static let serverAddress = "127.0.0.1"
    /// Address of the middlebox: every server port is mirrored there, so the port map's port numbers stay valid
    /// while the client's traffic crosses the middlebox.
    static let middleboxAddress = "127.0.0.2"

    /// Starts the server (and the middlebox when `throttle` is given), runs `body`, then stops everything.
    /// `sampleCount` is the number of throughput samples the server asks for over a test's catalog time.
    /// - Throws: `CLIError` when the server or the middlebox cannot start, or what `body` throws.
    static func run<T: Sendable>(
        replays: String,
        throttle: Throttle?,
        sampleCount: Int = 100,
        logger: Logger,
        _ body: @Sendable (Endpoints) async throws -> T
    ) async throws -> T {
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("wehe-demo-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let certificates: CertificateFactory.Output
        let server: ReplayServer
        do {
            certificates = try CertificateFactory.issue(
                into: scratch + "/certs", hostNames: [serverAddress, middleboxAddress])
            var configuration = ReplayServerConfiguration.privateTLS(
                replayDirectory: replays, store: InMemoryResultStore(), logger: logger, address: serverAddress,
                dataDirectory: scratch, certificates: certificates)
            configuration.serverName = "wehe-demo"
            configuration.sampleCount = sampleCount
            configuration.limits.shutdownGracePeriod = .seconds(1)
            server = try ReplayServer(configuration: configuration)
        } catch {
            throw CLIError(code: .invalidInput, "the demo server cannot start: \(error)")
        }
        let trustedPEM: String
        do {
            trustedPEM = try String(contentsOfFile: certificates.caCertificate, encoding: .utf8)
        } catch {
            throw CLIError(code: .missingInput, "the demo CA certificate is unreadable: \(error.localizedDescription)")
        }
        let services = ServiceGroup(configuration: .init(services: [server], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            let ports: ReplayServer.ListeningPorts
            do {
                ports = try await server.listeningPorts()
            } catch {
                throw CLIError(code: .unreachable, "the demo server cannot listen on loopback: \(error)")
            }
            guard let side = ports.sideChannelTLS, let analyzer = ports.analyzerTLS else {
                throw CLIError(code: .unreachable, "the demo server did not open its side channel and analyzer")
            }
            let direct = Endpoints(
                server: serverAddress, sideChannelPort: side, analyzerPort: analyzer, trustedPEM: trustedPEM)
            let value: T
            do {
                if let throttle {
                    value = try await throughMiddlebox(ports: ports, direct: direct, throttle: throttle, body)
                } else {
                    value = try await body(direct)
                }
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
            // The tests are over: the server stops admitting and exits at once (no session is running).
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return value
        }
    }

    /// Runs `body` with the client pointed at the middlebox, which mirrors every server port on 127.0.0.2.
    private static func throughMiddlebox<T: Sendable>(
        ports: ReplayServer.ListeningPorts,
        direct: Endpoints,
        throttle: Throttle,
        _ body: @Sendable (Endpoints) async throws -> T
    ) async throws -> T {
        typealias Route = ThrottlingProxyConfiguration.Route
        typealias Endpoint = ThrottlingProxyConfiguration.Endpoint
        func mirror(_ transport: ThrottlingProxyConfiguration.Transport, _ port: Int, classified: Bool) -> Route {
            Route(
                transport, listen: Endpoint(host: middleboxAddress, port: port),
                upstream: Endpoint(host: serverAddress, port: port), isClassified: classified)
        }
        var routes = [
            mirror(.tcp, direct.sideChannelPort, classified: false),
            mirror(.tcp, direct.analyzerPort, classified: false),
        ]
        routes += Set(ports.tcp.values).sorted().map { mirror(.tcp, $0, classified: true) }
        routes += Set(ports.udp.values).sorted().map { mirror(.udp, $0, classified: true) }
        let configuration = ThrottlingProxyConfiguration(
            routes: routes,
            classifier: throttle.classifier(ports.tcp),
            shaping: .init(rateBitsPerSecond: throttle.rateBitsPerSecond))
        let proxy: ThrottlingProxy
        do {
            proxy = try ThrottlingProxy(configuration: configuration)
        } catch {
            throw CLIError(code: .invalidInput, "the demo middlebox: \(error.description)")
        }
        var endpoints = direct
        endpoints.server = middleboxAddress
        let through = endpoints
        do {
            return try await proxy.withRunning { _ in try await body(through) }
        } catch let error as WeheTestbedError {
            throw CLIError(
                code: .unreachable,
                "the demo middlebox cannot listen on \(middleboxAddress) (a loopback alias; Linux has it, macOS "
                    + "needs `sudo ifconfig lo0 alias \(middleboxAddress)`): \(error.description)")
        }
    }
}
