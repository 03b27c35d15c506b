import Synchronization
import Testing
import WeheClient
import WeheCore
import WeheTestKit

/// Verdicts the data can support: too few measurements are inconclusive with their reason, the server's
/// reason is kept, and a server that drops the side channel is not a TLS failure.
@Suite("Verdicts the samples can support", .serialized)
struct VerdictTrustTests {
    @Test("A port test with too few samples is inconclusive with the reason, even when the numbers say 'no diff'")
    func tooFewSamplesLocally() async throws {
        // A 1 MB port replay lasts a few milliseconds on loopback; with a grid of 2 s / 3 samples it leaves no whole
        // sample. The analyzer answers area 0 and p 0.5, which the published rule reads as "no differentiation".
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.sampleCount = 3
        behaviour.areaTest = 0
        let (server, tests) = try await Harness.start(["port8081s"], behaviour)
        defer { Task { await server.stop() } }
        let result = try await ReplayClient(configuration: Harness.configuration(server)).run(tests[0])
        #expect(result.verdict == .inconclusive)
        #expect(result.direction == nil)
        let note = try #require(result.summary.note)
        #expect(note.hasPrefix("too few measurements"), "\(note)")
        #expect(result.summary.insufficientDataReason == note)
    }

    @Test("The server's insufficient_data reason makes the verdict inconclusive and is shown")
    func serverReason() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.areaTest = 0
        behaviour.ksPValue = 1
        behaviour.insufficientData = "too few measurements: the control replay has no samples (at least 5 each)"
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        // The server's reason alone decides: the client's own minimum is set aside.
        var configuration = Harness.configuration(server)
        configuration.minimumPositiveSamples = 1
        let result = try await ReplayClient(configuration: configuration).run(tests[0])
        #expect(result.verdict == .inconclusive)
        #expect(result.summary.note == behaviour.insufficientData)
        // The true area follows from the means the server sent (our server answers a conventional ±1 then).
        let larger = max(result.summary.originalMeanMbps, result.summary.controlMeanMbps)
        let area = larger > 0 ? (result.summary.controlMeanMbps - result.summary.originalMeanMbps) / larger : 0
        #expect(abs(result.summary.areaTest - area) < 1e-9)
    }

    @Test("A side channel dropped without TLS close after the handshake is a closed connection, not a TLS failure")
    func uncleanClose() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.closeUncleanlyAfterDeclaration = true
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        do {
            _ = try await ReplayClient(configuration: Harness.configuration(server)).run(tests[0])
            Issue.record("the test should have failed")
        } catch {
            #expect(error.code == .protocolViolation, "\(error)")
            #expect(error.message.contains("closed the side channel"), "\(error.message)")
        }
    }

    @Test("The confirmation event carries the first run's numbers")
    func confirmationEventCarriesSummary() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.areaTest = 0.74
        behaviour.ksPValue = 1e-4
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let firsts = Mutex<[AnalysisSummary]>([])
        // tinyweb gives loopback only a few positive samples; this test is about the event, not the sample minimum.
        var configuration = Harness.configuration(server, confirmation: true)
        configuration.minimumPositiveSamples = 1
        let result = try await ReplayClient(configuration: configuration).run(tests[0]) { event in
            if case .confirmationScheduled(_, let verdict, let first) = event {
                #expect(verdict == first.verdict)
                firsts.withLock { $0.append(first) }
            }
        }
        let first = try #require(firsts.withLock { $0 }.first)
        #expect(first.verdict == .differentiation)
        #expect(first.areaTest == 0.74)
        #expect(first.ksPValue == 1e-4)
        #expect(result.confirmed)
        #expect(result.firstVerdict == .differentiation)
    }
}
