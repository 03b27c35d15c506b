import Foundation
import Testing
import WeheCore
import WeheTestKit

/// Runs the built `wehe testbed proxy` binary.
@Suite("wehe testbed proxy (built binary)", .timeLimit(.minutes(5)))
struct ProxyCommandTests {
    private func run(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await onOwnThread { try Self.runWaiting(arguments) }
    }

    private static func runWaiting(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: TestResources.builtProduct("wehe"))
        process.arguments = ["testbed", "proxy"] + arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)
        )
    }

    @Test("it binds every route, says ready, and prints its counters when the duration is over")
    func runsForDuration() async throws {
        let result = try await run([
            "--route", "tcp:127.0.0.1:0=127.0.0.1:9", "--route", "udp:0=127.0.0.1:9,plain",
            "--pattern", "googlevideo", "--rate", "1.5mbit", "--after-bytes", "1000", "--duration", "0.3",
        ])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines.first?.hasPrefix("listening tcp 127.0.0.1:") == true)
        #expect(lines.first?.hasSuffix(" -> 127.0.0.1:9") == true)
        #expect(lines.dropFirst().first?.hasSuffix("-> 127.0.0.1:9 (plain)") == true)
        #expect(lines.dropFirst(2).first == "ready")
        #expect(lines.last?.hasPrefix("stopped: tcpFlows=0 udpFlows=0 matchedFlows=0") == true)
    }

    /// The exit status `wehe` uses for usage errors (whatever the argument parser maps them to).
    private func usageStatus() async throws -> Int32 {
        try await run(["--no-such-option"]).status
    }

    @Test(
        "bad arguments end with a message on stderr and exit 1 (bad value) or the usage status (2 below)",
        arguments: [
            (["--route", "tcp:0=127.0.0.1:9", "--rate", "fast"], Int32(1), "not a rate"),
            (["--route", "icmp:0=127.0.0.1:9"], 1, "must start with tcp: or udp:"),
            (["--route", "tcp:0=127.0.0.1:9", "--pattern", "hex:zz"], 1, "is not a hex byte"),
            (["--route", "tcp:0=127.0.0.1:9", "--all", "--port", "443"], 2, "choose one of"),
            (["--pattern", "x"], 2, "at least one --route"),
            (["--route", "tcp:0=127.0.0.1:9", "--rate", "1mbit", "--burst", "0"], 1, "burst"),
        ])
    func badArguments(arguments: [String], status: Int32, message: String) async throws {
        let result = try await run(arguments)
        #expect(result.status == (status == 2 ? try await usageStatus() : status))
        #expect(result.status != 0)
        #expect(result.stderr.contains(message))
        #expect(result.stdout.isEmpty)
    }

    @Test("an address that cannot be bound exits 3 and names the route")
    func bindFailure() async throws {
        let result = try await run(["--route", "tcp:192.0.2.1:0=127.0.0.1:9", "--all"])
        #expect(result.status == 3)
        #expect(result.stderr.contains("cannot listen on tcp 192.0.2.1:0"))
    }
}
