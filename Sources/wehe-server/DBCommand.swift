import ArgumentParser
import Foundation
import Logging
import WeheCore
import WeheStore
import WeheStoreSQL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `wehe-server db …`: operator tools for the result database.
struct DBCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Migrate, check, export and purge the result database.",
        subcommands: [Migrate.self, Check.self, Export.self, Purge.self, StressWrite.self]
    )

    /// Exit code for a database error.
    static let databaseErrorExitCode: Int32 = 3
    /// Exit code of `db check` when the database has problems.
    static let problemsExitCode: Int32 = 1

    /// A logger on standard error for warnings and errors.
    static func makeLogger() -> Logger {
        var logger = Logger(label: "wehe-server", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .warning
        return logger
    }

    /// Prints the error on one line of standard error and exits with `databaseErrorExitCode`.
    static func fail(_ error: WeheStoreError) -> ExitCode {
        FileHandle.standardError.write(Data("wehe-server: \(error)\n".utf8))
        return ExitCode(databaseErrorExitCode)
    }

    /// Opens the store described by `options`.
    static func open(
        _ options: StoreOptions,
        schemaMode: SQLStoreConfiguration.SchemaMode,
        readOnly: Bool = false,
        createIfMissing: Bool = true
    ) async throws -> SQLResultStore {
        do {
            let configuration = try options.configuration(
                schemaMode: schemaMode,
                readOnly: readOnly,
                createIfMissing: createIfMissing
            )
            return try await SQLResultStore.open(configuration: configuration, logger: makeLogger())
        } catch {
            throw fail(error)
        }
    }
}

