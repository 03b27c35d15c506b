import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import WeheClient
import WeheCore
import WeheReplay
import WeheServer
import WeheStore
import WeheWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Client figures (printed, never asserted):
/// 1. the engine alone: send lateness on the Youtube and Skype traces into a transport that answers at once (the
///    engine's own timing precision);
/// 2. loopback against our server running in this process (TLS, system-chosen ports): for complete Youtube and
///    Skype tests, the send lateness of each replay against its recorded schedule (median, p99, max) and the wall
///    time of the whole test divided by twice the trace duration (target ≤ 1.05);
/// 3. the 50 MB port test (`port<N>l`: port N then port 443, 50 MB each) run by the built `wehe` binary as a
///    child process against the same in-process server: the client's CPU time (user + system) and peak resident
///    memory, from the child's resource usage.
///
/// Call from `main.swift` with the replay directory, e.g. `await runClientBenchmarks(replays: "../shared/replays")`
/// (a `client [dir]` suite). Build in release first: `swift build -c release` (the port test needs the `wehe`
/// binary next to `wehe-bench`).
func runClientBenchmarks(replays: String) async {
    await engineLateness(replays: replays)
    do {
        try await LoopbackBenchServer.run(replays: replays) { server in
            for id in ["youtube", "skype"] { await fullTest(id, replays: replays, server: server) }
            await largePortTest(replays: replays, server: server)
        }
    } catch {
        print("client loopback: the in-process server did not start: \(error)")
    }
}

/// The engine's own timing on the real clock, with a transport that completes every send and read at once.
private func engineLateness(replays: String) async {
    let library = ReplayLibrary(directory: replays)
    for file in ["Youtube_02202024.pcap_client_all.json", "Skype_06172024.pcap_client_all.json"] {
        guard let trace = try? library.trace(file: file) else {
            print("client engine: \(file) not found in \(replays)")
            continue
        }
        var configuration = ReplayEngineConfiguration.standard(for: trace, appDuration: nil, sampleCount: 100)
        configuration.spinWindow = .microseconds(500)
        let engine = ReplayEngine(configuration: configuration, clock: ContinuousClock())
        let started = monotonicSeconds()
        do {
            let outcome = try await engine.run(trace: trace, transport: ImmediateTransport())
            print(
                "client engine lateness \(trace.name) (no network, \(fixed(monotonicSeconds() - started, 1)) s): "
                    + describe(outcome.scheduleLateness))
        } catch {
            print("client engine lateness \(trace.name): failed: \(error)")
        }
    }
}

/// One complete test (both replays in random order, analysis, no confirmation) against the in-process server.
private func fullTest(_ id: String, replays: String, server: LoopbackBenchServer) async {
    let library = ReplayLibrary(directory: replays)
    let test: ReplayClient.Test
    do {
        test = try ReplayClient.Test.load(id, from: library, catalog: try library.catalog())
    } catch {
        print("client loopback \(id): cannot load: \(error)")
        return
    }
    var configuration = ReplayClientConfiguration(
        server: LoopbackBenchServer.address, userID: "@bench" + String(Int.random(in: 1000...9999)),
        trustedCertificatesPEM: server.caPEM, sideChannelPort: server.sideChannelPort,
        analyzerPort: server.analyzerPort, confirmation: false)
    configuration.logger.logLevel = .critical
    do {
        let result = try await ReplayClient(configuration: configuration).run(test)
        let traceSeconds = test.original.duration
        print("client loopback \(test.original.name): verdict \(result.verdict.rawValue)")
        for (role, outcome) in [("original", result.original), ("control", result.control)] {
            guard let outcome else { continue }
            print(
                "  \(role) send lateness vs schedule (\(outcome.scheduleLateness.count) sends): "
                    + describe(outcome.scheduleLateness) + "; engine-only: " + describe(outcome.engineLateness)
                    + "; replay \(fixed(outcome.duration.inSeconds, 2)) s")
        }
        print(
            "  full test \(fixed(result.durationSeconds, 2)) s / (2 × trace \(fixed(traceSeconds, 2)) s) = "
                + "\(fixed(result.durationSeconds / (2 * traceSeconds), 3)) (target ≤ 1.05)")
    } catch {
        print("client loopback \(id): failed: \(error)")
    }
}

