import Foundation
import Testing
import WeheTestKit

/// The user's recordings (`wehe record`'s default folder) join the catalog in every command that reads traces, and
/// lists show them apart.
@Suite("wehe replays with the user's recordings (built binary)")
struct RecordingsListTests {
    let fixtures = TestResources.fixtureReplays

    /// A recordings folder with one recorded test made of the fixture's Tiny Web traces, and one whose id the
    /// catalog already has (the catalog's entry must win).
    func recordings() throws -> String {
        let directory = TestResources.temporaryDirectory("wehe-recordings")
        for file in ["TinyWeb_11212026.pcap_client_all.json", "TinyWebRandom_11212026.pcap_client_all.json"] {
            try FileManager.default.copyItem(atPath: fixtures + "/" + file, toPath: directory + "/" + file)
        }
        let entry = { (id: String, name: String) in
            """
            {"name": "\(name)", "size": 1, "time": 1, "image": "\(id)", "recorded": true, "category": "OTHER",
             "datafile": "TinyWeb_11212026.pcap_client_all.json",
             "randomdatafile": "TinyWebRandom_11212026.pcap_client_all.json"}
            """
        }
        let catalog = "{\"apps\": [" + entry("myshop", "My Shop") + ", " + entry("tinyweb", "Impostor") + "]}"
        try catalog.write(toFile: directory + "/apps_list.json", atomically: true, encoding: .utf8)
        return directory
    }

    @Test("list shows the recordings under their own heading, after the catalog, and counts them")
    func listTable() async throws {
        let recordings = try recordings()
        defer { try? FileManager.default.removeItem(atPath: recordings) }
        let output = try await CommandRunner.run(
            "wehe", ["replays", "list"], environment: ["WEHE_REPLAYS": fixtures, "WEHE_RECORDINGS": recordings])
        #expect(output.status == 0, "\(output.stderr)")
        let heading = try #require(output.stdout.range(of: "Your recordings (wehe record)"))
        let mine = try #require(output.stdout.range(of: "myshop"))
        let catalogTest = try #require(output.stdout.range(of: "tinycall"))
        #expect(catalogTest.lowerBound < heading.lowerBound && heading.lowerBound < mine.lowerBound)
        #expect(output.stdout.contains("5 tests and 1 of your recordings in \(fixtures) and \(recordings)"))
        #expect(!output.stdout.contains("Impostor"), "a recording may not replace a catalog test of the same id")
    }

    @Test("list --json marks recorded tests; --replays names one folder and leaves the recordings out")
    func listJSON() async throws {
        let recordings = try recordings()
        defer { try? FileManager.default.removeItem(atPath: recordings) }
        let joined = try await CommandRunner.run(
            "wehe", ["replays", "list", "--json"],
            environment: ["WEHE_REPLAYS": fixtures, "WEHE_RECORDINGS": recordings])
        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(joined.stdout.utf8)) as? [[String: Any]])
        let mine = try #require(entries.first { $0["id"] as? String == "myshop" })
        #expect(mine["recorded"] as? Bool == true)
        #expect(mine["available"] as? Bool == true)
        #expect(entries.first { $0["id"] as? String == "tinyweb" }?["recorded"] as? Bool == false)
        let alone = try await CommandRunner.run(
            "wehe", ["replays", "list", "--json", "--replays", fixtures], environment: ["WEHE_RECORDINGS": recordings])
        let only = try #require(try JSONSerialization.jsonObject(with: Data(alone.stdout.utf8)) as? [[String: Any]])
        #expect(!only.contains { $0["id"] as? String == "myshop" })
    }

    @Test("show reads a recorded test's traces from the recordings folder")
    func show() async throws {
        let recordings = try recordings()
        defer { try? FileManager.default.removeItem(atPath: recordings) }
        let output = try await CommandRunner.run(
            "wehe", ["replays", "show", "myshop"],
            environment: ["WEHE_REPLAYS": fixtures, "WEHE_RECORDINGS": recordings])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("My Shop"))
        #expect(output.stdout.contains("original: TinyWeb-11212026"))
    }
}
