import ArgumentParser
import WeheCore
import WeheWire

/// `wehe replays show <id>`: what a test's traces contain.
struct ShowReplay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show the flows, packets, bytes and duration of a test's original and control traces."
    )

    @Argument(help: "Test id (e.g. youtube, port853s), display name, or a trace file path.") var test: String
    @OptionGroup var replays: ReplayDirectoryOption
    @Flag(name: .long, help: "Print JSON instead of text.") var json = false

    func run() async throws {
        var traces: [(role: String, file: String, trace: ReplayTrace)] = []
        var title = test
        do {
            if test.hasSuffix(".json") {
                traces.append(("trace", test, try ReplayLibrary.trace(at: test)))
            } else {
                let library = try replays.library()
                let catalog = try library.catalog()
                guard let entry = catalog.entry(named: test) else {
                    throw CLIError(
                        code: .invalidInput, "no test named '\(test)' in the catalog (see 'wehe replays list')")
                }
                title =
                    "\(entry.name) (\(entry.id), \(entry.category.rawValue.lowercased()), \(Terminal.format(entry.durationSeconds, decimals: 0)) s)"
                traces.append(("original", entry.originalFile, try library.trace(file: entry.originalFile)))
                if let control = catalog.controlFile(for: entry) {
                    traces.append(("control", control, try library.trace(file: control)))
                }
            }
        } catch let error as WeheWireError {
            throw CLIError(code: error.code == .unreadable ? .missingInput : .invalidInput, error.description).exit()
        } catch let error as CLIError {
            throw error.exit()
        }
        if json {
            let items: [JSONValue] = traces.map { item in
                let summary = TraceSummary(item.trace)
                return .object([
                    ("role", .string(item.role)),
                    ("file", .string(item.file)),
                    ("replayName", .string(item.trace.name)),
                    ("transport", .string(item.trace.transport.rawValue)),
                    ("flows", .array(summary.flows.map { .string($0) })),
                    ("packets", .number(Double(summary.packets), text: String(summary.packets))),
                    ("bytesUp", .number(Double(summary.bytesUp), text: String(summary.bytesUp))),
                    ("bytesDown", .number(Double(summary.bytesDown), text: String(summary.bytesDown))),
                    ("durationSeconds", .number(summary.duration, text: JSONText.number(summary.duration))),
                    ("responseGroups", .number(Double(summary.groups), text: String(summary.groups))),
                ])
            }
            print(JSONValue.array(items).serialized())
            return
        }
        print(title)
        for item in traces {
            let summary = TraceSummary(item.trace)
            print("")
            print("\(item.role): \(item.trace.name)  [\(item.file)]")
            print("  transport   \(item.trace.transport.rawValue.uppercased())")
            for flow in summary.flows { print("  flow        \(flow)") }
            print(
                "  packets     \(summary.packets) client→server"
                    + (item.trace.transport == .tcp ? ", \(summary.groups) response groups" : ""))
            print("  bytes up    \(Terminal.bytes(summary.bytesUp)) (\(summary.bytesUp) B)")
            if item.trace.transport == .tcp {
                print("  bytes down  \(Terminal.bytes(summary.bytesDown)) (\(summary.bytesDown) B)")
            } else {
                print("  bytes down  not in the client file (UDP server datagrams)")
            }
            print(
                "  duration    \(Terminal.format(summary.duration, decimals: 3)) s"
                    + (item.trace.isPortTest ? " (replayed without timing)" : ""))
        }
    }
}

/// Figures shown for one trace.
struct TraceSummary {
    let flows: [String]
    let packets: Int
    let bytesUp: Int
    let bytesDown: Int
    let duration: Double
    let groups: Int

    init(_ trace: ReplayTrace) {
        flows = trace.flows.map(\.rawValue)
        packets = trace.packets.count
        bytesUp = trace.bytesUp
        bytesDown = trace.bytesDown
        duration = trace.duration
        groups = ServerTrace(derivingFrom: trace).tcpFlows.reduce(0) { $0 + $1.groups.count }
    }
}