/// The 50 MB port test run by the built `wehe` binary; CPU and peak memory from the child's resource usage.
private func largePortTest(replays: String, server: LoopbackBenchServer) async {
    let library = ReplayLibrary(directory: replays)
    guard let catalog = try? library.catalog(),
        let entry = catalog.entries.first(where: { $0.isLargePortTest && $0.id == "port8080l" })
            ?? catalog.entries.first(where: \.isLargePortTest)
    else {
        print("client 50 MB port test: no large port test in \(replays)")
        return
    }
    guard let directory = Bundle.main.executableURL?.deletingLastPathComponent() else { return }
    let wehe = directory.appendingPathComponent("wehe").path
    guard FileManager.default.isExecutableFile(atPath: wehe) else {
        print("client 50 MB port test: not measured (no built wehe next to wehe-bench; run swift build first)")
        return
    }
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("wehe-bench-\(getpid())").path
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    do {
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        try server.caPEM.write(toFile: scratch + "/ca.crt", atomically: true, encoding: .utf8)
    } catch {
        print("client 50 MB port test: cannot prepare \(scratch): \(error)")
        return
    }
    let arguments = [
        "run", entry.id, "--json", "--no-confirmation", "--accept-consent", "--replays", replays, "--data-dir",
        scratch + "/data", "--server", LoopbackBenchServer.address, "--cert", scratch + "/ca.crt",
        "--side-channel-port", String(server.sideChannelPort), "--analyzer-port", String(server.analyzerPort),
    ]
    let before = childUsage()
    let started = monotonicSeconds()
    let status = await runChild(wehe, arguments, output: scratch + "/out.json")
    let wall = monotonicSeconds() - started
    let after = childUsage()
    let output = (try? String(contentsOfFile: scratch + "/out.json", encoding: .utf8)) ?? ""
    let bytes = output.split(separator: ",").first { $0.contains("\"bytes\"") }.map(String.init) ?? "?"
    print(
        "client 50 MB port test \(entry.id) (wehe binary, exit \(status), \(bytes.trimmingCharacters(in: .whitespaces))): "
            + "wall \(fixed(wall, 2)) s, CPU user \(fixed(after.user - before.user, 2)) s + system "
            + "\(fixed(after.system - before.system, 2)) s, peak RSS \(fixed(after.peakMiB, 1)) MiB")
}

/// CPU seconds and peak RSS of waited-for children.
private func childUsage() -> (user: Double, system: Double, peakMiB: Double) {
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return (seconds(usage.ru_utime), seconds(usage.ru_stime), Double(usage.ru_maxrss) / 1024)
}

/// Runs a child to completion without blocking a concurrency thread (the in-process server needs them).
private func runChild(_ path: String, _ arguments: [String], output: String) async -> Int32 {
    guard FileManager.default.createFile(atPath: output, contents: nil),
        let handle = FileHandle(forWritingAtPath: output)
    else { return -1 }
    defer { try? handle.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = handle
    process.standardError = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    return await withCheckedContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do {
            try process.run()
        } catch {
            process.terminationHandler = nil
            continuation.resume(returning: -1)
        }
    }
}

private func describe(_ lateness: SendLateness) -> String {
    "median \(fixed(lateness.median.inSeconds * 1e6, 0)) µs, p99 \(fixed(lateness.p99.inSeconds * 1e6, 0)) µs, "
        + "max \(fixed(lateness.maximum.inSeconds * 1e6, 0)) µs"
}

/// A transport that accepts every send and delivers every response at once.
private final class ImmediateTransport: ReplayTransport {
    private let meter = Mutex<ThroughputMeter?>(nil)

    func start(meter: ThroughputMeter) async throws { self.meter.withLock { $0 = meter } }
    func send(_ packet: ReplayPacket, index: Int) async throws {}
    func receiveResponse(
        length: Int, for packet: ReplayPacket, index: Int, limits: ReplayReadLimits, meter: ThroughputMeter
    ) async throws -> ResponseRead {
        meter.add(length)
        return .complete
    }
    func drain(remaining: Duration) async throws {}
    func close() async {}
}

/// Our server in this process on 127.0.0.1: TLS side channel and analyzer with a throwaway CA, every port chosen by
/// the system, results in memory.
struct LoopbackBenchServer: Sendable {
    static let address = "127.0.0.1"
    let sideChannelPort: Int
    let analyzerPort: Int
    let caPEM: String

    static func run(replays: String, _ body: @Sendable (LoopbackBenchServer) async throws -> Void) async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("wehe-bench-server-\(getpid())")
            .path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let certificates = try CertificateFactory.issue(into: scratch, hostNames: [address])
        var logger = Logger(label: "wehe-bench.server")
        logger.logLevel = .critical
        let configuration = ReplayServerConfiguration.privateTLS(
            replayDirectory: replays, store: InMemoryResultStore(), logger: logger, address: address,
            dataDirectory: scratch, certificates: certificates)
        let server = try ReplayServer(configuration: configuration)
        let caPEM = try String(contentsOfFile: certificates.caCertificate, encoding: .utf8)
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let ports = try await server.listeningPorts()
            let running = LoopbackBenchServer(
                sideChannelPort: ports.sideChannelTLS ?? -1, analyzerPort: ports.analyzerTLS ?? -1, caPEM: caPEM)
            try await body(running)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
