import ArgumentParser
import WeheCore
import WeheWire

/// `wehe replays list`: the catalog as a table or JSON.
struct ListReplays: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the tests in the catalog.")

    @OptionGroup var replays: ReplayDirectoryOption
    @Flag(name: .long, help: "Print one JSON array instead of a table.") var json = false

    func run() async throws {
        let library = try replays.library()
        let directory = library.directory
        let catalog: AppCatalog
        do {
            catalog = try library.catalog()
        } catch {
            throw CLIError(code: error.code == .unreadable ? .missingInput : .invalidInput, error.description).exit()
        }
        let present = Set((try? library.clientTraceFiles()) ?? [])
        func available(_ entry: CatalogEntry) -> Bool {
            present.contains(entry.originalFile) && catalog.controlFile(for: entry).map(present.contains) ?? false
        }
        if json {
            let items: [JSONValue] = catalog.entries.map { entry in
                .object([
                    ("id", .string(entry.id)),
                    ("name", .string(entry.name)),
                    ("category", .string(entry.category.rawValue)),
                    (
                        "durationSeconds",
                        .number(entry.durationSeconds, text: JSONText.compactNumber(entry.durationSeconds))
                    ),
                    ("sizeMB", entry.sizeMB.map { .number($0, text: JSONText.compactNumber($0)) } ?? .null),
                    ("originalFile", .string(entry.originalFile)),
                    ("controlFile", catalog.controlFile(for: entry).map { .string($0) } ?? .null),
                    ("available", .bool(available(entry))),
                    ("recorded", .bool(entry.recorded)),
                ])
            }
            print(JSONValue.array(items).serialized())
            return
        }
        func rows(_ entries: [CatalogEntry]) -> [[String]] {
            entries.map { entry in
                [
                    entry.id,
                    entry.name,
                    entry.category.rawValue.lowercased().replacingUnderscores(),
                    Terminal.format(entry.durationSeconds, decimals: 0) + " s",
                    entry.sizeMB.map { Terminal.format($0, decimals: 0) + " MB" } ?? "",
                    available(entry) ? "yes" : "missing",
                ]
            }
        }
        let header = ["ID", "NAME", "CATEGORY", "TIME", "SIZE", "TRACES"]
        // The Wehe team's tests first; the user's own recordings apart, since a server may not have them.
        let published = catalog.entries.filter { !$0.recorded }
        let recorded = catalog.entries.filter(\.recorded)
        if !published.isEmpty {
            print(Terminal.table(header: header, rows: rows(published), rightAligned: [3, 4]))
        }
        if !recorded.isEmpty {
            print((published.isEmpty ? "" : "\n") + "Your recordings (wehe record)")
            print(Terminal.table(header: header, rows: rows(recorded), rightAligned: [3, 4]))
        }
        let missing = catalog.entries.filter { !available($0) }.count
        let places = ([directory] + library.additionalDirectories).joined(separator: " and ")
        print(
            "\n\(published.count) tests"
                + (recorded.isEmpty ? "" : " and \(recorded.count) of your recordings") + " in \(places)"
                + (missing > 0 ? "; \(missing) without trace files" : "")
        )
    }
}

extension String {
    func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}
