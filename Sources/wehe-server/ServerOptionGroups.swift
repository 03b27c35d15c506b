import ArgumentParser
import Foundation
import Logging
import WeheServer

// Option groups shared by `serve` and `mlab`, one per concern. Each option is documented once, here; the
// configuration file (`FileSettings`) uses the same names in camelCase, and the command line wins over the file.

/// Logging: level and format.
struct LoggingOptions: ParsableArguments {
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error.")
    var logLevel: String?

    @Option(name: .long, help: "Log format: text or json (one JSON object per line).")
    var logFormat: String?

    /// Bootstraps the process's logging system (once per process).
    func bootstrap(file: FileSettings = FileSettings()) {
        let level = Logger.Level(rawValue: logLevel ?? file.logLevel ?? "info") ?? .info
        let json = (logFormat ?? file.logFormat ?? "text") == "json"
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                json ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// What clients may cost: connections, sessions, stored replays, and the shutdown grace period.
struct LimitOptions: ParsableArguments {
    @Option(name: .long, help: "Largest number of open TCP connections.")
    var maxConnections: Int?

    @Option(name: .long, help: "Largest number of open TCP connections from one client address.")
    var maxConnectionsPerAddress: Int?

    @Option(name: .long, help: "Largest number of concurrently admitted sessions.")
    var maxSessions: Int?

    @Option(name: .long, help: "Largest number of concurrent sessions from one /24 (IPv4) or /64 (IPv6), default 32.")
    var maxSessionsPerNetwork: Int?

    @Option(
        name: .long,
        help: "Replays whose samples one /24 (IPv4) or /48 (IPv6) may store per 24 h, default 400.")
    var storedReplaysPerNetwork: Int?

    @Option(name: .long, help: "Largest number of concurrent sessions from one IPv6 /48, default 128.")
    var maxSessionsPerSite: Int?

    @Option(name: .long, help: "Seconds running tests may go on after SIGTERM.")
    var gracePeriod: Int?

    @Option(
        name: .long,
        help: "Analyses computing at once, on threads of their own at a lowered priority (default: half the cores).")
    var analysisWorkers: Int?

    @Option(name: .long, help: "Analyses running or waiting for one /24 (IPv4) or /64 (IPv6), default 2.")
    var analysesPerNetwork: Int?

    @Option(name: .long, help: "Analyses waiting for a worker, server-wide, default 64 (more are refused).")
    var analysisQueue: Int?

    @Option(name: .long, help: "Largest pcap file per replay connection in bytes (default 67108864).")
    var pcapMaxBytes: Int?

    /// Sets the configuration's limits from the options, else the file, else leaves the defaults.
    func apply(to configuration: inout ReplayServerConfiguration, file: FileSettings) throws {
        if let value = maxConnections ?? file.maxConnections { configuration.limits.maximumConnections = value }
        if let value = maxConnectionsPerAddress ?? file.maxConnectionsPerAddress {
            configuration.limits.maximumConnectionsPerAddress = value
        }
        if let value = maxSessions ?? file.maxSessions { configuration.limits.maximumSessions = value }
        if let value = maxSessionsPerNetwork ?? file.maxSessionsPerNetwork {
            configuration.limits.maximumSessionsPerNetwork = value
        }
        if let value = storedReplaysPerNetwork ?? file.storedReplaysPerNetwork {
            guard value > 0 else { throw ValidationError("--stored-replays-per-network must be at least 1") }
            configuration.limits.storedReplaysPerNetwork = value
        }
        if let value = maxSessionsPerSite ?? file.maxSessionsPerSite {
            configuration.limits.maximumSessionsPerSite = value
        }
        if let value = gracePeriod ?? file.gracePeriod { configuration.limits.shutdownGracePeriod = .seconds(value) }
        if let value = analysisWorkers ?? file.analysisWorkers {
            guard value > 0 else { throw ValidationError("--analysis-workers must be at least 1") }
            configuration.limits.analysesRunning = value
        }
        if let value = analysesPerNetwork ?? file.analysesPerNetwork {
            guard value > 0 else { throw ValidationError("--analyses-per-network must be at least 1") }
            configuration.limits.analysesPerNetwork = value
        }
        if let value = analysisQueue ?? file.analysisQueue {
            guard value >= 0 else { throw ValidationError("--analysis-queue must be at least 0") }
            configuration.limits.analysesWaiting = value
        }
        if let bytes = pcapMaxBytes ?? file.pcapMaxBytes {
            guard bytes >= 1024 else { throw ValidationError("--pcap-max-bytes must be at least 1024") }
            configuration.pcapMaximumBytes = bytes
        }
    }
}

/// The result store: its kind and, for PostgreSQL, its URL; how long results are kept.
struct ResultStoreOptions: ParsableArguments {
    @Option(name: .long, help: "Result store: sqlite (default), postgres, memory.")
    var store: String?

    @Option(name: .long, help: "PostgreSQL URL for --store postgres (postgres://user:password@host:port/db).")
    var postgresURL: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Delete results, samples, loss timelines, session events and DPI searches older than this many days, at "
                + "start and then every hour (default: keep everything; `db purge` does it once)."
        ))
    var retentionDays: Int?
}
