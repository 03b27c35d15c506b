import Foundation
import Testing
import WeheTestKit

/// The provider named: `wehe-server serve --asn-prefixes/--asn-names` tells each client the AS of its own address;
/// the built `wehe` shows it in its line, JSON, history, summary and dashboard. All on loopback: the table's
/// 127.0.0.0/8 entry is the client's AS.
@Suite("the provider of a test, from the server's or the client's AS table (built binaries)", .timeLimit(.minutes(4)))
struct ProviderEndToEndTests {
    /// A table whose 127.0.0.0/8 route belongs to AS64500, named; one bad line and one AS set to be skipped/counted.
    static func writeTables(_ directory: String, name: String) -> (prefixes: String, names: String) {
        let prefixes = directory + "/pfx2as.txt"
        let names = directory + "/as-names.txt"
        #expect(
            TestResources.write(
                "10.0.0.0\t8\t64501\n127.0.0.0\t8\t64500\n127.0.0.0\tx\t1\n192.0.2.0\t24\t{64502,64503}\n", to: prefixes
            ))
        #expect(TestResources.write("64500\t\(name)\n64501\tOther Net\n", to: names))
        return (prefixes, names)
    }

    /// Starts `wehe-server serve` on 127.0.0.1 with `extra` options; returns it with its side-channel, analyzer
    /// and operator dashboard addresses.
    static func startServer(data: String, extra: [String]) async throws -> (RunningProcess, [String], String) {
        let server = try RunningProcess(
            "wehe-server",
            [
                "serve", "--replays", TestResources.fixtureReplays, "--data", data, "--bind", "127.0.0.1",
                "--ephemeral-replay-ports", "--side-channel-port", "0", "--side-channel-plain-port", "off",
                "--analyzer-port", "0", "--analyzer-plain-port", "off", "--dashboard-port", "0",
                "--server-name", "asn.test", "--log-level", "warning",
            ] + extra)
        let operatorBase = try await server.address(prefix: "wehe-server: operator dashboard ")
        let listening = try await server.address(prefix: "wehe-server: listening ")
        var ports: [String: String] = [:]
        for field in listening.split(separator: " ") {
            let parts = field.split(separator: "=")
            if parts.count == 2 { ports[String(parts[0])] = String(parts[1]) }
        }
        let client = [
            "--server", "127.0.0.1", "--cert", data + "/certs/ca.crt", "--side-channel-port",
            try #require(ports["side-channel-tls"]), "--analyzer-port", try #require(ports["analyzer-tls"]),
        ]
        return (server, client, operatorBase)
    }

    /// The text with line breaks (terminal wrapping) and runs of spaces made single spaces.
    static func words(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test(
        "with the server's tables, a test from 127.0.0.1 names AS64500 in the CLI, JSON, history, summary, dashboards")
    func serverTable() async throws {
        let serverData = TestResources.temporaryDirectory("wehe-asn-server")
        let clientData = TestResources.temporaryDirectory("wehe-asn-client")
        defer {
            try? FileManager.default.removeItem(atPath: serverData)
            try? FileManager.default.removeItem(atPath: clientData)
        }
        let tables = Self.writeTables(serverData, name: "Loopback Test Net")
        let (server, connection, operatorBase) = try await Self.startServer(
            data: serverData, extra: ["--asn-prefixes", tables.prefixes, "--asn-names", tables.names])
        defer { server.stop() }
        let common =
            [
                "--replays", TestResources.fixtureReplays, "--data-dir", clientData, "--accept-consent",
                "--no-confirmation",
            ] + connection

        let run = try await CommandRunner.run("wehe", ["run", "tinyweb"] + common)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.words(run.stdout).contains("on Loopback Test Net (AS64500)"), "\(run.stdout)")

        let json = try await CommandRunner.run("wehe", ["run", "tinyweb", "--json"] + common)
        #expect(json.status == 0, "\(json.stderr)")
        let object = try Self.json(json.stdout)
        #expect(object["asNumber"] as? Int == 64500)
        #expect(object["asName"] as? String == "Loopback Test Net")
        #expect(object["asSource"] as? String == "server")
        #expect(object["provider"] as? String == "Loopback Test Net (AS64500)")
        // The route to 127.0.0.1 is the loopback interface: no Wi-Fi, wire or modem.
        #expect(object["linkKind"] as? String == "unknown")

        let history = try await CommandRunner.run("wehe", ["results", "--data-dir", clientData, "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows.allSatisfy { $0["asNumber"] as? Int == 64500 && $0["asName"] as? String == "Loopback Test Net" })
        #expect(rows.allSatisfy { $0["provider"] as? String == "Loopback Test Net (AS64500)" })

        let show = try await CommandRunner.run("wehe", ["results", "show", "1", "--summary", "--data-dir", clientData])
        #expect(Self.words(show.stdout).contains("on Loopback Test Net (AS64500)"), "\(show.stdout)")

        // The person's dashboard (history page) and the operator's (provider × app matrix).
        let dashboard = try RunningProcess("wehe", ["dashboard", "--port", "0", "--data-dir", clientData])
        defer { dashboard.stop() }
        let base = try await dashboard.address(prefix: "wehe dashboard: ")
        let page = try await HTTP.get(base)
        #expect(page.status == 200)
        #expect(page.body.contains("Loopback Test Net (AS64500)"))
        #expect(!page.body.contains("Unknown provider"))
        let operatorPage = try await HTTP.get(operatorBase)
        #expect(operatorPage.body.contains("Loopback Test Net (AS64500)"))
    }

    @Test("without a server table the client's own table names the AS; --provider names the provider")
    func clientTable() async throws {
        let serverData = TestResources.temporaryDirectory("wehe-asn-server")
        let clientData = TestResources.temporaryDirectory("wehe-asn-client")
        defer {
            try? FileManager.default.removeItem(atPath: serverData)
            try? FileManager.default.removeItem(atPath: clientData)
        }
        let tables = Self.writeTables(clientData, name: "Own Table Net")
        let (server, connection, _) = try await Self.startServer(data: serverData, extra: [])
        defer { server.stop() }
        let common =
            [
                "--replays", TestResources.fixtureReplays, "--data-dir", clientData, "--accept-consent",
                "--no-confirmation", "--json",
            ] + connection
        let own = try await CommandRunner.run(
            "wehe", ["run", "tinyweb", "--asn-prefixes", tables.prefixes, "--asn-names", tables.names] + common)
        #expect(own.status == 0, "\(own.stderr)")
        let object = try Self.json(own.stdout)
        #expect(object["asNumber"] as? Int == 64500)
        #expect(object["asSource"] as? String == "local")
        #expect(object["provider"] as? String == "Own Table Net (AS64500)")

        // Settings hold the table; --provider renames the provider and keeps the AS number.
        for (key, value) in [("asn-prefixes", tables.prefixes), ("asn-names", tables.names)] {
            let set = try await CommandRunner.run("wehe", ["settings", "set", key, value, "--data-dir", clientData])
            #expect(set.status == 0, "\(set.stderr)")
        }
        let named = try await CommandRunner.run("wehe", ["run", "tinyweb", "--provider", "My Fibre"] + common)
        #expect(named.status == 0, "\(named.stderr)")
        let renamed = try Self.json(named.stdout)
        #expect(renamed["provider"] as? String == "My Fibre (AS64500)")
        #expect(renamed["asName"] as? String == "Own Table Net")

        // No table anywhere: the provider is unknown, and the CLI line says so.
        for key in ["asn-prefixes", "asn-names"] {
            _ = try await CommandRunner.run("wehe", ["settings", "set", key, "none", "--data-dir", clientData])
        }
        let plain = try await CommandRunner.run("wehe", Array(["run", "tinyweb"] + common.filter { $0 != "--json" }))
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(Self.words(plain.stdout).contains("on unknown provider"), "\(plain.stdout)")

        let missing = try await CommandRunner.run(
            "wehe", ["run", "tinyweb", "--asn-prefixes", clientData + "/absent"] + common)
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("IP-to-AS table"), "\(missing.stderr)")
    }
}
