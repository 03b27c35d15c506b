import Foundation
import Synchronization
import Testing
import WeheClient
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit

extension FakeLocateService.Request {
    /// The target without the client's `client_*` parameters (checked on their own).
    var unidentified: String {
        guard var components = URLComponents(string: target) else { return target }
        let kept = (components.queryItems ?? []).filter { !$0.name.hasPrefix("client_") }
        components.queryItems = kept.isEmpty ? nil : kept
        return components.string ?? target
    }
}

@Suite(
    "Commands of any length on the fleet: an envelope per step, tokens used once, locate's limits",
    .serialized, .timeLimit(.minutes(4)))
struct FleetLongCommandTests {
    /// The configuration of a session against fakes whose tokens live `lifetime`.
    static func fleet(_ fakes: FleetFakes, address: String = "127.0.0.1", lifetime: Duration) -> FleetConfiguration {
        var fleet = fakes.configuration(serverAddress: address)
        fleet.tokenLifetime = lifetime
        fleet.envelopeTimeout = .seconds(1)
        return fleet
    }

    @Test("every locate call names the client (client_name, client_version, client_os, User-Agent with the version)")
    func identity() async throws {
        try await FleetFakes.run { fakes in
            fakes.locate.issue(machines: FleetFakes.machines, envelopes: fakes.envelopes)
            let session = FleetSession(configuration: Self.fleet(fakes, lifetime: .seconds(60)))
            let access = try await session.open()
            await access.close()
            let request = try #require(fakes.locate.requests.first)
            #expect(request.parameter("client_name") == "wehe-swift")
            #expect(request.parameter("client_version") == WeheVersion.number)
            #expect(request.parameter("client_os")?.isEmpty == false)
            #expect(request.headers["user-agent"] == "wehe-swift/\(WeheVersion.number)")
            #expect(request.headers["authorization"] == nil)
            // Locate copies client_* into the envelope URL; the client uses the URL exactly as given.
            let url = try #require(access.target.envelopeURL)
            #expect(url.contains("client_name=wehe-swift"), "\(url)")
        }
    }

