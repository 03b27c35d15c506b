package import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process for tests (the built `wehe` and `wehe-server`), started with `posix_spawn`: the part of
/// Foundation's `Process` the tests use, with the same names.
///
/// Why not `Process`: on Linux, `Process.run()` (swift-corelibs-foundation, Swift 6.3.1 included) lists
/// `/proc/self/fd` to close the child's descriptors and copies each entry's whole 256-byte name field, reading past
/// the end of glibc's directory buffer; when that buffer ends at an unmapped page the whole test process dies with a
/// SIGSEGV in `memcpy` (seen twice in four full runs here, as the suite holds more descriptors). Here the child's
/// descriptors from 3 up are closed by the `closefrom` spawn action (glibc 2.34), without that scan.
package final class TestProcess: @unchecked Sendable {
    #if os(Linux)
        private typealias SpawnCloseFrom =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        private typealias SpawnChangeDirectory =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    #endif

    /// How the child ended.
    package enum TerminationReason: Sendable {
        case exit
        case uncaughtSignal
    }

    package var executableURL: URL?
    package var arguments: [String]?
    /// The child's environment; nil: this process's.
    package var environment: [String: String]?
    package var currentDirectoryURL: URL?
    /// A `FileHandle` (`FileHandle.nullDevice` for /dev/null) or a `Pipe`; nil: this process's.
    package var standardInput: Any?
    package var standardOutput: Any?
    package var standardError: Any?
    /// Called on a thread of its own once the child has exited.
    package var terminationHandler: (@Sendable (TestProcess) -> Void)?

    private struct State {
        var pid: pid_t = 0
        var status: Int32?
    }
    private let state = Mutex(State())
    private let exited = DispatchSemaphore(value: 0)

    package init() {}

    package var processIdentifier: Int32 { state.withLock { $0.pid } }
    package var isRunning: Bool { state.withLock { $0.pid > 0 && $0.status == nil } }

    /// The exit status, or the signal that ended the child.
    package var terminationStatus: Int32 {
        guard let status = state.withLock({ $0.status }) else { return -1 }
        return Self.signalled(status) ? status & 0x7f : (status >> 8) & 0xff
    }

    package var terminationReason: TerminationReason {
        guard let status = state.withLock({ $0.status }) else { return .exit }
        return Self.signalled(status) ? .uncaughtSignal : .exit
    }

    private static func signalled(_ status: Int32) -> Bool { (status & 0x7f) != 0 && (status & 0x7f) != 0x7f }

    /// Starts the child.
    /// - Throws: `POSIXError` when it cannot be spawned.
    package func run() throws {
        guard let executable = executableURL?.path else { throw POSIXError(.ENOENT) }
        #if os(Linux)
            var actions = posix_spawn_file_actions_t()
        #else
            var actions: posix_spawn_file_actions_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var opened: [Int32] = []
        defer { for fd in opened { close(fd) } }
        var parentEnds: [FileHandle] = []
        func redirect(_ value: Any?, to target: Int32, reading: Bool) throws {
            switch value {
            case let pipe as Pipe:
                let child = reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, child.fileDescriptor, target)
                parentEnds.append(child)
            case let handle as FileHandle where handle === FileHandle.nullDevice:
                let fd = open("/dev/null", reading ? O_RDONLY : O_WRONLY)
                guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                opened.append(fd)
                posix_spawn_file_actions_adddup2(&actions, fd, target)
            case let handle as FileHandle:
                posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
            default:
                break
            }
        }
        try redirect(standardInput, to: 0, reading: true)
        try redirect(standardOutput, to: 1, reading: false)
        try redirect(standardError, to: 2, reading: false)
        #if os(Linux)
            // glibc's _np spawn actions are not in Swift's Glibc module: looked up by name.
            if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
                let closeFrom = unsafeBitCast(symbol, to: SpawnCloseFrom.self)
                _ = closeFrom(&actions, 3)
            }
            if let directory = currentDirectoryURL?.path {
                guard let symbol = dlsym(nil, "posix_spawn_file_actions_addchdir_np") else {
                    throw POSIXError(.ENOSYS)
                }
                let changeDirectory = unsafeBitCast(symbol, to: SpawnChangeDirectory.self)
                _ = directory.withCString { changeDirectory(&actions, $0) }
            }
        #endif
        let argv = ([executable] + (arguments ?? [])).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables =
            environment.map { $0.map { "\($0.key)=\($0.value)" } }
            ?? ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let envp = variables.map { strdup($0) } + [nil]
        defer { for pointer in envp { free(pointer) } }
        // The child starts as from a shell: no signal blocked, SIGINT and SIGTERM at their default actions. Without
        // this it inherits the mask of whichever thread of the test process spawns it, and a thread that blocks SIGINT
        // would make a test's Ctrl-C (`interrupt()`) do nothing. SIGPIPE keeps what the test process set: a child's
        // write to a pipe that a test closed early fails instead of killing it.
        #if os(Linux)
            var attributes = posix_spawnattr_t()
        #else
            var attributes: posix_spawnattr_t?
        #endif
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        // The child holds its ends of the pipes now; the parent's copies would keep a reader from seeing EOF.
        for end in parentEnds { try? end.close() }
        state.withLock { $0.pid = pid }
        let spawned = pid
        let thread = Thread { [self] in
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) == -1, errno == EINTR {}
            state.withLock { $0.status = status }
            exited.signal()
            terminationHandler?(self)
        }
        thread.start()
    }

    /// Blocks until the child has exited.
    package func waitUntilExit() {
        guard state.withLock({ $0.pid > 0 }) else { return }
        exited.wait()
        exited.signal()
    }

    /// Sends SIGINT.
    package func interrupt() { kill(processIdentifier, SIGINT) }

    /// Sends SIGTERM.
    package func terminate() { kill(processIdentifier, SIGTERM) }
}
