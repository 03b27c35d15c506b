import Foundation
import Synchronization
import Testing
import WeheClient
import WeheServer
import WeheStore
import WeheTestKit

@Suite("wehe run / servers through the fleet path (built binary, fake locate and envelope)", .timeLimit(.minutes(3)))
struct FleetCommandLineTests {
    @Test("wehe run with no --server takes the fleet path: locate, envelope open for the test, closed at exit")
    func runThroughFleet() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.64") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                fakes.envelopes.setBehaviour(.refuse(status: 403), for: "token-1")
                let run = try await BuiltCommand.run(
                    "wehe", ["run", "tinyweb", "--json", "--cert", world.caPath] + fakes.options(world, data: data))
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stderr.contains("locate: 2 servers"), "\(run.stderr)")
                #expect(
                    run.stderr.contains("server: wehe-mlab2-tst02.fleet.test (Testville, ZZ), access envelope open"))
                let object = try #require(
                    try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
                #expect(object["test"] as? String == "tinyweb")
                #expect(fakes.locate.requests.map(\.unidentified) == ["/v2/nearest/wehe/replay"])
                // The fake sees the close on its own event loop, after the process has exited.
                #expect(
                    await fakes.envelopes.wait { $0.first?.closedAt != nil },
                    "the envelope is closed when the command ends")
                #expect(fakes.envelopes.sessions.map(\.token) == ["token-2"])
                let userID = try #require(Self.userID(data))
                let count = try #require(object["historyCount"] as? Int)
                let record = try #require(
                    try await world.serverStore.test(TestKey(userID: userID, historyCount: count)))
                #expect(record.metadata.extraString == "2")
            }
        }
    }

    @Test("without --cert the fleet's servers are checked against the Wehe CA; a mismatch says so in one line")
    func weheCAByDefault() async throws {
        let weheCA = TestResources.packageRoot + "/../shared/wehe-fleet/wehe-ca.pem"
        guard FileManager.default.fileExists(atPath: weheCA) else { return }
        let data = TestResources.temporaryDirectory("wehe-fleet-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.65") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                let run = try await BuiltCommand.run("wehe", ["run", "tinyweb"] + fakes.options(world, data: data))
                #expect(run.status == 6, "\(run.stderr)")
                let lines = run.stderr.split(separator: "\n").filter { $0.hasPrefix("wehe: ") }
                #expect(lines.count == 1, "\(run.stderr)")
                #expect(
                    lines.first?.contains("the Wehe CA (../shared/wehe-fleet/wehe-ca.pem)") == true, "\(run.stderr)")
                #expect(lines.first?.contains("--cert <pem>") == true)
                // The fake records the close when the client's close frame arrives: wait for it.
                #expect(await fakes.envelopes.wait { $0.first?.closedAt != nil })
            }
        }
    }

    @Test("locate failures and no envelope: one line each and the documented exit code")
    func failures() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.66") { world in
            try await FleetFakes.run { fakes in
                func run() async throws -> BuiltCommand.Output {
                    try await BuiltCommand.run(
                        "wehe", ["run", "tinyweb", "--cert", world.caPath] + fakes.options(world, data: data))
                }
                let cases: [(FakeLocateService.Answer, Int32, String)] = [
                    (
                        .body(
                            status: 503,
                            text: FakeLocateService.errorBody(status: 503, title: "Unavailable", detail: "try later")),
                        30, "try later"
                    ),
                    (.body(status: 200, text: #"{"results": []}"#), 31, "no server"),
                    (.body(status: 200, text: "garbage"), 32, "not JSON"),
                ]
                for (answer, code, text) in cases {
                    fakes.locate.setAnswer(answer)
                    let output = try await run()
                    #expect(output.status == code, "\(output.stderr)")
                    #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
                    #expect(output.stderr.hasPrefix("wehe: locate: "), "\(output.stderr)")
                    #expect(output.stderr.contains(text), "\(output.stderr)")
                }
                fakes.offer(fakes.targets())
                fakes.envelopes.setBehaviour(.refuse(status: 403), for: "token-1")
                fakes.envelopes.setBehaviour(.refuse(status: 403), for: "token-2")
                let refused = try await run()
                #expect(refused.status == 9, "\(refused.stderr)")
                #expect(refused.stderr.contains("no access envelope opened (2 servers tried"), "\(refused.stderr)")
                let unreachable = try await BuiltCommand.run(
                    "wehe",
                    ["run", "tinyweb", "--cert", world.caPath] + fakes.options(world, data: data) + [
                        "--locate-url", "https://127.0.0.1:1",
                    ])
                #expect(unreachable.status == 28, "\(unreachable.stderr)")
                #expect(unreachable.stderr.contains("cannot reach the locate service"))
            }
        }
    }

    @Test("wehe servers --json lists what locate returns, marks the first; --site asks for one site; next_request")
    func servers() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await FleetFakes.run { fakes in
            fakes.offer(fakes.targets())
            let common = ["--data-dir", data, "--locate-url", fakes.locate.baseURL, "--locate-ca", fakes.caPath]
            let listed = try await BuiltCommand.run("wehe", ["servers", "--json"] + common)
            #expect(listed.status == 0, "\(listed.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
            let servers = try #require(object["servers"] as? [[String: Any]])
            #expect(servers.map { $0["machine"] as? String } == FleetFakes.machines)
            #expect(servers.map { $0["selected"] as? Bool } == [true, false])
            #expect(servers.first?["site"] as? String == "tst01")
            #expect(servers.first?["city"] as? String == "Testville")
            let table = try await BuiltCommand.run("wehe", ["servers", "--site", "tst02"] + common)
            #expect(table.status == 0, "\(table.stderr)")
            #expect(table.stdout.contains("* ") && table.stdout.contains("mlab1-tst01.fleet.test"))
            #expect(fakes.locate.requests.map(\.unidentified).last == "/v2/nearest/wehe/replay?site=tst02")
            // The site kept in the settings is used by the next call.
            let set = try await BuiltCommand.run("wehe", ["settings", "set", "site", "tst01", "--data-dir", data])
            #expect(set.status == 0)
            _ = try await BuiltCommand.run("wehe", ["servers"] + common)
            #expect(fakes.locate.requests.map(\.unidentified).last == "/v2/nearest/wehe/replay?site=tst01")
            // next_request in the future: the next command does not ask again.
            let later = Date().addingTimeInterval(3600)
            fakes.offer(fakes.targets(), nextRequest: (nbf: later, exp: later.addingTimeInterval(60), url: "x"))
            _ = try await BuiltCommand.run("wehe", ["servers", "--json"] + common)
            let asked = fakes.locate.requests.count
            let again = try await BuiltCommand.run("wehe", ["servers", "--json"] + common)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(fakes.locate.requests.count == asked)
            #expect(again.stdout.contains(#""reused":true"#))
        }
    }

    @Test("Ctrl-C during a fleet test: exit 130, the envelope is closed, nothing enters the history")
    func interrupted() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.68") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                let running = try BuiltCommand.start(
                    "wehe", ["run", "tinycall", "--cert", world.caPath] + fakes.options(world, data: data))
                let clock = ContinuousClock()
                let giveUp = clock.now.advanced(by: .seconds(30))
                while !running.stdoutSoFar.contains("Replaying "), running.process.isRunning, clock.now < giveUp {
                    try await clock.sleep(for: .milliseconds(10))
                }
                #expect(fakes.envelopes.openCount == 1, "the envelope is open while the replay runs")
                running.process.interrupt()
                let output = try await running.wait()
                #expect(output.status == 130, "\(output.stderr)")
                #expect(await fakes.envelopes.wait { $0.count == 1 && $0[0].closedAt != nil })
                let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
                #expect(results.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
            }
        }
    }

    @Test("the envelope closing during a fleet test: exit 33 with one line, nothing enters the history")
    func envelopeClosed() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.69") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                let running = try BuiltCommand.start(
                    "wehe", ["run", "tinycall", "--cert", world.caPath] + fakes.options(world, data: data))
                let clock = ContinuousClock()
                let giveUp = clock.now.advanced(by: .seconds(30))
                while !running.stdoutSoFar.contains("Replaying "), running.process.isRunning, clock.now < giveUp {
                    try await clock.sleep(for: .milliseconds(10))
                }
                fakes.envelopes.closeAll()
                let output = try await running.wait()
                #expect(output.status == 33, "\(output.stderr)")
                #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
                #expect(output.stderr.contains("access envelope of mlab1-tst01.fleet.test closed during the test"))
                let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
                #expect(results.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
            }
        }
    }

    static func userID(_ data: String) -> String? {
        guard let settings = FileManager.default.contents(atPath: data + "/settings.json"),
            let object = try? JSONSerialization.jsonObject(with: settings) as? [String: Any]
        else { return nil }
        return object["userID"] as? String
    }
}
