import Foundation
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// Opt-in measurement (`WEHE_ARCHIVE_COST=<runs>`): the same scripted test (Youtube original and control, samples
/// and analysis) without options, with `--archive` and with `--pcap`, interleaved in one run; prints the median time
/// per test, its ratio to the plain run, and the bytes each option wrote per test.
@Suite(
    "Archive and pcap cost (opt-in)", .timeLimit(.minutes(10)),
    .enabled(if: ProcessInfo.processInfo.environment["WEHE_ARCHIVE_COST"] != nil && TestResources.hasSharedReplays))
struct ArchiveCostTests {
    static func bytes(under directory: String) -> Int {
        var total = 0
        for case let path as String in FileManager.default.enumerator(atPath: directory)?.allObjects ?? [] {
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + path)
            if attributes?[.type] as? FileAttributeType == .typeRegular { total += attributes?[.size] as? Int ?? 0 }
        }
        return total
    }

    @Test("time per test and bytes per test with --archive and --pcap")
    func measure() async throws {
        let runs = Int(ProcessInfo.processInfo.environment["WEHE_ARCHIVE_COST"] ?? "") ?? 10
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        let original = try library.trace(file: "Youtube_02202024.pcap_client_all.json")
        let control = try library.trace(file: "YoutubeRandom_02202024.pcap_client_all.json")
        let archiveDirectory = TestResources.temporaryDirectory("wehe-cost-archive")
        let pcapDirectory = TestResources.temporaryDirectory("wehe-cost-pcap")
        defer {
            try? FileManager.default.removeItem(atPath: archiveDirectory)
            try? FileManager.default.removeItem(atPath: pcapDirectory)
        }
        let writer = ArchiveWriter(directory: archiveDirectory, logger: ServerHarness.logger)
        let schemaBytes = Self.bytes(under: archiveDirectory)
        var times: [String: [Double]] = [:]
        let samples =
            "[[" + (0..<100).map { "\(Double($0 % 13) * 0.5)" }.joined(separator: ",") + "],["
            + (1...100).map { "\(Double($0) * 0.39)" }.joined(separator: ",") + "]]"
        for run in 0..<runs {
            for mode in ["plain", "archive", "pcap"] {
                let configure: (inout ReplayServerConfiguration) -> Void = {
                    if mode == "archive" { $0.archive = writer }
                    if mode == "pcap" { $0.pcapDirectory = pcapDirectory }
                }
                let elapsed = try await ServerHarness.run(replays: TestResources.sharedReplays, configure: configure) {
                    server in
                    var client = ScriptedClient()
                    client.historyCount = run + 1
                    client.userID = "@cost\(mode.prefix(3))"
                    client.samples = samples
                    let start = ContinuousClock.now
                    _ = try await client.run(original, testID: 0, server: server)
                    _ = try await client.run(control, testID: 1, server: server)
                    if mode == "archive" { await writer.flush() }
                    return ContinuousClock.now - start
                }
                times[mode, default: []].append(
                    Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }
        }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        let plain = median(times["plain"] ?? [])
        for mode in ["plain", "archive", "pcap"] {
            let value = median(times[mode] ?? [])
            print(
                "cost \(mode): median \(String(format: "%.1f", value * 1000)) ms per test over \(runs) runs, "
                    + "ratio \(String(format: "%.3f", value / plain))")
        }
        // Let the last captures close and move into place.
        try await Task.sleep(for: .milliseconds(500))
        print("cost archive: \((Self.bytes(under: archiveDirectory) - schemaBytes) / runs) bytes per test")
        print("cost pcap: \(Self.bytes(under: pcapDirectory) / runs) bytes per test")
        #expect(writer.failures == 0)
    }
}
