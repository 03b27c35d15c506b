import Foundation
import Testing
import WeheCore
import WeheServer
import WeheTestKit
import WeheWire

/// The wait at `DONE` for a replay's late traffic (`Session.progress(meeting:within:quiet:)`). Its subject is time
/// (a count that moves or stands still for so long), so CI runs it with the timing suites, not in the full parallel
/// run: there a task asked to run 100 ms later ran more than 5 s later, and a still count is what it looks like.
@Suite("Late replay traffic at DONE", .timeLimit(.minutes(3)))
struct LateTrafficWaitTests {
    @Test("the quiet period is UDP's for a UDP replay and TCP's shorter one for a TCP replay")
    func quietPeriodByTransport() {
        var limits = ReplayServerConfiguration.Limits()
        limits.lateReplayTrafficQuiet = .milliseconds(700)
        limits.lateReplayTrafficQuietTCP = .milliseconds(90)
        #expect(limits.lateReplayTrafficQuiet(for: .udp) == .milliseconds(700))
        #expect(limits.lateReplayTrafficQuiet(for: .tcp) == .milliseconds(90))
        // The defaults: a still TCP count is judged sooner than a UDP one.
        let defaults = ReplayServerConfiguration.Limits()
        #expect(defaults.lateReplayTrafficQuiet(for: .tcp) < defaults.lateReplayTrafficQuiet(for: .udp))
    }

    @Test(
        "at DONE a replay short of the rule waits for late traffic while its count moves, up to the grace; a still count is judged after the quiet period"
    )
    func lateTrafficGrace() async throws {
        let replay = try StoredTestLimitsTests.loaded("TinyWeb-11212026")
        let requirement = ReplayProgress.requirement(for: replay)
        let declaration = try IDDeclaration(parsing: Array("@lategrace1;0;\(replay.name);0;1;False;127.0.0.1;3.3".utf8))
        func session(_ id: UInt64) -> Session {
            Session(
                id: id, declaration: declaration, peerAddress: "127.0.0.1", admissionKey: "ip:127.0.0.1",
                replay: replay, admittedAt: Date(), notifier: SideChannelNotifier(write: { _ in }, close: {}))
        }
        // The rest of the replay is counted a moment after DONE (a busy listener): the wait sees it.
        let first = session(1)
        first.recordTraffic(clientBytes: 98, active: true)
        let late = Task {
            try await Task.sleep(for: .milliseconds(100))
            first.recordTraffic(clientBytes: 294, serverBytes: 400_000, active: true)
        }
        let caughtUp = await first.progress(meeting: requirement, within: .seconds(60), quiet: .seconds(30))
        try await late.value
        #expect(caughtUp.meets(requirement))
        // A count still moving is waited for past the quiet period: sixty steps 50 ms apart (at least 3 s) against
        // a quiet period of 2 s, the rule met at the last.
        let moving = session(2)
        moving.recordTraffic(clientBytes: 10, active: true)
        let steps = Task {
            for step in 1...60 {
                try await Task.sleep(for: .milliseconds(50))
                let last = step == 60
                moving.recordTraffic(clientBytes: last ? 400 : 1, serverBytes: last ? 400_000 : 0, active: true)
            }
        }
        let movedUp = await moving.progress(meeting: requirement, within: .seconds(30), quiet: .seconds(2))
        try await steps.value
        #expect(movedUp.meets(requirement))
        // A count that stands still (a replay the client ended early on purpose) is judged once it has been still
        // for the quiet period, long before the grace is over.
        let still = session(3)
        still.recordTraffic(clientBytes: 10, active: true)
        var started = ContinuousClock.now
        let judged = await still.progress(meeting: requirement, within: .seconds(30), quiet: .milliseconds(300))
        let waited = started.duration(to: .now)
        #expect(!judged.meets(requirement))
        #expect(judged.clientBytes == 10)
        #expect(waited >= .milliseconds(300) && waited < .seconds(15), "waited \(waited)")
        // A count that moves and never catches up is judged when the grace is over, on what it has. (Request bytes
        // without responses: they move the count without stretching the activity, which would meet the time rule.)
        let never = session(4)
        never.recordTraffic(clientBytes: 10, active: true)
        let trickle = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                never.recordTraffic(clientBytes: 1, active: false)
            }
        }
        started = ContinuousClock.now
        let short = await never.progress(meeting: requirement, within: .seconds(2), quiet: .seconds(30))
        trickle.cancel()
        #expect(!short.meets(requirement))
        #expect(short.clientBytes > 10)
        #expect(started.duration(to: .now) >= .seconds(2))
        // A TCP replay whose connection is over (the client closed it before its DONE) has its final count: it is
        // judged at once. With a grace and a quiet period of ten minutes, a wait would end the suite at its limit.
        let closed = session(5)
        closed.recordTraffic(clientBytes: 10, active: true)
        closed.markTCPFinished()
        let final = await closed.progress(meeting: requirement, within: .seconds(600), quiet: .seconds(600))
        #expect(!final.meets(requirement))
        #expect(final.clientBytes == 10)
    }
}
