import Foundation
import Testing
import WeheTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// The built `wehe record --interface lo`, ended by Ctrl-C (SIGINT) as a user ends it once the app has done what
/// they wanted recorded: the capture stops, and the test is written from what it captured.
@Suite("wehe record --interface: Ctrl-C ends the capture and keeps what it captured")
struct RecordInterruptTests {
    @Test(
        "after Ctrl-C the exchange made during the capture is in the written test, and wehe exits 0",
        .enabled(if: LoopbackCaptureTests.available))
    func ctrlCKeepsTheCapture() async throws {
        let directory = TestResources.temporaryDirectory("wehe-record-ctrlc")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let listener = try Socket.listen(on: "127.0.0.134")
        defer { close(listener.descriptor) }
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: TestResources.builtProduct("wehe"))
        process.arguments = [
            "record", "--interface", "lo", "--seconds", "600", "--client", "127.0.0.1", "--port",
            "\(listener.port)", "--id", "ctrlc", "--output", directory + "/out", "--json",
        ]
        process.standardInput = FileHandle.nullDevice
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = PipeCollector(out)
        let stderr = PipeCollector(err)
        defer { process.killIfRunning() }
        // The line that tells the user to start the app comes once the interface is open and filtered. Bounds for a
        // hang only: the full parallel run delays a child's start by tens of seconds.
        guard try await process.waitWhileRunning(until: { stderr.text.contains("capturing on lo") }) else {
            Issue.record("no capture line; standard error: \(stderr.text)")
            return
        }
        let clock = ContinuousClock()
        let request = Array("GET /ctrlc HTTP/1.1\r\nHost: ctrlc.example.com\r\n\r\n".utf8)
        let answer = (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Socket.exchange(listener, from: "127.0.0.1", to: "127.0.0.134", request: request, answer: answer)

        // Ctrl-C, then the capture's last reads (at most 800 ms) and the writing: well inside the bound, which
        // is for a hang (a Ctrl-C that did nothing would leave the capture running its 600 s).
        let interrupted = clock.now
        process.interrupt()
        let exitBound = interrupted.advanced(by: .seconds(90))
        while process.isRunning, clock.now < exitBound { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!process.isRunning, "wehe record still ran 90 s after Ctrl-C; standard error: \(stderr.text)")
        guard !process.isRunning else { return }
        #expect(process.terminationStatus == 0, "standard error: \(stderr.text)")
        // The pipes' last bytes may follow the exit by a moment.
        let written = clock.now.advanced(by: .seconds(30))
        while !stdout.text.contains("\"flows\""), clock.now < written {
            try await Task.sleep(for: .milliseconds(20))
        }
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(stdout.text.utf8)) as? [String: Any],
            "no JSON report: \(stdout.text)")
        let flows = try #require(report["flows"] as? [[String: Any]])
        let kept = flows.filter { $0["kept"] as? Bool == true }
        #expect(kept.count == 1, "\(flows)")
        #expect(kept.first?["bytesDown"] as? Int == answer.count, "\(flows)")
        let catalog = try String(contentsOfFile: directory + "/out/apps_list.json", encoding: .utf8)
        #expect(catalog.contains("\"ctrlc\""))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory + "/out")
        #expect(files.contains { $0.hasPrefix("ctrlc_") && $0.hasSuffix(".pcap_client_all.json") }, "\(files)")
    }
}

extension TestProcess {
    /// Kills the child (SIGKILL) if it still runs, and reaps it.
    func killIfRunning() {
        if isRunning {
            kill(processIdentifier, SIGKILL)
            waitUntilExit()
        }
    }

    /// Waits until `ready()` holds, looking every 20 ms; `false` when the child exited first or `seconds` ran out
    /// (a bound for a hang, not a timing: a loaded machine delays a child's start by tens of seconds).
    func waitWhileRunning(until ready: () -> Bool, seconds: Int = 120) async throws -> Bool {
        let clock = ContinuousClock()
        let giveUp = clock.now.advanced(by: .seconds(seconds))
        while !ready() {
            guard isRunning, clock.now < giveUp else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
