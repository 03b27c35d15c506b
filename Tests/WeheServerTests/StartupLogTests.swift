import Logging
import ServiceLifecycle
import Synchronization
import Testing
import WeheServer
import WeheStore

/// The startup log names the limits in force: sessions, connections, open files, analyses; a graceful stop logs no
/// error.
@Suite("Startup and shutdown log", .timeLimit(.minutes(5)))
struct StartupLogTests {
    /// Keeps every record's level, message and metadata.
    final class Records: Sendable {
        let entries = Mutex<[(level: Logger.Level, message: String, metadata: [String: String])]>([])
    }

    struct CapturingHandler: LogHandler {
        let records: Records
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all: [String: String] = [:]
            for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
                all[key] = "\(value)"
            }
            records.entries.withLock { $0.append((event.level, "\(event.message)", all)) }
        }
    }

    @Test("the server logs its session, connection and open-file limits when it starts")
    func limitsLogged() async throws {
        let records = Records()
        let configure: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.logger = Logger(label: "startup-test") { _ in CapturingHandler(records: records) }
            configuration.limits.maximumSessions = 7
            configuration.limits.maximumConnections = 300
            configuration.limits.maximumConnectionsPerAddress = 30
            configuration.limits.analysesRunning = 3
            configuration.limits.analysesWaiting = 5
        }
        try await ServerHarness.run(configure: configure) { _ in }
        let entries = records.entries.withLock { $0 }
        let listening = try #require(entries.first { $0.message == "replay server listening" })
        #expect(listening.metadata["wehe.sessions.maximum"] == "7")
        #expect(listening.metadata["wehe.connections.maximum"] == "300")
        #expect(listening.metadata["wehe.connections.per_address"] == "30")
        let budget = try #require(entries.first { $0.message == "connection budget" })
        #expect(budget.metadata["wehe.open_file_limit"] != nil)
        #expect(budget.metadata["wehe.connections.budget"] != nil)
        let analyses = try #require(entries.first { $0.message == "analysis slots" })
        #expect(analyses.metadata["wehe.analyses.running"] == "3")
        #expect(analyses.metadata["wehe.analyses.per_network"] == "2")
        #expect(analyses.metadata["wehe.analyses.waiting"] == "5")
    }

    /// A service manager stops the server with SIGTERM at every restart: an operator who alerts on error lines
    /// must not be called for one. The analyzer used to be cancelled right after its graceful shutdown was asked
    /// for, and its HTTP servers logged four errors ("Waiting on child channel: CancellationError()", "Server
    /// shutdown error: Already closed").
    @Test("a graceful shutdown logs no error")
    func gracefulShutdownLogsNoError() async throws {
        let records = Records()
        var configuration = ServerHarness.configuration(store: InMemoryResultStore())
        configuration.logger = Logger(label: "shutdown-test") { _ in CapturingHandler(records: records) }
        configuration.limits.shutdownGracePeriod = .milliseconds(200)
        let server = try ReplayServer(configuration: configuration)
        let group = ServiceGroup(configuration: .init(services: [server], logger: ServerHarness.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            _ = try await server.listeningPorts()
            await group.triggerGracefulShutdown()
            try await tasks.next()
        }
        let entries = records.entries.withLock { $0 }
        #expect(entries.contains { $0.message == "replay server stopped" })
        let errors = entries.filter { $0.level >= .error }.map { "\($0.message) \($0.metadata)" }
        #expect(errors.isEmpty, "\(errors)")
    }
}
