import Foundation
import NIOCore
import Prometheus
import Testing
import WeheCore
import WeheStore
import WeheTestKit
import WeheWire

@testable import WeheServer

/// Files named from client input (one rule, `ClientFileName`, in the pcap and archive writers), the descriptors of
/// packet captures (opened only once a connection is claimed, and room for them in the connection budget), the
/// capture and archive directories in the disk check, and failed writes counted.
@Suite("Capture and archive files", .timeLimit(.minutes(6)))
struct CaptureFilesTests {
    /// User IDs and extraStrings a client may send (the side channel allows `[A-Za-z0-9@._-]` in user IDs and any
    /// printable ASCII but `;` in extraStrings; other callers of the writers may pass anything).
    static let hostile = [
        "..", ".", "...", ".hidden", "-rf", "a/b", "a_b", "../../etc/passwd", "$(reboot)", "`id`", "x;y|z&w",
        "a b\tc\nd", "\u{1}\u{7F}", "*?[]{}<>!'\"\\~#%", "", String(repeating: "A", count: 300),
        String(repeating: "é", count: 40), "/",
    ]

    /// Descriptors of this process open on files below `directory`.
    static func openFiles(below directory: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry))?
                .hasPrefix(directory + "/") == true
        }.count
    }

    /// Every regular file below `directory`, relative to it.
    static func files(below directory: String) -> [String] {
        let all = FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []
        return all.filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: directory + "/" + path, isDirectory: &isDirectory)
                && !isDirectory.boolValue
        }.sorted()
    }

    static func samples() -> ThroughputSeries { ThroughputSeries(mbps: [1, 2, 3], interval: 0.1) }

    @Test("the rule keeps ordinary names and maps hostile ones to safe, short, distinct names, the same every time")
    func rule() {
        for kept in ["@abcdef123", "k8fpgua6w", "TinyWeb-11212026", "extraString", "DiffDetector", "a.b_c-d"] {
            #expect(ClientFileName.component(kept) == kept)
        }
        var seen: [String: String] = [:]
        for text in Self.hostile {
            let name = ClientFileName.component(text)
            #expect(ClientFileName.isSafe(name), "\(text.debugDescription) → \(name)")
            #expect(name.utf8.count <= ClientFileName.maximumBytes)
            #expect(name != "." && name != ".." && !name.hasPrefix(".") && !name.hasPrefix("-"))
            #expect(ClientFileName.component(text) == name, "deterministic")
            #expect(seen[name] == nil, "\(text.debugDescription) and \(seen[name]?.debugDescription ?? "") collide")
            seen[name] = text
        }
        // A long name keeps its beginning, so that an operator still recognises it.
        #expect(
            ClientFileName.component(String(repeating: "A", count: 300)).hasPrefix(String(repeating: "A", count: 40)))
        #expect(ClientFileName.component("a_b") != ClientFileName.component("a/b"))
    }

    @Test("hostile user IDs through both writers land in the same safe directory, inside the spool, nothing lost")
    func bothWriters() async throws {
        let root = TestResources.temporaryDirectory("wehe-names")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let spool = root + "/spool"
        let now = Date(timeIntervalSince1970: 1_764_000_000)
        let registry = PrometheusCollectorRegistry()
        let metrics = ServerMetrics(registry: registry)
        let archive = ArchiveWriter(directory: spool, logger: ServerHarness.logger, metrics: metrics, now: { now })
        let day = ArchiveWriter.dayPath(now)
        for (index, user) in Self.hostile.enumerated() {
            archive.archive(
                replay: .init(
                    userID: user, historyCount: index, testID: 0, replayName: "TinyWeb-11212026",
                    extraString: user, clientAddress: "127.0.0.1", clientVersion: nil, incomingTime: now,
                    serverDurationSeconds: 1, clientDurationText: "1.0", mobileStats: nil,
                    measurementUUID: "wehe_1", samples: Self.samples()))
            let capture = PacketCapture(
                directory: spool, maximumBytes: 1 << 20, logger: ServerHarness.logger, metrics: metrics)
            capture.append(ByteBuffer(string: "before the claim"))
            capture.claim(
                PacketCapture.relativePath(
                    userID: user, replayName: "TinyWeb-11212026", extraString: user, historyCount: index, testID: 0,
                    day: day))
            capture.append(ByteBuffer(string: "after the claim"))
            capture.finish()
            await capture.flush()
        }
        await archive.flush()
        #expect(archive.failures == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["spool"], "nothing outside the spool")
        let files = Self.files(below: spool).filter { $0.hasPrefix("replay/") }
        for (index, user) in Self.hostile.enumerated() {
            let folder = "replay/\(day)/\(ClientFileName.component(user))/"
            let pcap = files.filter { $0.hasPrefix(folder + "tcpdumpsResults/") && $0.contains("_\(index)_0_out.pcap") }
            let info = files.filter { $0.hasPrefix(folder + "replayInfo/") && $0.hasSuffix("_\(index)_0.json") }
            #expect(pcap.count == 1 && info.count == 1, "\(user.debugDescription): capture \(pcap), archive \(info)")
        }
        for file in Self.files(below: spool) {
            let parts = file.split(separator: "/").map(String.init)
            let shown = parts.first == ".partial" ? "a partial file left" : "unsafe part"
            #expect(parts.allSatisfy(ClientFileName.isSafe), "\(file): \(shown)")
        }
        // A capture's name holds three client parts and stays a valid file name.
        #expect(files.allSatisfy { ($0.split(separator: "/").last?.utf8.count ?? 0) <= 255 })
        #expect(MetricsTests.families(registry).type["wehe_file_write_failures_total"] == nil, "no failure counted")
    }

    @Test("a capture opens its file only when claimed, closes it at the end; an unclaimed one leaves nothing")
    func descriptorOnlyWhenClaimed() async throws {
        let directory = TestResources.temporaryDirectory("wehe-pcap-claim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let unclaimed = (0..<50).map { _ in
            PacketCapture(directory: directory, maximumBytes: 1 << 20, logger: ServerHarness.logger)
        }
        for capture in unclaimed {
            capture.append(ByteBuffer(string: "a first request"))
            await capture.flush()
        }
        #expect(Self.openFiles(below: directory) == 0)
        let claimed = PacketCapture(directory: directory, maximumBytes: 1 << 20, logger: ServerHarness.logger)
        claimed.append(ByteBuffer(repeating: 1, count: 100))
        // Records beyond what is held before the claim are left out, not kept in memory.
        claimed.append(ByteBuffer(repeating: 2, count: PacketCapture.maximumBytesBeforeClaim))
        claimed.claim("replay/2026/01/01/@abcdef123/tcpdumpsResults/dump_server_x_out.pcap")
        claimed.append(ByteBuffer(repeating: 3, count: 50))
        await claimed.flush()
        #expect(Self.openFiles(below: directory) == 1)
        for capture in unclaimed { capture.finish() }
        claimed.finish()
        for capture in unclaimed + [claimed] { await capture.flush() }
        #expect(Self.openFiles(below: directory) == 0)
        #expect(Self.files(below: directory) == ["replay/2026/01/01/@abcdef123/tcpdumpsResults/dump_server_x_out.pcap"])
        let bytes = try Data(
            contentsOf: URL(fileURLWithPath: directory + "/" + (Self.files(below: directory).first ?? "")))
        #expect(bytes.count == 24 + 100 + 50, "pcap header, the held record, the record after the claim")
    }

    @Test("with --pcap, idle replay connections hold no capture file, and a real replay still writes its capture")
    func serverDescriptors() async throws {
        let directory = TestResources.temporaryDirectory("wehe-pcap-idle")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let trace = try ReplayLibrary(directory: TestResources.fixtureReplays)
            .trace(file: "TinyWeb_11212026.pcap_client_all.json")
        // The first-bytes deadline is lifted so that a loaded machine cannot close the first idle connections
        // before the last is accepted: all of them must be held at once, with no capture file among them.
        let withPcap: (inout ReplayServerConfiguration) -> Void = {
            $0.pcapDirectory = directory
            $0.limits.firstMessageTimeout = .seconds(300)
        }
        try await ServerHarness.run(configure: withPcap) { server in
            let port = try #require(server.ports.tcp.values.first)
            var idle: [RawConnection] = []
            for index in 0..<40 {
                idle.append(try await RawConnection.connect(port: port, from: "127.0.8.\(2 + index)"))
            }
            // Wait until the server holds every one of them (accepted and admitted to the replay share).
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(120))
            var held = 0
            while held < idle.count, clock.now < deadline {
                held = max(held, await server.server.status().connections)
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(held >= idle.count, "\(held) of \(idle.count) idle connections held at once")
            #expect(Self.openFiles(below: directory) == 0, "no capture file for a connection nobody claimed")
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.okAfterResult == "OK")
            for connection in idle { try? await connection.channel.channel.close() }
        }
        let files = try await PacketCaptureTests.captures(in: directory, count: 1)
        #expect(files.count == 1, "only the claimed connection leaves a capture: \(files)")
    }

    @Test("the connection budget leaves room for capture files when --pcap is on")
    func budgetWithCaptures() {
        var configuration = ServerHarness.configuration(store: InMemoryResultStore())
        configuration.openFileLimit = { 1200 }
        configuration.limits.maximumSessions = 2048
        let without = configuration.connectionBudget(listeners: 0)
        configuration.pcapDirectory = "/tmp/unused"
        let with = configuration.connectionBudget(listeners: 0)
        #expect(without == 1200 - ReplayServerConfiguration.reservedFileDescriptors)
        // Connections plus one capture per claimed replay connection (at most the replay share) fit the descriptors.
        let limiter = ConnectionLimiter(maximum: with, maximumPerAddress: 256)
        #expect(with + limiter.share(.replay) <= without, "budget \(with), replay share \(limiter.share(.replay))")
        // Few sessions: one capture per session is the smaller bound.
        configuration.limits.maximumSessions = 50
        #expect(configuration.connectionBudget(listeners: 0) == without - 50)
        // Enough descriptors: the configured maximum stands.
        configuration.openFileLimit = { 65536 }
        configuration.limits.maximumSessions = 2048
        #expect(configuration.connectionBudget(listeners: 0) == configuration.limits.maximumConnections)
    }

    @Test("the capture and archive directories are in the disk check; failed writes are logged and counted")
    func diskCheckAndFailures() async throws {
        let root = TestResources.temporaryDirectory("wehe-spool-check")
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Any used share exceeds a limit of 0: the directories checked are the ones that give a shortage.
        var monitor = ResourceMonitor(memoryUseLimit: 1, diskUseLimit: 0, dataDirectory: nil)
        #expect(monitor.shortage() == nil)
        monitor.spoolDirectories = [root + "/pcap/not/yet/created"]
        #expect(monitor.shortage()?.contains("/pcap/not/yet/created") == true, "\(monitor.shortage() ?? "nil")")
        // Unusable directories (a file where the directory should be).
        let blocker = root + "/file"
        #expect(TestResources.write("not a directory", to: blocker))
        let registry = PrometheusCollectorRegistry()
        let metrics = ServerMetrics(registry: registry)
        let capture = PacketCapture(
            directory: blocker + "/pcap", maximumBytes: 1 << 20, logger: ServerHarness.logger, metrics: metrics)
        capture.claim("replay/2026/01/01/u/tcpdumpsResults/dump_server_u_out.pcap")
        capture.append(ByteBuffer(string: "record"))
        capture.finish()
        await capture.flush()
        let archive = ArchiveWriter(directory: blocker + "/archive", logger: ServerHarness.logger, metrics: metrics)
        await archive.flush()
        let text = String(decoding: registry.emitToBuffer(), as: UTF8.self)
        #expect(text.contains(#"wehe_file_write_failures_total{kind="pcap",stage="open"} 1"#), "\(text)")
        // The four table schemas written at start.
        #expect(text.contains(#"wehe_file_write_failures_total{kind="archive",stage="write"} 4"#), "\(text)")
    }
}
