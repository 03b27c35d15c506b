import Logging
import Synchronization
import Testing
import WeheServer

/// The startup log names the limits in force: sessions, connections, open files.
@Suite("Startup log", .timeLimit(.minutes(5)))
struct StartupLogTests {
    /// Keeps every record's message and metadata.
    final class Records: Sendable {
        let entries = Mutex<[(message: String, metadata: [String: String])]>([])
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
            records.entries.withLock { $0.append(("\(event.message)", all)) }
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
    }
}
