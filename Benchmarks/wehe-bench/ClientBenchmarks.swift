import Synchronization
import WeheCore
import WeheReplay
import WeheWire

/// Client figures. Today: the replay engine's send lateness (median, p99, max) on the Youtube and Skype traces,
/// replayed on the real clock into a transport that completes at once, so the numbers are the engine's own timing
/// precision (timer overshoot and scheduling), not the network's. The loopback figures against our in-process
/// server (full-test wall time / 2 × trace duration, CPU and peak RSS of the 50 MB port test) need `WeheServer`,
/// which is not merged into this branch yet; they are printed as not measured.
func runClientBenchmarks(replays: String) async {
    let library = ReplayLibrary(directory: replays)
    for file in ["Youtube_02202024.pcap_client_all.json", "Skype_06172024.pcap_client_all.json"] {
        guard let trace = try? library.trace(file: file) else {
            print("client: \(file) not found in \(replays)")
            continue
        }
        var configuration = ReplayEngineConfiguration.standard(for: trace, appDuration: nil, sampleCount: 100)
        configuration.spinWindow = .microseconds(500)
        let engine = ReplayEngine(configuration: configuration, clock: ContinuousClock())
        let started = monotonicSeconds()
        do {
            let outcome = try await engine.run(trace: trace, transport: ImmediateTransport())
            let lateness = outcome.scheduleLateness
            print(
                "client engine lateness \(trace.name) (\(lateness.count) sends, \(fixed(monotonicSeconds() - started, 1)) s): "
                    + "median \(fixed(lateness.median.inSeconds * 1e6, 0)) µs, p99 \(fixed(lateness.p99.inSeconds * 1e6, 0)) µs, "
                    + "max \(fixed(lateness.maximum.inSeconds * 1e6, 0)) µs")
        } catch {
            print("client engine lateness \(trace.name): failed: \(error)")
        }
    }
    print("client full-test wall time ratio and 50 MB port test CPU/RSS: not measured (needs the in-process server)")
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
