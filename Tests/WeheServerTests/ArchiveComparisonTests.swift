import Foundation
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// Our server's archive (`--archive`) against the files the reference server wrote
/// (`../shared/reference/wehe-py3-archive`): the same tests run here with the reference's user IDs, history counts,
/// client version and samples, then every file is compared field by field.
///
/// Compared exactly: file names (with the day folder set aside), keys and their order, array lengths, JSON types
/// (integer and float told apart, as the reference's Python writes them), strings, booleans, integers and sample
/// arrays. Compared to 1e-9 relative: area, means, medians, standard deviations, KS statistic and p-value.
/// Documented differences, checked for type and range only: the side-channel arrival time (`timestamp`, format
/// `YYYY-MM-DD HH:MM:SS`), the server's duration (`testDurationServer`), `measurementUUID` (`wehe_` and the socket
/// cookie's 16 hex digits), and the jackknife numbers (`KSAcceptRatio`, `KSAvgDVal`, `KSAvgPVal`: random subsets in
/// the reference, seeded per test here; in [0, 1]). The localization's samples are not in the reference archive, so
/// its numbers are checked for type only.
@Suite(
    "Archive against the reference server's files", .timeLimit(.minutes(4)),
    .enabled(if: TestResources.hasSharedReplays && TestResources.hasReferenceArchive))
struct ArchiveComparisonTests {
    static var reference: String { TestResources.referenceArchive }

