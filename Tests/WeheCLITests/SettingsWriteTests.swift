import Foundation
import Testing
import WeheTestKit

/// Every settings write is a read-modify-write of the keys the command changes, under a lock, replacing the file
/// atomically: commands writing at once keep each other's changes, and no command writes a key it did not change.
@Suite("settings writes (built binary)")
struct SettingsWriteTests {
    /// Eight `wehe settings set` processes at once, each changing another key, five times over.
    @Test("writers changing different keys at the same time all keep their change")
    func concurrentWriters() throws {
        let data = TestResources.temporaryDirectory("wehe-settings-race")
        for round in 0..<5 {
            let changes: [(key: String, value: String, stored: String, expected: String)] = [
                ("server", "192.0.2.\(round + 1)", "server", "192.0.2.\(round + 1)"),
                ("site", "site\(round)", "site", "site\(round)"),
                ("p-threshold", "0.0\(round + 1)", "ksPValueThreshold", "0.0\(round + 1)"),
                ("area-threshold", "0.\(round + 1)", "areaThreshold", "0.\(round + 1)"),
                ("locate-url", "http://127.0.0.1:\(9000 + round)", "locateURL", "http://127.0.0.1:\(9000 + round)"),
                ("user-id", "@user\(round)", "userID", "@user\(round)"),
                ("rules", round % 2 == 0 ? "ios" : "android", "ruleSet", round % 2 == 0 ? "ios" : "android"),
                ("language", round % 2 == 0 ? "fr" : "en", "language", round % 2 == 0 ? "fr" : "en"),
            ]
            let processes = try changes.map { change in
                try Self.start(["settings", "set", change.key, change.value, "--data-dir", data])
            }
            for process in processes {
                process.waitUntilExit()
                #expect(process.terminationStatus == 0)
            }
            let stored = try Self.settings(data)
            for change in changes {
                let value = stored[change.stored].map { "\($0)" }
                #expect(value == change.expected, "round \(round): \(change.key) lost: \(stored)")
            }
        }
    }

    @Test("a write changes only its key: other keys, even unknown ones, stay as the file has them")
    func onlyTheChangedKey() async throws {
        let data = TestResources.temporaryDirectory("wehe-settings-keys")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let original = #"{"userID": "@keepme123", "server": "192.0.2.1", "futureSetting": [1, 2.50]}"#
        try Data(original.utf8).write(to: URL(fileURLWithPath: data + "/settings.json"))
        let set = try await CommandRunner.run("wehe", ["settings", "set", "site", "par01", "--data-dir", data])
        #expect(set.status == 0, "\(set.stderr)")
        let text = try String(contentsOfFile: data + "/settings.json", encoding: .utf8)
        let stored = try Self.settings(data)
        #expect(Set(stored.keys) == ["userID", "server", "futureSetting", "site"], "\(text)")
        #expect(stored["site"] as? String == "par01")
        #expect(stored["userID"] as? String == "@keepme123")
        // An unknown value is kept as written, number spelling included.
        #expect(text.contains("[1, 2.50]"), "\(text)")
        // No temporary file is left next to the settings.
        let names = try FileManager.default.contentsOfDirectory(atPath: data)
        #expect(!names.contains { $0.hasSuffix(".tmp") }, "\(names)")
    }

    @Test("the first command records the user id, and later commands show the same one")
    func userIDRecordedOnce() async throws {
        let data = TestResources.temporaryDirectory("wehe-settings-id")
        let first = try await CommandRunner.run("wehe", ["settings", "--data-dir", data])
        #expect(first.status == 0, "\(first.stderr)")
        let recorded = try #require(try Self.settings(data)["userID"] as? String)
        #expect(first.stdout.contains(recorded))
        let second = try await CommandRunner.run("wehe", ["settings", "--data-dir", data])
        #expect(second.stdout.contains(recorded))
        // Only the identity was written: defaults stay implicit.
        #expect(Array(try Self.settings(data).keys) == ["userID"])
    }

    static func start(_ arguments: [String]) throws -> TestProcess {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: TestResources.builtProduct("wehe"))
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func settings(_ data: String) throws -> [String: Any] {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: data + "/settings.json"))
        return try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
    }
}
