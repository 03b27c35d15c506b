import Foundation
import Logging
import ServiceLifecycle
import WeheCore
import WeheStore

/// Runs the tests started from the browser: a `Service` that the composition root runs next to the HTTP server
/// (for example in Hummingbird's `Application(services:)`). Without it, started tests stay queued.
///
/// Each run is a child task of a discarding task group, so tests are cancelled when the service shuts down.
package struct DashboardRunner: Service {
    let registry: TestRunRegistry
    let launcher: (any TestLauncher)?
    let logger: Logger

    /// Takes queued runs until graceful shutdown or cancellation, and runs each with the launcher.
    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                for await id in registry.pending {
                    group.addTask { await execute(id) }
                }
            }
        }
        await registry.closeQueue()
    }

    private func execute(_ id: String) async {
        guard let run = await registry.run(id) else { return }
        guard let launcher else {
            await registry.setState(.failed("no test launcher is configured"), for: id)
            return
        }
        await registry.setState(.running, for: id)
        logger.info("dashboard test started", metadata: ["wehe.run.id": "\(id)", "wehe.test.name": "\(run.test.id)"])
        let registry = self.registry
        // Progress arrives synchronously from the launcher; an ordered stream keeps the events in sequence.
        let (events, sink) = AsyncStream.makeStream(of: TestProgressEvent.self)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { await registry.record(event, for: id) }
            }
            var state: TestRun.State = .failed("no test was run")
            for (index, test) in run.tests.enumerated() {
                await registry.startTest(index, for: id)
                if run.tests.count > 1 {
                    sink.yield(.message("\(index + 1)/\(run.tests.count): \(test.name)"))
                }
                do {
                    let key = try await launcher.runTest(id: test.id) { event in sink.yield(event) }
                    await registry.addResult(key, for: id)
                    state = .finished(key)
                } catch is CancellationError {
                    state = .failed("the test was cancelled")
                    break
                } catch {
                    state = .failed(String(describing: error))
                    break
                }
            }
            sink.finish()
            await group.waitForAll()
            await registry.setState(state, for: id)
            logger.info(
                "dashboard test ended", metadata: ["wehe.run.id": "\(id)", "wehe.run.state": "\(state.name)"])
        }
    }
}
