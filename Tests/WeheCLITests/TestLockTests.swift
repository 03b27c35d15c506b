import Foundation
import Testing
import WeheTestKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One test per data directory at a time: the server keeps one side channel per user, so a second `wehe run` would
/// end the first one's test there; it stops at once instead and says why.
@Suite("wehe run while another test runs (built binary, no server)")
struct TestLockTests {
    @Test("a second run while the data directory's test lock is held exits 16 naming the running test")
    func secondRunRefused() async throws {
        let data = TestResources.temporaryDirectory("wehe-lock")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        // Hold the lock as a running `wehe run` does (flock on <data>/test.lock, holder line "pid time").
        let descriptor = open(data + "/test.lock", O_RDWR | O_CREAT, 0o644)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        #expect(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        let holder = "4242 15:02:11\n"
        _ = holder.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        let arguments = [
            "run", "tinyweb", "--replays", TestResources.fixtureReplays, "--data-dir", data, "--accept-consent",
            "--server", "127.0.0.1", "--side-channel-port", "9", "--no-confirmation",
        ]
        let refused = try await CommandRunner.run("wehe", arguments)
        #expect(refused.status == 16, "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1)
        #expect(refused.stderr.contains("another wehe test is running"), "\(refused.stderr)")
        #expect(refused.stderr.contains("process 4242, started at 15:02:11"), "\(refused.stderr)")
        // Released: the run goes on to the (closed) server port and fails there, exit 5.
        flock(descriptor, LOCK_UN)
        let free = try await CommandRunner.run("wehe", arguments)
        #expect(free.status == 5, "\(free.stderr)")
    }

    @Test("an unwritable data directory is reported in plain words")
    func unwritableDataDirectory() async throws {
        let parent = TestResources.temporaryDirectory("wehe-lock-file")
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        // A file where the data directory should be: "Not a directory" (errno), not a Foundation error domain.
        let blocker = parent + "/file"
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
        let output = try await CommandRunner.run(
            "wehe",
            [
                "run", "tinyweb", "--replays", TestResources.fixtureReplays, "--data-dir", blocker + "/data",
                "--accept-consent", "--server", "127.0.0.1", "--side-channel-port", "9",
            ])
        #expect(output.status == 26, "\(output.stderr)")
        #expect(output.stderr.lowercased().contains("not a directory"), "\(output.stderr)")
        #expect(!output.stderr.contains("NSCocoaErrorDomain"), "\(output.stderr)")
    }
}
