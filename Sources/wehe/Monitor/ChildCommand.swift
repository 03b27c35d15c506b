import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a helper program (`nmcli`, `notify-send`, `systemctl`, the `--on-change` command) with `posix_spawn`: its
/// standard input from a file, its output captured in a file, a time limit after which it is killed. Foundation's
/// `Process` is not used (on Linux it reads past a directory buffer while closing descriptors; see WeheTestKit's
/// TestProcess).
enum ChildCommand {
    struct Outcome {
        /// Exit status; `nil` when it was killed at the time limit or by a signal.
        var status: Int32?
        var output: String
        var timedOut: Bool
    }

    /// Finds `name` on `$PATH` (a name with a slash is taken as it is).
    static func which(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Runs `executable` with `arguments`, `input` on its standard input, and waits at most `timeout` seconds.
    /// Its standard output is captured when `capture`, else it goes where ours goes (the journal under systemd);
    /// its standard error goes where ours goes.
    /// - Throws: `POSIXError` when it cannot be started.
    static func run(
        _ executable: String, _ arguments: [String], input: [UInt8] = [], capture: Bool = true,
        timeout: Double = 10, environment: [String: String]? = nil
    ) throws -> Outcome {
        let directory = NSTemporaryDirectory()
        let stem = directory + "/wehe-child-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let inputPath = stem + ".in"
        let outputPath = stem + ".out"
        defer {
            unlink(inputPath)
            unlink(outputPath)
        }
        guard FileManager.default.createFile(atPath: inputPath, contents: Data(input), attributes: nil) else {
            throw POSIXError(.EIO)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inputPath, O_RDONLY, 0)
        if capture { posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let envp = variables.map { strdup($0) } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid: pid_t = 0
        let started = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard started == 0 else { throw POSIXError(POSIXErrorCode(rawValue: started) ?? .EIO) }
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        var timedOut = false
        while true {
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid { break }
            if waited < 0, errno != EINTR { break }
            if Date() >= deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                timedOut = true
                break
            }
            usleep(20_000)
        }
        let exited = (status & 0x7f) == 0
        let output =
            capture ? String(decoding: FileManager.default.contents(atPath: outputPath) ?? Data(), as: UTF8.self) : ""
        return Outcome(status: !timedOut && exited ? (status >> 8) & 0xff : nil, output: output, timedOut: timedOut)
    }
}
