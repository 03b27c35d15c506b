import ArgumentParser
import Foundation
import Synchronization
import WeheCore
import WeheRecord

/// `wehe record`: a capture of an app's traffic becomes a Wehe test (Docs/recording.md).
struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Turn a packet capture of an app (pcap or pcapng) into a test that wehe run and wehe-server use.",
        discussion: """
            Reads the capture with libpcap (loaded at run time: apt install libpcap0.8), keeps the TCP and UDP \
            flows of --client, and writes into --output the client trace, its control, the server side of both and \
            the test's catalog entry, so that `wehe run <id> --replays <output>` and \
            `wehe-server serve --replays <output>` use it as they are. Your address is rewritten; cleartext \
            cookies, Authorization headers and URL query values are redacted (--refuse-identifying drops such \
            flows instead). The report says first what identifies the app in the test, then what was kept and \
            dropped and why, idle gaps, bytes and time. Docs/recording.md: recording on a desktop, Android, iPhone. \
            Exit codes: wehe help exit-codes.
            """
    )

    @Option(name: .long, help: "The capture file (pcap or pcapng: tcpdump, Wireshark, PCAPdroid).") var pcap: String?
    @Option(name: .long, help: "Capture live on this interface instead (needs CAP_NET_RAW or root).")
    var interface: String?
    @Option(name: .long, help: "Seconds of live capture (Ctrl-C ends it sooner and keeps what was captured).")
    var seconds: Double = 30
    @Option(name: .long, help: "The recording device's address as the capture shows it.") var client: String
    @Option(name: .long, help: "Test id: letters and digits (what wehe run takes).") var id: String
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Replay directory to write into (created; an apps_list.json there is extended).",
            discussion:
                "Default: your recordings ($WEHE_RECORDINGS, else ~/.local/share/wehe/recordings), which wehe run, "
                + "wehe replays list and wehe dashboard read beside the catalog."))
    var output: String?
    @Option(name: .long, help: "Display name of the test (default: the id).") var name: String?
    @Option(name: .long, help: "Catalog category: VIDEO, MUSIC, CONFERENCING or OTHER.") var category: String = "OTHER"
    @Option(name: .customLong("server-name"), help: "Keep flows whose TLS server name or HTTP Host is this name.")
    var serverNames: [String] = []
    @Option(name: .long, help: "Keep flows to this server port (repeatable).") var port: [Int] = []
    @Option(name: .long, help: "Keep only these flows, by the report's numbers (e.g. 1,3).") var flows: String?
    @Option(name: .long, help: "The test's transport, tcp or udp (default: the one with the most bytes).")
    var transport: String?
    @Flag(name: .customLong("refuse-identifying"), help: "Drop flows with cleartext cookies or credentials.")
    var refuseIdentifying = false
    @Option(name: .customLong("shorten-gaps"), help: "Shorten idle gaps longer than this many seconds to it.")
    var shortenGaps: Double?
    @Flag(name: .customLong("report-only"), help: "Print the report and write nothing.") var reportOnly = false
    @Flag(name: .long, help: "Print the report as JSON.") var json = false

    func validate() throws {
        if (pcap == nil) == (interface == nil) {
            throw ValidationError("give either --pcap <file> or --interface <name>")
        }
        if output == nil, !reportOnly, ReplayDirectoryOption.recordingsDirectory() == nil {
            throw ValidationError("give --output <dir> (or --report-only): no HOME for the default recordings folder")
        }
        if AppCategory(rawValue: category.uppercased()) == nil {
            throw ValidationError("--category must be VIDEO, MUSIC, CONFERENCING or OTHER")
        }
        if let transport, !["tcp", "udp"].contains(transport.lowercased()) {
            throw ValidationError("--transport must be tcp or udp")
        }
        if port.contains(where: { !(1...65535).contains($0) }) { throw ValidationError("--port takes 1-65535") }
        if let flows, flows.split(separator: ",").contains(where: { Int($0.filter { $0 != " " }) == nil }) {
            throw ValidationError("--flows takes flow numbers separated by commas, e.g. 1,3")
        }
        if !(seconds > 0 && seconds <= 3600) { throw ValidationError("--seconds takes 1-3600") }
    }

    func run() async throws {
        var options = RecordingOptions(client: client, id: id)
        options.displayName = name
        options.category = AppCategory(rawValue: category.uppercased()) ?? .other
        options.serverNames = serverNames
        options.ports = port.map { UInt16($0) }
        options.flowNumbers = flows.map { $0.split(separator: ",").compactMap { Int($0.filter { $0 != " " }) } } ?? []
        options.transport = transport.flatMap { TransportProtocol(rawValue: $0.lowercased()) }
        options.refuseIdentifying = refuseIdentifying
        options.shortenGaps = shortenGaps
        let recorder = Recorder(options: options)
        do {
            var recording: Recording
            if let pcap {
                recording = try recorder.record(file: pcap)
            } else {
                recording = try await Self.capture(recorder, interface: interface ?? "", seconds: seconds).get()
            }
            if let output = output ?? ReplayDirectoryOption.recordingsDirectory(), !reportOnly {
                recording.report.files = try RecordingWriter(directory: output).write(recording)
            }
            print(json ? recording.report.json.serialized() : recording.report.text)
            if !json, !reportOnly, !recording.report.files.isEmpty {
                // Only the default folder joins the catalog by itself; another one is named with --replays.
                let elsewhere = output.map { " --replays \($0)" } ?? ""
                print(
                    "\nRun it: wehe run \(id)\(elsewhere)  (a server without the test receives its trace if its "
                        + "operator allows recorded tests; see Docs/recording.md)")
            }
        } catch {
            throw CLIError(code: Self.exitCode(error.code), error.message).exit()
        }
    }

    static func exitCode(_ code: WeheRecordError.Code) -> CLIError.Code {
        switch code {
        case .libpcapMissing, .unreadable: .missingInput
        case .malformed, .unusable: .invalidInput
        case .writeFailed: .storeFailed
        case .captureFailed: .unreachable
        }
    }
}

extension RecordCommand {
    /// A live capture that Ctrl-C ends early, keeping what it captured. It says on standard error when the
    /// interface is open, which is when the user should start the app: traffic from before is not recorded.
    ///
    /// The capture blocks while it waits for frames, so it runs on a thread of its own: on a machine with one core
    /// the shared pool has one thread, and a capture holding it would leave none to the Ctrl-C watcher, so Ctrl-C
    /// would do nothing until `seconds` ran out.
    static func capture(
        _ recorder: Recorder, interface: String, seconds: Double
    ) async -> Result<Recording, WeheRecordError> {
        let interrupted = StopFlag()
        let outcome = try? await Interrupts.cancellingOnSIGINT {
            await withTaskCancellationHandler {
                await onOwnThread(named: "wehe-capture") {
                    do throws(WeheRecordError) {
                        return Result<Recording, WeheRecordError>.success(
                            try recorder.record(
                                interface: interface, seconds: seconds,
                                opened: {
                                    let line =
                                        "capturing on \(interface) for \(Int(seconds.rounded(.up))) s: use the app "
                                        + "now; Ctrl-C ends the capture sooner and keeps what it captured\n"
                                    FileHandle.standardError.write(Data(line.utf8))
                                }, stop: { interrupted.isSet }))
                    } catch {
                        return .failure(error)
                    }
                }
            } onCancel: {
                interrupted.set()
            }
        }
        return outcome ?? .failure(WeheRecordError(.captureFailed, "the capture on \(interface) was interrupted"))
    }
}

/// Set once from any thread (Ctrl-C's cancellation handler), read by the capture loop.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
