import ArgumentParser
import Foundation
import WeheServer

/// Recorded tests that clients bring (`wehe record`, then `wehe run` against a server without the test): off unless
/// the operator turns it on, bounded per upload and per client network, held only until the uploader's replay takes
/// it (or a short lifetime ends) unless `--keep-client-traces` names a directory. The configuration file's keys are
/// the same names in camelCase.
struct ClientTraceOptions: ParsableArguments {
    @Flag(
        name: .long,
        help: "Run recorded tests clients bring when this server does not have them (upload on the analyzer; off).")
    var acceptClientTraces = false

    @Option(name: .long, help: "Largest uploaded trace in bytes (default 52428800, 50 MiB).")
    var clientTraceMaxBytes: Int?

    @Option(name: .long, help: "Longest uploaded test in seconds (default 120).")
    var clientTraceMaxSeconds: Int?

    @Option(name: .long, help: "Bytes one replay of an uploaded test may move, both ways (default 209715200).")
    var clientTraceMaxReplayBytes: Int?

    @Option(name: .long, help: "Uploads one /24 (IPv4) or /64 (IPv6) may make per 24 h (default 40; a test is two).")
    var clientTraceUploadsPerNetwork: Int?

    @Option(name: .long, help: "Uploads one /24 or /64 may hold at once, not yet run (default 4).")
    var clientTraceHeldPerNetwork: Int?

    @Option(name: .long, help: "Seconds an upload waits for its replay before it is dropped (default 600).")
    var clientTraceLifetime: Int?

    @Option(
        name: .long, help: "Also write every accepted upload into this directory (default: kept only for the test).")
    var keepClientTraces: String?

    @Option(name: .long, help: "Largest total size of --keep-client-traces in bytes (default 1073741824).")
    var keepClientTracesMaxBytes: Int?

    /// The configuration file's keys of this group.
    struct FileKeys: Decodable {
        var acceptClientTraces: Bool?
        var clientTraceMaxBytes: Int?
        var clientTraceMaxSeconds: Int?
        var clientTraceMaxReplayBytes: Int?
        var clientTraceUploadsPerNetwork: Int?
        var clientTraceHeldPerNetwork: Int?
        var clientTraceLifetime: Int?
        var keepClientTraces: String?
        var keepClientTracesMaxBytes: Int?
    }

    /// Sets `configuration.clientTraces` from the options, else the configuration file at `path`; off unless one
    /// of them turns it on.
    func apply(to configuration: inout ReplayServerConfiguration, configFile path: String?) throws {
        var file = FileKeys()
        if let path {
            do {
                file = try JSONDecoder().decode(FileKeys.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw ValidationError("cannot read configuration file \(path): \(error)")
            }
        }
        guard acceptClientTraces || file.acceptClientTraces == true else {
            configuration.clientTraces = nil
            return
        }
        var policy = ClientTracePolicy()
        func positive(_ value: Int?, _ fileValue: Int?, _ name: String, _ set: (Int) -> Void) throws {
            guard let value = value ?? fileValue else { return }
            guard value > 0 else { throw ValidationError("--\(name) must be positive") }
            set(value)
        }
        try positive(clientTraceMaxBytes, file.clientTraceMaxBytes, "client-trace-max-bytes") {
            policy.maximumUploadBytes = $0
        }
        try positive(clientTraceMaxSeconds, file.clientTraceMaxSeconds, "client-trace-max-seconds") {
            policy.maximumDurationSeconds = Double($0)
        }
        try positive(clientTraceMaxReplayBytes, file.clientTraceMaxReplayBytes, "client-trace-max-replay-bytes") {
            policy.maximumReplayBytes = $0
        }
        try positive(
            clientTraceUploadsPerNetwork, file.clientTraceUploadsPerNetwork, "client-trace-uploads-per-network"
        ) { policy.uploadsPerNetwork = $0 }
        try positive(clientTraceHeldPerNetwork, file.clientTraceHeldPerNetwork, "client-trace-held-per-network") {
            policy.heldPerNetwork = $0
        }
        try positive(clientTraceLifetime, file.clientTraceLifetime, "client-trace-lifetime") {
            policy.lifetime = .seconds($0)
        }
        try positive(keepClientTracesMaxBytes, file.keepClientTracesMaxBytes, "keep-client-traces-max-bytes") {
            policy.keepDiskBudgetBytes = $0
        }
        if let directory = keepClientTraces ?? file.keepClientTraces {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            policy.keepDirectory = directory
        }
        configuration.clientTraces = policy
    }
}
