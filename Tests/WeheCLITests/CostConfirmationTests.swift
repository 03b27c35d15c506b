import Foundation
import Testing
import WeheClient
import WeheCore
import WeheTestKit
import WeheWire

/// The cost said before a run: asked for above 200 MB or 5 minutes, the same figures everywhere.
@Suite(
    "The cost before commitment",
    .enabled(if: TestResources.hasSharedReplays, "the published traces in ../shared/replays are needed"))
struct CostConfirmationTests {
    @Test("a run above 200 MB off a terminal is refused before any connection, with its cost and --yes named")
    func refusedWithoutYes() async throws {
        let data = TestResources.temporaryDirectory("wehe-cost")
        defer { try? FileManager.default.removeItem(atPath: data) }
        // No server listens on this address: a refusal that comes first never tries to reach it.
        let common = [
            "--replays", TestResources.sharedReplays, "--data-dir", data, "--accept-consent", "--server", "127.0.0.1",
            "--side-channel-port", "9", "--analyzer-port", "9",
        ]
        let refused = try await CommandRunner.run("wehe", ["run", "netflix", "hbomax"] + common)
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("--yes"), "\(refused.stderr)")
        // The figure is the shared estimate's: both tests, both replays, both directions.
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        let catalog = try library.catalog()
        let tests = try ["netflix", "hbomax"].map { try ReplayClient.Test.load($0, from: library, catalog: catalog) }
        let cost = TestCost.total(tests.map { TestCost.of($0) })
        #expect(cost.bytes > 200_000_000)
        let megabytes = String(Int((Double(cost.bytes) / 1e6).rounded()))
        #expect(refused.stderr.contains(megabytes), "\(megabytes) MB in \(refused.stderr)")
        // One small test is not asked for: it goes on to the (absent) server and fails there instead.
        let small = try await CommandRunner.run("wehe", ["run", "youtube"] + common)
        #expect(small.status != 4, "\(small.stderr)")
        #expect(!small.stderr.contains("--yes"))
    }

    @Test("the estimate: the published test is both traces both ways; a confirmation doubles the most; adaptive caps")
    func estimate() throws {
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        let test = try ReplayClient.Test.load("netflix", from: library, catalog: try library.catalog())
        let published = TestCost.of(test, mode: .published(confirmation: true))
        #expect(published.bytes == test.original.bytesBothWays + test.control.bytesBothWays)
        #expect(published.mostBytes == 2 * published.bytes)
        let alone = TestCost.of(test, mode: .published(confirmation: false))
        #expect(alone.mostBytes == alone.bytes)
        let adaptive = TestCost.of(test, mode: .adaptive)
        #expect(adaptive.mostBytes == AdaptivePlan(test: test).maximumBytes)
        #expect(adaptive.bytes == AdaptivePlan(test: test).publishedBytes)
        let interleaved = TestCost.of(test, mode: .interleaved(rounds: 10))
        #expect(interleaved.bytes == 10 * alone.bytes)
    }
}
