import Foundation
import Testing
import WeheTestKit

@Suite("wehe replays (built binary)")
struct ReplaysCommandTests {
    let fixtures = TestResources.fixtureReplays

    @Test("list --json prints every catalog entry with availability")
    func listJSON() async throws {
        let output = try await CommandRunner.run("wehe", ["replays", "list", "--replays", fixtures, "--json"])
        #expect(output.status == 0, "\(output.stderr)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [[String: Any]])
        #expect(entries.map { $0["id"] as? String } == ["tinyweb", "tinysix", "tinycall", "port8081s", "absent"])
        #expect(entries.map { $0["available"] as? Bool } == [true, true, true, true, false])
        #expect(entries[3]["controlFile"] as? String == "port_443.pcap_client_all.json")
    }

    @Test("list prints a table and counts tests without traces")
    func listTable() async throws {
        let output = try await CommandRunner.run("wehe", ["replays", "list", "--replays", fixtures])
        #expect(output.status == 0)
        #expect(output.stdout.contains("ID"))
        #expect(output.stdout.contains("tinycall"))
        #expect(output.stdout.contains("5 tests in"))
        #expect(output.stdout.contains("1 without trace files"))
    }

    @Test("show prints flows, packets, bytes and duration for both traces")
    func show() async throws {
        let output = try await CommandRunner.run("wehe", ["replays", "show", "tinysix", "--replays", fixtures])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("original: TinySix-11212026"))
        #expect(output.stdout.contains("control: TinySixRandom-11212026"))
        #expect(output.stdout.contains("2001:2:0:1::2.51000-2001:2:0:2::2.00443"))
        #expect(output.stdout.contains("3 client→server, 2 response groups"))
        #expect(output.stdout.contains("(153000 B)"))
        let json = try await CommandRunner.run(
            "wehe", ["replays", "show", "tinycall", "--replays", fixtures, "--json"])
        let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(items.count == 2)
        #expect(items[0]["transport"] as? String == "udp")
        #expect(items[0]["packets"] as? Int == 52)
    }

    @Test("show of an unknown test exits 1 with one line on stderr")
    func showUnknown() async throws {
        let output = try await CommandRunner.run("wehe", ["replays", "show", "nosuchapp", "--replays", fixtures])
        #expect(output.status == 1)
        #expect(output.stderr.split(separator: "\n").count == 1)
        #expect(output.stderr.contains("no test named 'nosuchapp'"))
    }

    @Test("show of a listed test whose files are absent exits 3 naming the file")
    func showAbsent() async throws {
        let output = try await CommandRunner.run("wehe", ["replays", "show", "absent", "--replays", fixtures])
        #expect(output.status == 3)
        #expect(output.stderr.contains("Absent_11212026.pcap_client_all.json"))
    }

    @Test("validate exits 0 with warnings only, 1 when a file is invalid")
    func validate() async throws {
        let good = try await CommandRunner.run("wehe", ["replays", "validate", fixtures])
        #expect(good.status == 0)
        #expect(good.stdout.contains("warning:"))
        #expect(good.stdout.contains("0 errors"))
        let directory = TestResources.temporaryDirectory()
        TestResources.write("[[], [], [\"bad\"], \"X\"]", to: directory + "/Bad_01012026.pcap_client_all.json")
        let bad = try await CommandRunner.run("wehe", ["replays", "validate", directory])
        #expect(bad.status == 1)
        #expect(bad.stdout.contains("Bad_01012026.pcap_client_all.json: field element 2[0]"))
    }

    @Test("--replays falls back to $WEHE_REPLAYS")
    func environmentDefault() async throws {
        let output = try await CommandRunner.run(
            "wehe", ["replays", "list", "--json"], environment: ["WEHE_REPLAYS": fixtures])
        #expect(output.status == 0)
        #expect(output.stdout.contains("tinyweb"))
    }
}
