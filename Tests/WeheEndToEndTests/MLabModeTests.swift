import Foundation
import Testing
import WehePcap
import WeheTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// Whether this machine can run the namespaced check (root, util-linux unshare, coreutils timeout).
enum MLabNamespaces {
    static var available: Bool {
        getuid() == 0 && access("/usr/bin/unshare", X_OK) == 0 && access("/usr/bin/timeout", X_OK) == 0
    }
}

/// `wehe-server mlab` refuses a broken deployment with the reason, before it binds anything (so these run anywhere).
@Suite("wehe-server mlab: deployment errors", .timeLimit(.minutes(6)))
struct MLabModeErrorTests {
    /// Runs `wehe-server mlab --root <root> <arguments>` with `$UUID_PREFIX` set to `prefixFile`.
    static func run(root: String, prefixFile: String?, _ arguments: [String]) async throws -> (Int32, String) {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: TestResources.builtProduct("wehe-server"))
        process.arguments = ["mlab", "--root", root, "--replays", TestResources.fixtureReplays] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["UUID_PREFIX"] = prefixFile
        process.environment = environment
        let log = root + "/stderr"
        guard FileManager.default.createFile(atPath: log, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = handle
        let (status, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .bufferingNewest(1))
        process.terminationHandler = { finished in
            continuation.yield(finished.terminationStatus)
            continuation.finish()
        }
        try process.run()
        var iterator = status.makeAsyncIterator()
        let code = await iterator.next() ?? -1
        return (code, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test("a capture interface that does not exist: exit 2, named")
    func missingInterface() async throws {
        let root = TestResources.temporaryDirectory("wehe-mlab-error")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (code, output) = try await Self.run(root: root, prefixFile: nil, ["wehe.example.org", "nosuchif9"])
        #expect(code == 2)
        #expect(output.contains("no network interface nosuchif9"), "\(output)")
    }

    @Test("no CA in the ssl directory: exit 1 saying where M-Lab puts it; no certificate or CA is made up")
    func missingCA() async throws {
        let root = TestResources.temporaryDirectory("wehe-mlab-error")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (code, output) = try await Self.run(root: root, prefixFile: nil, ["wehe.example.org", "lo"])
        #expect(code == 1)
        #expect(output.contains("no ca.crt in \(root)/wehe/ssl"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: root + "/wehe/ssl/ca.crt"))
        #expect(!FileManager.default.fileExists(atPath: root + "/wehe/ssl/server.crt"))
    }

    @Test("a UUID prefix file that is missing or holds no usable prefix: exit 1, the file named")
    func badPrefix() async throws {
        let root = TestResources.temporaryDirectory("wehe-mlab-error")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (missing, missingOutput) = try await Self.run(
            root: root, prefixFile: root + "/absent", ["wehe.example.org", "lo"])
        #expect(missing == 1)
        #expect(missingOutput.contains("cannot read the UUID prefix file \(root)/absent"), "\(missingOutput)")
        #expect(TestResources.write("two words\n", to: root + "/prefix"))
        let (bad, badOutput) = try await Self.run(root: root, prefixFile: root + "/prefix", ["wehe.example.org", "lo"])
        #expect(bad == 1)
        #expect(badOutput.contains("the UUID prefix file \(root)/prefix must hold one prefix"), "\(badOutput)")
    }
}

/// `wehe-server mlab <hostname> <interface>` against M-Lab's container contract (`mlab-deployment.md` §2-3): the
/// built server and client run in private namespaces (`scripts/mlab-namespace-check.sh`), once with the layout
/// below a temporary root and once with the published paths on tmpfs mounts; the evidence they leave is checked here.
@Suite(
    "wehe-server mlab: the published image's paths, probes, schemas and UUIDs",
    .enabled(if: MLabNamespaces.available, "needs root and util-linux unshare"),
    .timeLimit(.minutes(4)))
struct MLabModeTests {
    static let prefix = "mlab1-lga0t.example.org_1732650000"

    @Test("the layout below a temporary root (--root): probes, schemas, one test's files, UUIDs from the prefix file")
    func temporaryRoot() async throws {
        let root = TestResources.temporaryDirectory("wehe-mlab-root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = try await Self.runCheck(root: root)
        defer { try? FileManager.default.removeItem(atPath: out) }
        try Self.checkEvidence(out)
        // The layout really moved: the schemas are below the root, where the copy was taken from.
        #expect(FileManager.default.fileExists(atPath: root + "/var/spool/datatypes/replayInfo1.json"))
        #expect(FileManager.default.fileExists(atPath: root + "/wehe/ssl/server.crt"))
        #expect(FileManager.default.fileExists(atPath: root + "/wehe/data/results.sqlite"))
    }

    @Test("the published paths in a private mount namespace: /wehe/ssl, /var/spool/datatypes, /var/spool/wehe")
    func publishedPaths() async throws {
        let out = try await Self.runCheck(root: nil)
        defer { try? FileManager.default.removeItem(atPath: out) }
        try Self.checkEvidence(out)
    }

    /// Runs the check script in new mount, network and PID namespaces; returns its output directory. `timeout`
    /// ends the namespaces' init after 150 s whatever happens to this process (`--kill-child`: the PID namespace,
    /// its mounts and its network go with it), so a killed test leaves nothing running or mounted.
    static func runCheck(root: String?) async throws -> String {
        let out = TestResources.temporaryDirectory("wehe-mlab-out")
        let bin = (TestResources.builtProduct("wehe-server") as NSString).deletingLastPathComponent
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments =
            [
                "--kill-after=5", "150", "/usr/bin/unshare", "--mount", "--net", "--pid", "--fork", "--kill-child",
                "--", TestResources.packageRoot + "/scripts/mlab-namespace-check.sh", bin,
                TestResources.fixtureReplays, out + "/evidence",
            ] + (root.map { [$0] } ?? [])
        process.standardInput = FileHandle.nullDevice
        let log = out + "/script.log"
        guard FileManager.default.createFile(atPath: log, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        process.standardOutput = handle
        process.standardError = handle
        let (status, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .bufferingNewest(1))
        process.terminationHandler = { finished in
            continuation.yield(finished.terminationStatus)
            continuation.finish()
        }
        try process.run()
        var iterator = status.makeAsyncIterator()
        let code = await iterator.next() ?? -1
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(code == 0, "the check script failed: \(output)")
        return out + "/evidence"
    }

    static func text(_ path: String) -> String {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func json(_ path: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Reads one test's capture with libpcap (the frames libpcap captured on the server's veth, wehe0) and checks it
    /// holds that test's replay connection and nothing else: Ethernet frames of IPv4 TCP between the client
    /// (198.18.0.2) and the server's replay port 80, one client port, its handshake, data both ways. Returns the
    /// client port.
    static func checkCapture(_ path: String) throws -> Set<Int> {
        let handle = try LibPcap.load().open(file: path)
        #expect(handle.linkType == 1, "\(path): link type \(handle.linkType), not Ethernet")
        var clientPorts: Set<Int> = []
        var syn = 0
        var fromClient = 0
        var fromServer = 0
        var frames = 0
        reading: while true {
            switch try handle.next() {
            case .end: break reading
            case .timeout: continue
            case .frame(let frame):
                frames += 1
                let bytes = frame.bytes
                // Ethernet (14 bytes, type 0x0800), IPv4 (protocol 6), TCP ports and flags.
                guard bytes.count >= 14 + 20 + 14, bytes[12] == 0x08, bytes[13] == 0x00, bytes[23] == 6 else {
                    Issue.record("\(path): frame \(frames) is not IPv4 TCP")
                    continue
                }
                let source = bytes[26..<30].map(String.init).joined(separator: ".")
                let destination = bytes[30..<34].map(String.init).joined(separator: ".")
                let tcp = 14 + Int(bytes[14] & 0x0F) * 4
                let sourcePort = Int(bytes[tcp]) << 8 | Int(bytes[tcp + 1])
                let destinationPort = Int(bytes[tcp + 2]) << 8 | Int(bytes[tcp + 3])
                let flags = bytes[tcp + 13]
                if source == "198.18.0.2", destination == "198.18.0.1", destinationPort == 80 {
                    fromClient += 1
                    clientPorts.insert(sourcePort)
                    if flags & 0x12 == 0x02 { syn += 1 }
                } else if source == "198.18.0.1", destination == "198.18.0.2", sourcePort == 80 {
                    fromServer += 1
                    clientPorts.insert(destinationPort)
                } else {
                    Issue.record("\(path): frame \(frames) \(source):\(sourcePort) > \(destination):\(destinationPort)")
                }
            }
        }
        #expect(syn == 1, "\(path): \(syn) SYNs of the client")
        #expect(fromClient >= 3 && fromServer >= 3, "\(path): \(fromClient) frames from the client, \(fromServer) back")
        #expect(clientPorts.count == 1, "\(path): client ports \(clientPorts)")
        return clientPorts
    }

    /// The contract, checked on what the script left in `out`.
    static func checkEvidence(_ out: String) throws {
        #expect(text(out + "/finished") == "done", "the script did not finish: \(text(out + "/server.err"))")
        // Probes: GET /metrics answers 200 on 9990 (liveness, startup) and 9091; after a test it holds the counters.
        #expect(text(out + "/metrics-9990.status") == "200")
        #expect(text(out + "/metrics-9091.status") == "200")
        let metrics = text(out + "/metrics-after.txt")
        #expect(metrics.contains("wehe_replays_completed_total"), "\(metrics.prefix(400))")
        // The client's test completed and the server stopped cleanly on SIGTERM.
        #expect(text(out + "/client.status") == "0", "\(text(out + "/client.err"))")
        #expect(text(out + "/server.status") == "0", "\(text(out + "/server.err"))")
        #expect(text(out + "/server.out").contains("side-channel-tls=55556 side-channel=55555 analyzer-tls=56566"))
        // The CA given, and the certificate and key the server wrote for its host name beside it.
        #expect(
            Set(text(out + "/ssl-files.txt").split(separator: "\n")) == [
                "ca.crt", "ca.key", "server.crt", "server.key",
            ])

        // Schemas where jostler reads them at start: /var/spool/datatypes/<datatype>.json, BigQuery field lists.
        let spool = out + "/spool"
        for table in ["replayInfo1", "clientXputs1", "decisions1", "localizeDecisions1"] {
            let path = "\(spool)/datatypes/\(table).json"
            let fields = try #require(try json(path) as? [[String: Any]], "\(path)")
            #expect(fields.allSatisfy { $0["name"] is String && $0["type"] is String })
            if TestResources.hasReferenceArchive {
                #expect(
                    text(path) == text("\(TestResources.referenceArchive)/datatypes/\(table).json"),
                    "\(table): not the reference server's schema")
            }
        }

        // One test's files where jostler looks: /var/spool/wehe/<datatype>/YYYY/MM/DD/*.json, valid JSON only.
        let files = text(out + "/spool-files.txt").split(separator: "\n").map { String($0.dropFirst(2)) }
        func tableFiles(_ table: String) -> [String] { files.filter { $0.hasPrefix("wehe/\(table)/") } }
        let day = try #require(
            tableFiles("replayInfo1").first.map {
                $0.split(separator: "/").dropFirst(2).prefix(3).joined(separator: "/")
            })
        let utc = Calendar(identifier: .gregorian)
        var calendar = utc
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let now = calendar.dateComponents([.year, .month, .day], from: Date())
        let yesterday = calendar.dateComponents([.year, .month, .day], from: Date().addingTimeInterval(-86_400))
        let days = [now, yesterday].map { String(format: "%04d/%02d/%02d", $0.year ?? 0, $0.month ?? 0, $0.day ?? 0) }
        #expect(days.contains(day), "\(day) is not the UTC day of the test")
        #expect(tableFiles("replayInfo1").count == 2, "original and control: \(files)")
        #expect(tableFiles("clientXputs1").count == 2, "\(files)")
        #expect(tableFiles("decisions1").count == 1, "\(files)")
        for table in ["replayInfo1", "clientXputs1", "decisions1"] {
            for file in tableFiles(table) {
                #expect(file.hasPrefix("wehe/\(table)/\(day)/") && file.hasSuffix(".json"), "\(file)")
                #expect(file.split(separator: "/").count == 6, "\(file): not <datatype>/YYYY/MM/DD/<name>")
                #expect((try? json("\(spool)/\(file)")) is [String: Any], "\(file): not one JSON object")
            }
        }
        // Nothing else in the experiment's spool but the tables and pusher's replay/ (jostler deletes the rest).
        let tops = Set(files.filter { $0.hasPrefix("wehe/") }.map { $0.split(separator: "/")[1] })
        #expect(tops == ["replayInfo1", "clientXputs1", "decisions1", "replay"], "\(tops)")
        // Per-user files and the packet captures under replay/, which pusher archives.
        let captures = files.filter { $0.hasPrefix("wehe/replay/\(day)/") && $0.hasSuffix("_out.pcap") }
        #expect(captures.count == 2, "\(files)")
        var clientPorts: Set<Int> = []
        for capture in captures {
            let magic = try Data(contentsOf: URL(fileURLWithPath: "\(spool)/\(capture)")).prefix(4)
            #expect(Array(magic) == [0xD4, 0xC3, 0xB2, 0xA1], "\(capture): not a pcap")
            clientPorts.formUnion(try checkCapture("\(spool)/\(capture)"))
        }
        #expect(clientPorts.count == 2, "each capture holds its own test's connection: \(clientPorts)")

        // UUIDs: <prefix from the file named by $UUID_PREFIX>_<socket cookie as 16 upper-case hex digits>.
        var uuids: [String] = []
        for file in tableFiles("replayInfo1") {
            let row = try #require(try json("\(spool)/\(file)") as? [String: Any])
            uuids.append(try #require(row["measurementUUID"] as? String))
        }
        for uuid in uuids {
            #expect(uuid.hasPrefix(prefix + "_"), "\(uuid)")
            let cookie = uuid.dropFirst(prefix.count + 1)
            #expect(cookie.count == 16 && cookie.allSatisfy { "0123456789ABCDEF".contains($0) }, "\(uuid)")
        }
        #expect(Set(uuids).count == 2, "one UUID per replay's connection: \(uuids)")
    }
}