extension DBCommand {
    /// `db migrate`: creates the database if needed and applies pending schema migrations.
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the database if needed and apply pending schema migrations."
        )

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let store = try await DBCommand.open(self.store, schemaMode: .migrate)
            defer { _ = store }
            do {
                let version = try await store.schemaVersion()
                await store.close()
                print("database \(store.databaseName): schema version \(version) (current)")
            } catch {
                await store.close()
                throw DBCommand.fail(error)
            }
        }
    }

    /// `db check`: verifies the schema version and the database's integrity without changing anything.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the schema version and the integrity of the database (read-only).",
            discussion: "Exits 0 when healthy, 1 when problems were found, 3 when the database cannot be used."
        )

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let store = try await DBCommand.open(
                self.store, schemaMode: .verify, readOnly: true, createIfMissing: false)
            let problems: [String]
            let tests: Int
            let events: Int
            do {
                problems = try await store.integrityProblems()
                tests = try await store.counts(CountQuery(groupBy: [])).first?.count ?? 0
                events = try await store.sessionEventCounts(from: nil, to: nil).reduce(0) { $0 + $1.count }
                await store.close()
            } catch {
                await store.close()
                throw DBCommand.fail(error)
            }
            print("database \(store.databaseName): schema version \(SQLResultStore.latestSchemaVersion)")
            print("tests: \(tests), session log entries: \(events)")
            if problems.isEmpty {
                print("integrity: ok")
            } else {
                print("integrity: \(problems.count) problem(s)")
                for problem in problems.prefix(50) { print("  \(problem)") }
                throw ExitCode(DBCommand.problemsExitCode)
            }
        }
    }

    /// `db export`: writes every stored test as JSON lines or CSV.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Export stored tests as JSON lines (in full, with samples) or CSV (one row per test, no samples)."
        )

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case jsonl
            case csv
        }

        @OptionGroup var store: StoreOptions

        @Option(help: "Output format: jsonl or csv.")
        var format: Format

        @Option(name: .customLong("output"), help: "Write to this file instead of standard output.")
        var outputPath: String?

        @Option(help: "Only tests started at or after this UTC time (YYYY-MM-DD or ISO 8601).")
        var from: String?

        @Option(help: "Only tests started before this UTC time (YYYY-MM-DD or ISO 8601).")
        var to: String?

        @Option(help: "Only tests of this provider.")
        var provider: String?

        @Option(help: "Only tests of this original replay name.")
        var replay: String?

        func validate() throws {
            if let from, TestExport.parseDate(from) == nil { throw ValidationError("--from: not a date: \(from)") }
            if let to, TestExport.parseDate(to) == nil { throw ValidationError("--to: not a date: \(to)") }
        }

        func run() async throws {
            let output: FileHandle
            if let outputPath {
                guard FileManager.default.createFile(atPath: outputPath, contents: nil),
                    let handle = FileHandle(forWritingAtPath: outputPath)
                else {
                    FileHandle.standardError.write(Data("wehe-server: cannot write \(outputPath)\n".utf8))
                    throw ExitCode.failure
                }
                output = handle
            } else {
                output = FileHandle.standardOutput
            }
            let store = try await DBCommand.open(
                self.store, schemaMode: .verify, readOnly: true, createIfMissing: false)
            let filter = TestFilter(
                from: from.flatMap(TestExport.parseDate),
                to: to.flatMap(TestExport.parseDate),
                provider: provider,
                replayName: replay
            )
            var writer = TestExport.BufferedOutput(handle: output)
            var exported = 0
            do {
                if format == .csv { writer.write(TestExport.csvHeader) }
                for try await record in store.tests(filter) {
                    switch format {
                    case .jsonl: writer.write(try TestExport.jsonLine(record))
                    case .csv: writer.write(TestExport.csvLine(record))
                    }
                    exported += 1
                }
                writer.flush()
                await store.close()
            } catch let error as WeheStoreError {
                writer.flush()
                await store.close()
                throw DBCommand.fail(error)
            }
            if outputPath != nil { try output.close() }
            FileHandle.standardError.write(Data("exported \(exported) test(s) from \(store.databaseName)\n".utf8))
        }
    }

    /// `db stress-write` (hidden): writes tests one transaction at a time and appends the key of each acknowledged
    /// test to an ack file, synced to disk, until killed or done. Used by the durability test.
    struct StressWrite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stress-write",
            abstract: "Write tests and log each acknowledged key to a file (durability testing).",
            shouldDisplay: false
        )

        @OptionGroup var store: StoreOptions

        @Option(name: .customLong("ack-file"), help: "File that receives one line per acknowledged test key.")
        var ackFile: String

        @Option(help: "Number of tests to write.")
        var count: Int = 1_000_000

        @Option(help: "Concurrent writers.")
        var writers: Int = 1

        @Option(help: "User id of the written tests.")
        var user: String = "@stress"

        func run() async throws {
            let store = try await DBCommand.open(self.store, schemaMode: .migrate)
            guard let ack = AckLog(path: ackFile) else {
                await store.close()
                FileHandle.standardError.write(Data("wehe-server: cannot open \(ackFile)\n".utf8))
                throw ExitCode.failure
            }
            let total = count
            let writerCount = max(1, writers)
            let user = self.user
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<writerCount {
                        group.addTask {
                            for index in stride(from: writer, to: total, by: writerCount) {
                                let record = StressWrite.record(user: user, count: index)
                                try await store.save(test: record)
                                await ack.append("\(record.key.userID)/\(record.key.historyCount)\n")
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            } catch let error as WeheStoreError {
                await store.close()
                throw DBCommand.fail(error)
            }
            await store.close()
            print("wrote \(total) test(s)")
        }

        static func record(user: String, count: Int) -> TestRecord {
            let key = TestKey(userID: user, historyCount: count)
            let started = Date()
            let original = (0..<50).map { Double(($0 * 7 + count) % 13) * 0.25 }
            let control = (0..<50).map { Double(($0 * 5 + count) % 11) * 0.5 }
            return TestRecord(
                key: key,
                metadata: TestMetadata(
                    replayName: "Pandora-05132024",
                    startedAt: started,
                    provider: "Stress (cellular)",
                    networkType: "LTE",
                    clientVersion: "stress",
                    clientAddress: "192.0.2.\(count % 250)"
                ),
                replays: [
                    ReplayRecord(
                        key: key.replay(0),
                        replayName: "Pandora-05132024",
                        samples: ThroughputSeries(mbps: original, interval: 0.12),
                        receivedAt: started
                    ),
                    ReplayRecord(
                        key: key.replay(1),
                        replayName: "PandoraRandom-05132024",
                        samples: ThroughputSeries(mbps: control, interval: 0.12),
                        receivedAt: started
                    ),
                ]
            )
        }
    }
}

/// An append-only file of acknowledged keys; each line is synced to disk before `append` returns.
actor AckLog {
    private let descriptor: Int32

    init?(path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    func append(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
        fsync(descriptor)
    }
}
