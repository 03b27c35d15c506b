import Foundation
import Testing
import WeheTestKit

/// Every JSON output that carries a test result, produced by the built binaries on loopback, validated against
/// `Docs/result.schema.json` by Python's `jsonschema` (the environment has no Swift validator): `wehe run --json`,
/// `wehe demo --json`, `wehe results --json`, `wehe results show --json`, `wehe results export --format json` and the
/// dashboard's `/api/history` and `/api/tests`. A missing validator fails the test.
@Suite("one result schema for every JSON output (built binaries, jsonschema)", .timeLimit(.minutes(4)))
struct ResultSchemaTests {
    /// Validates each file (`lines`: one record per line; `array`: the test records of an array; `object`: one
    /// record) and prints `<label> <count>` per file; exit 1 with every error otherwise.
    static let validator = """
        import json, sys
        try:
            import jsonschema
        except ImportError:
            sys.exit("the Python package jsonschema is missing: pip install jsonschema")
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        failed = False
        for spec in sys.argv[2:]:
            label, mode, path = spec.split("=", 2)
            text = open(path).read()
            if mode == "lines":
                records = [json.loads(line) for line in text.splitlines() if line.strip()]
            elif mode == "array":
                records = [item for item in json.loads(text) if item.get("kind", "test") == "test"]
            else:
                records = [json.loads(text)]
            for index, record in enumerate(records):
                for error in validator.iter_errors(record):
                    failed = True
                    print(f"{label}[{index}] {error.json_path}: {error.message}")
            print(label, len(records))
        sys.exit(1 if failed else 0)
        """