    /// Every file below `root`, relative, with `YYYY/MM/DD` replaced by `<day>`.
    static func files(under root: String) -> [String: String] {
        var found: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory),
                !isDirectory.boolValue, !path.hasPrefix(".partial")
            else { continue }
            let normalized = path.replacingOccurrences(
                of: #"[0-9]{4}/[0-9]{2}/[0-9]{2}"#, with: "<day>", options: .regularExpression)
            found[normalized] = root + "/" + path
        }
        return found
    }

    static func read(_ path: String) throws -> JSONValue {
        try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// How one field is compared.
    enum Rule {
        case exact
        case close
        case typeOnly
        case probability
        case timestamp
        case uuid
    }

    /// The rule for a field, by file kind and key or array position.
    static func rule(file: String, path: [String]) -> Rule {
        let last = path.last ?? ""
        if file.contains("replayInfo") {
            switch last {
            case "timestamp", "[0]": return path.count == 1 ? .timestamp : .exact
            case "testDurationServer", "[12]": return path.count == 1 ? .typeOnly : .exact
            case "measurementUUID", "[17]": return path.count == 1 ? .uuid : .exact
            default: return .exact
            }
        }
        if file.contains("results_") {
            if ["KSAcceptRatio", "KSAvgDVal", "KSAvgPVal", "[1]", "[7]", "[8]"].contains(last), path.count == 1 {
                return .probability
            }
            return ["userID", "historyCount", "testID", "emptyField", "[3]"].contains(last) ? .exact : .close
        }
        if file.contains("localizeResults_") {
            return path.first == "localizeTestsResults" && path.count > 2 ? .typeOnly : .exact
        }
        return .exact
    }

    static func kind(_ value: JSONValue) -> String {
        if case .number(_, let text) = value { return text.contains(where: { ".eE".contains($0) }) ? "float" : "int" }
        return value.typeName
    }

    /// The differences between `ours` and `theirs`, each naming the file and the field.
    static func compare(
        _ ours: JSONValue, _ theirs: JSONValue, file: String, path: [String] = [], into problems: inout [String]
    ) {
        let field = path.isEmpty ? "<root>" : path.joined(separator: ".")
        let rule = rule(file: file, path: path)
        if rule == .typeOnly, kind(ours) == kind(theirs) || (ours.typeName == "number" && theirs.typeName == "number") {
            return
        }
        guard kind(ours) == kind(theirs) else {
            problems.append("\(file): \(field): type \(kind(ours)), reference \(kind(theirs))")
            return
        }
        switch (ours, theirs) {
        case (.object(let a), .object(let b)):
            let keysA = a.map(\.0)
            let keysB = b.map(\.0)
            guard keysA == keysB else {
                problems.append("\(file): \(field): keys \(keysA), reference \(keysB)")
                return
            }
            for ((key, valueA), (_, valueB)) in zip(a, b) {
                compare(valueA, valueB, file: file, path: path + [key], into: &problems)
            }
        case (.array(let a), .array(let b)):
            guard a.count == b.count else {
                problems.append("\(file): \(field): \(a.count) elements, reference \(b.count)")
                return
            }
            for (index, (valueA, valueB)) in zip(a, b).enumerated() {
                compare(valueA, valueB, file: file, path: path + ["[\(index)]"], into: &problems)
            }
        case (.number(let a, _), .number(let b, _)):
            switch rule {
            case .close:
                if abs(a - b) > 1e-9 * max(abs(a), abs(b), 1e-300), abs(a - b) > 1e-15 {
                    problems.append("\(file): \(field): \(a), reference \(b)")
                }
            case .probability:
                if !(0...1).contains(a) { problems.append("\(file): \(field): \(a) outside [0, 1]") }
            case .typeOnly:
                break
            default:
                if a != b { problems.append("\(file): \(field): \(a), reference \(b)") }
            }
        case (.string(let a), .string(let b)):
            switch rule {
            case .timestamp:
                if a.range(of: #"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$"#, options: .regularExpression)
                    == nil
                {
                    problems.append("\(file): \(field): '\(a)' is not YYYY-MM-DD HH:MM:SS")
                }
            case .uuid:
                if a.range(of: #"^wehe_[0-9A-F]{16}$"#, options: .regularExpression) == nil {
                    problems.append("\(file): \(field): '\(a)' is not wehe_<16 hex digits>")
                }
            case .typeOnly:
                break
            default:
                if a != b { problems.append("\(file): \(field): '\(a)', reference '\(b)'") }
            }
        default:
            if ours != theirs {
                problems.append("\(file): \(field): \(ours.serialized()), reference \(theirs.serialized())")
            }
        }
    }

    /// The reference's per-user sample file as the client sent it: the server drops the last sample, so one more is
    /// appended.
    static func upload(fromReference path: String) throws -> String {
        guard case .array(let lists) = try read(path), lists.count == 2,
            case .array(let xputs) = lists[0], case .array(let times) = lists[1]
        else { throw ArchiveError.unexpected(path) }
        let lastTime = times.last.flatMap { value -> Double? in
            if case .number(let number, _) = value { return number }
            return nil
        }
        let step = times.count > 1 ? (lastTime ?? 0) / Double(times.count) : 0.1
        let xputText = (xputs.map { $0.serialized() } + ["0.5"]).joined(separator: ",")
        let timeText = (times.map { $0.serialized() } + ["\((lastTime ?? 0) + step)"]).joined(separator: ",")
        return "[[\(xputText)],[\(timeText)]]"
    }

    enum ArchiveError: Error { case unexpected(String) }

    /// Runs one test (original and control) of `user` with the reference's samples and DONE durations.
    static func runTest(
        user: String, original: String, control: String, server: ServerHarness.Running
    ) async throws {
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        let userFolder = try #require(
            files(under: reference + "/spool").first { $0.key.hasPrefix("replay/<day>/\(user)/") }?.value)
        _ = userFolder
        for (testID, file) in [(0, original), (1, control)] {
            let trace = try library.trace(file: file)
            let infoPath = try #require(
                files(under: reference + "/spool")[
                    "replay/<day>/\(user)/replayInfo/replayInfo_\(user)_1_\(testID).json"])
            guard case .array(let info) = try read(infoPath), case .string(let done) = info[13] else {
                throw ArchiveError.unexpected(infoPath)
            }
            var client = ScriptedClient()
            client.userID = user
            client.historyCount = 1
            client.doneSeconds = done
            client.samples = try upload(
                fromReference: try #require(
                    files(under: reference + "/spool")["replay/<day>/\(user)/clientXputs/Xput_\(user)_1_\(testID).json"]
                ))
            let outcome = try await client.run(trace, testID: testID, server: server)
            #expect(outcome.okAfterSamples == "OK", "\(file): the samples were not acknowledged")
        }
    }

    @Test(
        "a TCP test, a UDP test and a localization give the reference's files, field by field",
        .enabled(
            if: ProcessInfo.processInfo.environment["WEHE_ALONE"] == "1",
            "runs alone in CI (WEHE_ALONE=1): in the full parallel run its scripted replays get no acknowledgement"))
    func sameFilesAsReference() async throws {
        let archiveDirectory = TestResources.temporaryDirectory("wehe-archive")
        defer {
            // WEHE_KEEP_ARCHIVE=1 keeps the files for inspection.
            if ProcessInfo.processInfo.environment["WEHE_KEEP_ARCHIVE"] == "1" {
                print("archive kept in \(archiveDirectory)")
            } else {
                try? FileManager.default.removeItem(atPath: archiveDirectory)
            }
        }
        let writer = ArchiveWriter(directory: archiveDirectory, logger: ServerHarness.logger)
        let withArchive: (inout ReplayServerConfiguration) -> Void = { $0.archive = writer }
        try await ServerHarness.run(replays: TestResources.sharedReplays, configure: withArchive) { server in
            try await Self.runTest(
                user: "@k8fpgua6w", original: "Youtube_02202024.pcap_client_all.json",
                control: "YoutubeRandom_02202024.pcap_client_all.json", server: server)
            try await Self.runTest(
                user: "@fqe2mpusz", original: "Skype_06172024.pcap_client_all.json",
                control: "SkypeRandom_06172024.pcap_client_all.json", server: server)
            // The localization: its three replays stored directly (their samples are not in the reference archive).
            for historyCount in [16, 17, 18] {
                let values = (0..<96).map { Double(($0 * 37 + historyCount) % 23) * 0.02 }
                try await server.store.save(
                    replay: ReplayRecord(
                        key: ReplayKey(userID: "@fp9v1r2ih", historyCount: historyCount, testID: 0),
                        replayName: "Skype-06172024", samples: ThroughputSeries(mbps: values, interval: 0.15),
                        receivedAt: Date()),
                    metadata: TestMetadata(replayName: "Skype-06172024", startedAt: Date()))
            }
            let port = try #require(server.ports.analyzerPlain)
            let info1 = FormParameters.encodeComponent(
                #"{"server":"127.0.0.1","historyCount":"17","replayPort":"63308","replayName":"Skype-06172024"}"#)
            let info2 = FormParameters.encodeComponent(
                #"{"server":"127.0.0.1","historyCount":"18","replayPort":"63308","replayName":"Skype-06172024"}"#)
            let single = FormParameters.encodeComponent(
                #"{"singleReplay_userID":"@fp9v1r2ih","singleReplay_server":"127.0.0.1","singleReplay_historyCount":"16"}"#
            )
            let queued = try await HTTPProbe.request(
                port: port, method: "POST", path: "/Results",
                body: "command=localize&userID=%40fp9v1r2ih&testID=0&server1Info=\(info1)&server2Info=\(info2)"
                    + "&singleServerInfo=\(single)&kwargs=%7B%7D")
            #expect(queued == #"{"success": true}"#)
        }
        await writer.flush()
        #expect(writer.failures == 0)

        let ours = Self.files(under: archiveDirectory)
        let theirs = Self.files(under: Self.reference + "/spool").filter { !$0.key.hasSuffix(".pcap") }
        #expect(theirs.count == 21, "the reference archive should hold 21 JSON files")
        #expect(
            Set(theirs.keys).subtracting(ours.keys).isEmpty,
            "files missing: \(Set(theirs.keys).subtracting(ours.keys).sorted())")
        let extra = Set(ours.keys).subtracting(theirs.keys).filter { !$0.hasPrefix("datatypes/") }
        #expect(extra.isEmpty, "files the reference does not write: \(extra.sorted())")
        var problems: [String] = []
        for (name, referencePath) in theirs.sorted(by: { $0.key < $1.key }) {
            guard let ourPath = ours[name] else { continue }
            Self.compare(try Self.read(ourPath), try Self.read(referencePath), file: name, into: &problems)
        }
        // The schemas are the reference's, byte for byte.
        for table in ["replayInfo1", "clientXputs1", "decisions1", "localizeDecisions1"] {
            let mine = try String(contentsOfFile: "\(archiveDirectory)/datatypes/\(table).json", encoding: .utf8)
            let reference = try String(contentsOfFile: "\(Self.reference)/datatypes/\(table).json", encoding: .utf8)
            if mine != reference { problems.append("datatypes/\(table).json: differs from the reference's schema") }
        }
        #expect(problems.isEmpty, "\(problems.count) differences:\n\(problems.joined(separator: "\n"))")
    }

    @Test("the comparison names the file and field of a difference")
    func comparisonNamesFileAndField() throws {
        var problems: [String] = []
        let ours = try JSONValue.parse(Array(#"{"userID": "@a", "historyCount": 1.0, "KSPVal": 0.5}"#.utf8))
        let theirs = try JSONValue.parse(Array(#"{"userID": "@b", "historyCount": 1, "KSPVal": 0.6}"#.utf8))
        Self.compare(ours, theirs, file: "decisions1/<day>/results_a_Client_1_1.json", into: &problems)
        #expect(
            problems == [
                "decisions1/<day>/results_a_Client_1_1.json: userID: '@a', reference '@b'",
                "decisions1/<day>/results_a_Client_1_1.json: historyCount: type float, reference int",
                "decisions1/<day>/results_a_Client_1_1.json: KSPVal: 0.5, reference 0.6",
            ])
    }

    @Test("an unwritable archive is reported and the test still completes with its database copy")
    func unwritableArchive() async throws {
        let blocker = TestResources.temporaryDirectory("wehe-archive-blocked") + "-file"
        #expect(TestResources.write("not a directory", to: blocker))
        defer { try? FileManager.default.removeItem(atPath: blocker) }
        let writer = ArchiveWriter(directory: blocker + "/archive", logger: ServerHarness.logger)
        let trace = try ReplayLibrary(directory: TestResources.fixtureReplays)
            .trace(file: "TinyWeb_11212026.pcap_client_all.json")
        let withArchive: (inout ReplayServerConfiguration) -> Void = { $0.archive = writer }
        try await ServerHarness.run(configure: withArchive) { server in
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.okAfterSamples == "OK")
            let stored = try await server.store.test(TestKey(userID: "@abcdef123", historyCount: 1))
            #expect(stored?.replay(0) != nil)
        }
        await writer.flush()
        // Four schema files at start and the replay's write.
        #expect(writer.failures == 5)
    }
}
