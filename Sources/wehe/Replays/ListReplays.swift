import ArgumentParser
import WeheCore
import WeheWire

/// `wehe replays list`: the catalog as a table or JSON.
struct ListReplays: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the tests in the catalog.")

    @OptionGroup var replays: ReplayDirectoryOption
    @Flag(name: .long, help: "Print one JSON array instead of a table.") var json = false

    func run() async throws {
        let directory = try replays.resolved()
        let library = ReplayLibrary(directory: directory)
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
                ])
            }
            print(JSONValue.array(items).serialized())
            return
        }
        let rows = catalog.entries.map { entry in
            [
                entry.id,
                entry.name,
                entry.category.rawValue.lowercased().replacingUnderscores(),
                Terminal.format(entry.durationSeconds, decimals: 0) + " s",
                entry.sizeMB.map { Terminal.format($0, decimals: 0) + " MB" } ?? "",
                available(entry) ? "yes" : "missing",
            ]
        }
        print(
            Terminal.table(
                header: ["ID", "NAME", "CATEGORY", "TIME", "SIZE", "TRACES"], rows: rows, rightAligned: [3, 4]))
        let missing = catalog.entries.filter { !available($0) }.count
        print(
            "\n\(catalog.entries.count) tests in \(directory)" + (missing > 0 ? "; \(missing) without trace files" : "")
        )
    }
}

extension String {
    func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}
