import Foundation
import WeheCore
import WeheTestKit

/// Runs a built executable and captures its output.
struct CommandRunner {
    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `product` with `arguments` and returns when it has exited; the wait happens on a thread of its own
    /// (`onOwnThread`), not on one of the cooperative threads the in-process servers of other suites need.
    static func run(_ product: String, _ arguments: [String], environment: [String: String] = [:]) async throws
        -> Output
    {
        try await onOwnThread { try runWaiting(product, arguments, environment: environment) }
    }

    private static func runWaiting(_ product: String, _ arguments: [String], environment: [String: String]) throws
        -> Output
    {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: TestResources.builtProduct(product))
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: TestResources.packageRoot)
        var env = ProcessInfo.processInfo.environment
        // Messages are wrapped to COLUMNS when it is set: tests that read whole lines see them unwrapped.
        env["COLUMNS"] = nil
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes fully before waiting, so a large output cannot block the child.
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus,
            stdout: String(decoding: stdoutData, as: UTF8.self),
            stderr: String(decoding: stderrData, as: UTF8.self)
        )
    }
}
