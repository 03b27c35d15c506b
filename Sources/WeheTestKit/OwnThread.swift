import Foundation

/// Runs `work`, which blocks (waits for a child process, reads its pipes to the end), on a thread of its own and
/// returns its result.
///
/// The test process runs every test on Swift's cooperative threads, as many as cores (two on the CI machines), and
/// the in-process servers of the other suites run there too. A test that blocked one of them for the seconds a
/// command takes left the servers one thread; two such tests left them none. Run beside `WeheCLITests`, a UDP replay
/// on loopback then waited past its server's 20-s progress deadline and found its side channel closed
/// (`UDPLossReportTests`, "I/O on closed channel" after 26 s).
package func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