    /// Runs the validator on `(label, mode, text)` outputs; returns the number of records per label.
    static func validate(_ outputs: [(String, String, String)]) async throws -> [String: Int] {
        let directory = TestResources.temporaryDirectory("wehe-schema")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var arguments = ["-c", validator, TestResources.packageRoot + "/Docs/result.schema.json"]
        for (label, mode, text) in outputs {
            let path = directory + "/" + label
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            arguments.append("\(label)=\(mode)=\(path)")
        }
        let result = try await Python.run(arguments)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        var counts: [String: Int] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let count = Int(parts[1]) { counts[String(parts[0])] = count }
        }
        return counts
    }

    @Test("run, results, show, export and the dashboard's JSON all validate; a wrong record does not")
    func everyOutputValidates() async throws {
        let data = TestResources.temporaryDirectory("wehe-schema-data")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let runs = try await LoopbackWorld.run(address: "127.0.0.57", sampleCount: 2000) { world in
            let common = [
                "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server", world.address,
                "--cert", world.caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1),
                "--analyzer-port", String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation",
            ]
            let published = try await BuiltCommand.run(
                "wehe", ["run", "tinyweb", "tinycall", "port8081s", "--json"] + common)
            // An interleaved test: the history then keeps a sensitive verdict too (method "interleaved").
            let interleaved = try await BuiltCommand.run(
                "wehe", ["run", "tinyweb", "--interleaved", "--rounds", "8", "--json"] + common)
            return (published, interleaved)
        }
        let (run, interleaved) = runs
        #expect(run.status == 0, "\(run.stderr)")
        #expect(interleaved.status == 0, "\(interleaved.stderr)")
        let replays = ["--replays", TestResources.fixtureReplays]
        let list = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"] + replays)
        let show = try await BuiltCommand.run("wehe", ["results", "show", "2", "--data-dir", data, "--json"] + replays)
        let export = try await BuiltCommand.run(
            "wehe", ["results", "export", "--format", "json", "--data-dir", data] + replays)
        let csv = try await BuiltCommand.run(
            "wehe", ["results", "export", "--format", "csv", "--data-dir", data] + replays)
        for output in [list, show, export, csv] { #expect(output.status == 0, "\(output.stderr)") }

        // The dashboard over the same history.
        let settings = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: data + "/settings.json")))
                as? [String: Any])
        let user = try #require(settings["userID"] as? String)
        let dashboard = try BuiltCommand.start("wehe", ["dashboard", "--port", "0", "--data-dir", data] + replays)
        var base: String?
        for _ in 0..<600 where base == nil {
            base = dashboard.stdoutSoFar.split(separator: "\n").first { $0.hasPrefix("wehe dashboard: ") }
                .map { String($0.dropFirst("wehe dashboard: ".count)) }
            if base == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let address = try #require(base, "the dashboard printed no address")
        let escapedUser = user.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? user
        let history = try await Self.get(address + "api/history")
        let test = try await Self.get(address + "api/tests/\(escapedUser)/2")
        dashboard.process.interrupt()
        _ = try await dashboard.wait()
        #expect(history.status == 200 && test.status == 200, "\(history.body) \(test.body)")

        let counts = try await Self.validate([
            ("run", "lines", run.stdout), ("interleaved", "lines", interleaved.stdout),
            ("results", "array", list.stdout), ("show", "object", show.stdout),
            ("export", "array", export.stdout), ("dashboard-history", "array", history.body),
            ("dashboard-test", "object", test.body),
        ])
        #expect(counts["run"] == 3)
        #expect(counts["interleaved"] == 1)
        #expect(counts["results"] == 4)
        #expect(counts["show"] == 1)
        #expect(counts["export"] == 4)
        #expect(counts["dashboard-history"] == 4)
        #expect(counts["dashboard-test"] == 1)

        // The same keys for the same things: the run's record of test 2 and its history records agree.
        func object(_ text: String) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        }
        let ranLine = try #require(run.stdout.split(separator: "\n").dropFirst().first)
        let ran = try object(String(ranLine))
        let shown = try object(show.stdout)
        let served = try object(test.body)
        for key in ["historyCount", "test", "name", "replay", "verdict", "server", "date", "schemaVersion"] {
            #expect("\(ran[key] ?? "absent")" == "\(shown[key] ?? "absent")", "\(key)")
            #expect("\(shown[key] ?? "absent")" == "\(served[key] ?? "absent")", "\(key)")
        }
        #expect(shown["test"] as? String == "tinycall")
        #expect((shown["replays"] as? [Any])?.count == 2)
        // ISO 8601 with an offset (Z or ±hh:mm).
        let date = try #require(ran["date"] as? String)
        #expect(date.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)/) != nil, "\(date)")
        // The CSV has the record's keys as its columns.
        let header = try #require(csv.stdout.split(separator: "\n").first)
        #expect(header.hasPrefix("schemaVersion,kind,historyCount,id,date,test,name,app,replay,"))
        #expect(csv.stdout.split(separator: "\n").count == 5)
        // The interleaved test's record says so in the run's output and in the history.
        let interleavedRecord = try object(interleaved.stdout)
        #expect(interleavedRecord["method"] as? String == "interleaved")
        #expect(interleavedRecord["sensitiveRounds"] as? Int == 8)
        let listed = try #require(
            try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(listed.first { $0["historyCount"] as? Int == 4 }?["method"] as? String == "interleaved")

        // The validator is not vacuous: a wrong verdict, a missing key, an unknown key and a date without an
        // offset are each refused.
        var wrong = try object(show.stdout)
        wrong["verdict"] = "maybe"
        var missing = try object(show.stdout)
        missing.removeValue(forKey: "schemaVersion")
        var extra = try object(show.stdout)
        extra["surprise"] = 1
        var local = try object(show.stdout)
        local["date"] = "2026-11-24T15:02:11"
        for (label, record) in [("wrong", wrong), ("missing", missing), ("extra", extra), ("local", local)] {
            let text = String(decoding: try JSONSerialization.data(withJSONObject: record), as: UTF8.self)
            let directory = TestResources.temporaryDirectory("wehe-schema-bad")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try text.write(toFile: directory + "/bad", atomically: true, encoding: .utf8)
            let refused = try await Python.run([
                "-c", Self.validator, TestResources.packageRoot + "/Docs/result.schema.json",
                "\(label)=object=\(directory)/bad",
            ])
            #expect(refused.status == 1, "\(label): \(refused.stdout)")
            #expect(refused.stdout.contains("\(label)[0]"), "\(label): \(refused.stdout)\(refused.stderr)")
        }
    }

    @Test("wehe demo --json validates too")
    func demoValidates() async throws {
        let demo = try await BuiltCommand.run(
            "wehe", ["demo", "--replays", TestResources.fixtureReplays, "--tests", "tinycall", "--json"])
        #expect(demo.status == 0, "\(demo.stderr)")
        let counts = try await Self.validate([("demo", "lines", demo.stdout)])
        #expect(counts["demo"] == 1)
    }

    static func get(_ address: String) async throws -> (status: Int, body: String) {
        let response = try await LoopbackHTTP.get(address)
        return (response.status, response.body)
    }
}

/// `python3` with arguments, output collected (through `TestProcess`, never Foundation's `Process`).
enum Python {
    static func run(_ arguments: [String]) async throws -> BuiltCommand.Output {
        try await BuiltCommand.run(executable: "/usr/bin/env", ["python3"] + arguments)
    }
}