    @Test("tokens: a second step uses the same answer's next token; once the tokens are stale, locate is asked again")
    func tokenExpiryBetweenSteps() async throws {
        try await FleetFakes.run { fakes in
            fakes.locate.issue(machines: FleetFakes.machines, envelopes: fakes.envelopes, tokenLifetime: .seconds(12))
            // Tokens of 12 s, less the 1 s envelope timeout and a 5 s margin: an answer serves 6 s (room for the
            // second envelope to open on a loaded machine).
            let session = FleetSession(configuration: Self.fleet(fakes, lifetime: .seconds(12)))
            let first = try await session.open()
            await first.close()
            let second = try await session.open()
            await second.close()
            #expect(fakes.locate.requests.count == 1, "the answer's second token is used while it is valid")
            #expect(first.target.machine == FleetFakes.machines[0])
            #expect(second.target.machine == FleetFakes.machines[1])
            // A used token does not open a second envelope (single use, as the stand-in enforces).
            let reused = await #expect(throws: FleetError.self) {
                _ = try await AccessEnvelope.open(
                    url: try #require(first.target.envelopeURL), machine: "again", timeout: .seconds(2),
                    additionalTrustPEM: fakes.caPEM)
            }
            #expect(reused?.message.contains("401") == true, "\(reused?.message ?? "")")
            // Wait for the state: the answer's tokens are stale for the client.
            let located = try #require(fakes.locate.requests.first?.at)
            let clock = ContinuousClock()
            while Date().timeIntervalSince(located) < 6.1 { try await clock.sleep(for: .milliseconds(50)) }
            let third = try await session.open()
            await third.close()
            #expect(fakes.locate.requests.count == 2, "stale tokens: a new locate answer")
            #expect(await session.locateCalls == 2)
            let sessions = fakes.envelopes.sessions
            #expect(sessions.count == 3)
            #expect(Set(sessions.map(\.token)).count == 3, "each envelope has its own token")
            // Four upgrade requests: the session's three, and this test's own attempt to reuse the first token.
            let upgrades = fakes.envelopes.upgradeRequests
            #expect(upgrades.count == 4 && Set(upgrades).count == 3, "the session tried no stale or used token")
            #expect(upgrades.filter { $0 == sessions.first?.token }.count == 2, "the first token, and only it, twice")
        }
    }

    @Test("a 503 on the second envelope: a new locate answer, and the step gets an envelope")
    func serviceUnavailableOnSecondEnvelope() async throws {
        try await FleetFakes.run { fakes in
            fakes.locate.issue(machines: FleetFakes.machines, envelopes: fakes.envelopes)
            fakes.envelopes.refuseRequest(number: 2, status: 503)
            let failures = Mutex<[FleetAccess.Attempt]>([])
            let session = FleetSession(configuration: Self.fleet(fakes, lifetime: .seconds(60))) { event in
                if case .attemptFailed(let attempt) = event { failures.withLock { $0.append(attempt) } }
            }
            let first = try await session.open()
            await first.close()
            let second = try await session.open()
            await second.close()
            #expect(failures.withLock { $0.map(\.machine) } == [FleetFakes.machines[1]])
            #expect(failures.withLock { $0.first?.reason.contains("503") } == true)
            #expect(fakes.locate.requests.count == 2, "the answer had no other target: locate again")
            #expect(fakes.envelopes.upgradeRequests.count == 3)
            #expect(fakes.envelopes.sessions.count == 2)
            #expect(second.target.machine == FleetFakes.machines[0])
        }
    }

    @Test("429 from locate: rate-limited by M-Lab, with Retry-After's time; the limit is per address and User-Agent")
    func rateLimited() async throws {
        try await FleetFakes.run { fakes in
            fakes.locate.issue(machines: FleetFakes.machines, envelopes: fakes.envelopes)
            fakes.locate.setRateLimit(perHour: 2)
            let locator = FleetLocator(configuration: Self.fleet(fakes, lifetime: .seconds(60)))
            _ = try await locator.locate()
            _ = try await locator.locate()
            let started = Date()
            let error = await #expect(throws: FleetError.self) { _ = try await locator.locate() }
            #expect(error?.code == .locateRateLimited)
            let message = error?.message ?? ""
            #expect(message.contains("rate-limited by M-Lab"), "\(message)")
            #expect(message.contains("429"), "\(message)")
            #expect(message.contains("try again after") && message.contains("(Retry-After)"), "\(message)")
            // Retry-After is about an hour from the first call: the time said is in the next hour.
            let said = try #require(message.range(of: #"\d{4}-\d\d-\d\dT[\d:]+Z"#, options: .regularExpression))
            let when = try #require(ISO8601DateFormatter().date(from: String(message[said])))
            #expect(when > started.addingTimeInterval(3000) && when < started.addingTimeInterval(3700))
            #expect(fakes.locate.requests.count == 3)
        }
    }

    @Test("priority access: /v2/priority/nearest with the bearer token; a refused token says so")
    func priority() async throws {
        try await FleetFakes.run { fakes in
            fakes.locate.issue(machines: FleetFakes.machines, envelopes: fakes.envelopes)
            fakes.locate.addPriorityToken("good-token")
            var fleet = Self.fleet(fakes, lifetime: .seconds(60))
            fleet.priorityToken = "good-token"
            let answer = try await FleetLocator(configuration: fleet).locate()
            #expect(answer.targets.count == 2)
            let request = try #require(fakes.locate.requests.last)
            #expect(request.unidentified == "/v2/priority/nearest/wehe/replay")
            #expect(request.headers["authorization"] == "Bearer good-token")
            fleet.priorityToken = "bad-token"
            let error = await #expect(throws: FleetError.self) {
                _ = try await FleetLocator(configuration: fleet).locate()
            }
            #expect(error?.code == .locateRefused)
            #expect(error?.message.contains("priority token was refused") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("401") == true)
        }
    }
}

@Suite("wehe run: many tests through envelopes with a short deadline (built binary)", .timeLimit(.minutes(4)))
struct FleetLongCommandLineTests {
    @Test("six tests outlast one envelope's deadline: each runs inside an envelope of its own, all complete")
    func sixTestsOutlastTheDeadline() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-long")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.71") { world in
            try await FleetFakes.run { fakes in
                let deadline = 4.0
                fakes.envelopes.setDeadline(.seconds(deadline))
                fakes.locate.issue(machines: FleetFakes.machines, envelopes: fakes.envelopes)
                let started = Date()
                let run = try await BuiltCommand.run(
                    "wehe",
                    ["run"] + Array(repeating: "tinyweb", count: 6) + ["--json", "--cert", world.caPath]
                        + fakes.options(world, data: data))
                let elapsed = Date().timeIntervalSince(started)
                #expect(run.status == 0, "\(run.stderr)")
                let results = run.stdout.split(separator: "\n").filter { $0.hasPrefix("{") }
                #expect(results.count == 6, "\(run.stdout)")
                #expect(run.stderr.contains("fleet: each test runs in an access envelope of its own"), "\(run.stderr)")
                #expect(run.stderr.contains("up to 6 locate calls for 6 tests"), "\(run.stderr)")
                #expect(elapsed > deadline, "the six tests together outlast one envelope (\(elapsed) s)")
                let sessions = fakes.envelopes.sessions
                #expect(sessions.count == 6)
                #expect(sessions.allSatisfy { !$0.closedAtDeadline && $0.closedAt != nil })
                #expect(sessions.allSatisfy { $0.framesReceived == 0 })
                // Every replay was admitted while an envelope was open.
                let user = try #require(FleetCommandLineTests.userID(data))
                let admitted = try await world.serverStore.sessionEvents(
                    SessionEventQuery(kinds: [.admissionGranted], limit: 1000)
                ).filter { $0.userID == user }.map(\.at)
                #expect(admitted.count >= 12)
                for time in admitted {
                    #expect(
                        sessions.contains { $0.openedAt <= time && time <= ($0.closedAt ?? .distantFuture) },
                        "a replay admitted at \(time) outside every envelope")
                }
                let identities = fakes.locate.requests.map { $0.parameter("client_name") }
                #expect(identities.allSatisfy { $0 == "wehe-swift" })
            }
        }
    }

    @Test("a 429 from locate: one line, exit 34, the time to try again")
    func rateLimitedExit() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-long")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.72") { world in
            try await FleetFakes.run { fakes in
                fakes.locate.issue(machines: FleetFakes.machines, envelopes: fakes.envelopes)
                fakes.locate.setRateLimit(perHour: 0)
                let run = try await BuiltCommand.run(
                    "wehe", ["run", "tinyweb", "--cert", world.caPath] + fakes.options(world, data: data))
                #expect(run.status == 34, "\(run.stderr)")
                #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
                #expect(run.stderr.contains("rate-limited by M-Lab"), "\(run.stderr)")
                #expect(run.stderr.contains("try again after"), "\(run.stderr)")
            }
        }
    }

    @Test("--locate-token-file asks the priority path with the token; a refused token exits 30 saying so")
    func priorityToken() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-long")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.73") { world in
            try await FleetFakes.run { fakes in
                fakes.locate.issue(machines: FleetFakes.machines, envelopes: fakes.envelopes)
                fakes.locate.addPriorityToken("token-of-the-integration")
                let tokenFile = data + "-token"
                defer { try? FileManager.default.removeItem(atPath: tokenFile) }
                try "token-of-the-integration\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
                let good = try await BuiltCommand.run(
                    "wehe",
                    ["run", "tinyweb", "--cert", world.caPath, "--locate-token-file", tokenFile]
                        + fakes.options(world, data: data))
                #expect(good.status == 0, "\(good.stderr)")
                let request = try #require(fakes.locate.requests.last)
                #expect(request.unidentified == "/v2/priority/nearest/wehe/replay")
                #expect(request.headers["authorization"] == "Bearer token-of-the-integration")
                try "another-token\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
                let refused = try await BuiltCommand.run(
                    "wehe",
                    ["run", "tinyweb", "--cert", world.caPath, "--locate-token-file", tokenFile]
                        + fakes.options(world, data: data))
                #expect(refused.status == 30, "\(refused.stderr)")
                #expect(refused.stderr.contains("priority token was refused"), "\(refused.stderr)")
            }
        }
    }
}
