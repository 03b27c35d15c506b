package import Foundation
package import Logging
import Synchronization
package import WeheAnalysis
package import WeheCore
package import WeheStore
package import WeheWire

#if canImport(Glibc)
    import Glibc
#endif

/// Writes the files the reference server (wehe-py3) writes for M-Lab's pipeline, beside our own database: per user
/// `replay/YYYY/MM/DD/<userID>/{replayInfo,clientXputs,decisions}/…json` and the newline-delimited tables
/// `{replayInfo1,clientXputs1,decisions1,localizeDecisions1}/YYYY/MM/DD/…json`, with the table schemas in
/// `datatypesDirectory` (`datatypes/` inside the archive by default; M-Lab's jostler reads them from
/// `/var/spool/datatypes`, beside the experiment's spool `/var/spool/wehe`). Dates are the UTC day of writing, as
/// the reference's.
///
/// Every file is written to `.partial/` under the archive and renamed into place, so an uploader watching the
/// table folders never sees half a file. Writing happens on one serial queue, after the database copy is stored: a
/// slow, full or unwritable disk delays nothing and loses nothing but archive files, each failure logged (and
/// counted in `failures` and `wehe_file_write_failures_total{kind="archive"}`). The user ID in file and directory
/// names goes through `ClientFileName`, the rule the packet capture's names follow too (one user, one directory).
package final class ArchiveWriter: Sendable {
    /// The archive root (the reference's spool directory).
    package let directory: String
    /// Prefix of `measurementUUID` (`<prefix>_<socket cookie>`, M-Lab's uuid convention; M-Lab supplies the prefix
    /// in a file, `wehe` without one).
    package let uuidPrefix: String
    /// Where the table schemas (`<table>.json`) are written at start.
    package let datatypesDirectory: String
    private let logger: Logger
    private let metrics: ServerMetrics
    private let now: @Sendable () -> Date
    private let queue = DispatchQueue(label: "wehe.archive")
    private let failureCount = Atomic<Int>(0)
    private let pendingCount = Atomic<Int>(0)
    /// Writes waiting beyond this many are dropped (logged): a disk that hangs must not grow memory without bound.
    private let maximumPending = 10_000

    /// Creates the writer and writes the schemas; an unusable directory is logged, not thrown: the server runs on
    /// and each later write reports its own failure.
    ///
    /// - Parameter datatypesDirectory: where the schemas go; `nil`: `datatypes/` inside `directory`.
    package init(
        directory: String, uuidPrefix: String = "wehe", datatypesDirectory: String? = nil, logger: Logger,
        metrics: ServerMetrics = ServerMetrics(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.directory = directory
        self.uuidPrefix = uuidPrefix
        self.datatypesDirectory = datatypesDirectory ?? (directory as NSString).appendingPathComponent("datatypes")
        self.logger = logger
        self.metrics = metrics
        self.now = now
        for (table, json) in ArchiveSchemas.all {
            let path = (self.datatypesDirectory as NSString).appendingPathComponent("\(table).json")
            do {
                try FileManager.default.createDirectory(
                    atPath: self.datatypesDirectory, withIntermediateDirectories: true)
                // Written beside the target and renamed (same directory, so atomic): a reader never sees half.
                try Data(json.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                report(error, file: path)
            }
        }
    }

    /// Archive writes that failed since the start.
    package var failures: Int { failureCount.load(ordering: .relaxed) }

    /// Waits until every write queued so far is done (tests, shutdown).
    package func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }

    // MARK: - Records

    /// One replay as the reference's side channel records it when the samples arrive.
    package struct Replay: Sendable {
        package var userID: String
        package var historyCount: Int
        package var testID: Int
        package var replayName: String
        package var extraString: String
        /// The client's address as seen; anonymised here.
        package var clientAddress: String
        package var clientVersion: String?
        /// Arrival of the side channel's ID declaration.
        package var incomingTime: Date
        /// Seconds from the declaration to the samples' arrival.
        package var serverDurationSeconds: Double
        /// The client's `DONE;<seconds>` text, as sent.
        package var clientDurationText: String
        /// The client's mobile statistics object, if it sent one.
        package var mobileStats: JSONValue?
        package var measurementUUID: String
        /// Samples after the server's trimming.
        package var samples: ThroughputSeries

        package init(
            userID: String, historyCount: Int, testID: Int, replayName: String, extraString: String,
            clientAddress: String, clientVersion: String?, incomingTime: Date, serverDurationSeconds: Double,
            clientDurationText: String, mobileStats: JSONValue?, measurementUUID: String, samples: ThroughputSeries
        ) {
            self.userID = userID
            self.historyCount = historyCount
            self.testID = testID
            self.replayName = replayName
            self.extraString = extraString
            self.clientAddress = clientAddress
            self.clientVersion = clientVersion
            self.incomingTime = incomingTime
            self.serverDurationSeconds = serverDurationSeconds
            self.clientDurationText = clientDurationText
            self.mobileStats = mobileStats
            self.measurementUUID = measurementUUID
            self.samples = samples
        }
    }

    /// Queues the replay's `replayInfo` and `clientXputs` files (per user and table).
    package func archive(replay: Replay) {
        enqueue("replay \(replay.userID)/\(replay.historyCount)/\(replay.testID)") { day in
            try self.writeReplay(replay, day: day)
        }
    }

    /// Queues the analysis's `decisions` files (per user and table).
    package func archive(decisionOf test: TestKey, comparedTestID: Int, statistics: TestStatistics) {
        enqueue("decision \(test.userID)/\(test.historyCount)/\(comparedTestID)") { day in
            try self.writeDecision(test, comparedTestID: comparedTestID, statistics: statistics, day: day)
        }
    }

    /// The samples and outcome of one localization, as the reference's `localizeDecisions` record holds them.
    package struct Localization: Sendable {
        package var userID: String
        package var historyCounts: [Int]
        package var singleHistoryCount: Int?
        package var simultaneous: [[Double]]?
        package var single: [Double]?
        package var summary: LocalizationSummary

        package init(
            userID: String, historyCounts: [Int], singleHistoryCount: Int?, simultaneous: [[Double]]?,
            single: [Double]?, summary: LocalizationSummary
        ) {
            self.userID = userID
            self.historyCounts = historyCounts
            self.singleHistoryCount = singleHistoryCount
            self.simultaneous = simultaneous
            self.single = single
            self.summary = summary
        }
    }

    /// Queues the localization's `localizeDecisions1` table file.
    package func archive(localization: Localization) {
        enqueue("localization \(localization.userID)/\(localization.historyCounts)") { day in
            try self.writeLocalization(localization, day: day)
        }
    }

    // MARK: - Content

    /// `a.b.c.0` for IPv4 and the /48 network for IPv6, without the prefix length (the reference's anonymisation).
    static func anonymized(_ address: String) -> String {
        guard let masked = AnonymizationPolicy.default.anonymize(address) else { return "" }
        return masked.split(separator: "/").first.map(String.init) ?? masked
    }

    /// The file name part for a user in the per-user folders: the user ID under the client file name rule.
    static func user(_ userID: String) -> String { ClientFileName.component(userID) }

    /// The reference's file name part for a user in the tables: `user(_:)` without its `@`.
    static func bareUser(_ userID: String) -> String { user(userID).replacingOccurrences(of: "@", with: "") }

    /// `YYYY-MM-DD HH:MM:SS`, UTC.
    static func timestamp(_ date: Date) -> String {
        let c = Calendar.utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0,
            c.second ?? 0)
    }

    /// `YYYY/MM/DD`, UTC.
    static func dayPath(_ date: Date) -> String {
        let c = Calendar.utc.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d/%02d/%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
    }

    /// The metadata record of `replayInfo1` from the client's mobile statistics: the schema's fields in its order,
    /// null where the client sent nothing (the reference's all-null record when no statistics came). Coordinates
    /// are rounded to 0.1° (about 11 km).
    static func metadata(_ stats: JSONValue?) -> ArchiveJSON {
        func value(_ object: JSONValue?, _ key: String) -> ArchiveJSON {
            guard let member = object?[key] else { return .null }
            switch member {
            case .object, .array: return .string(ArchiveJSON.from(member).serialized())
            default: return ArchiveJSON.from(member)
            }
        }
        let os = stats?["os"]
        let location = stats?["locationInfo"]
        func coordinate(_ key: String) -> ArchiveJSON {
            switch location?[key] {
            case .number(let number, _)?: return .float((number * 10).rounded() / 10)
            case .string(let text)?: return Double(text).map { .float(($0 * 10).rounded() / 10) } ?? .null
            default: return .null
            }
        }
        return .object([
            ("cellInfo", value(stats, "cellInfo")), ("model", value(stats, "model")),
            ("manufacturer", value(stats, "manufacturer")), ("carrierName", value(stats, "carrierName")),
            (
                "os",
                .object([
                    ("INCREMENTAL", value(os, "INCREMENTAL")), ("RELEASE", value(os, "RELEASE")),
                    ("SDK_INT", value(os, "SDK_INT")),
                ])
            ),
            ("networkType", value(stats, "networkType")),
            (
                "locationInfo",
                .object([
                    ("latitude", coordinate("latitude")), ("longitude", coordinate("longitude")),
                    ("country", value(location, "country")), ("countryCode", value(location, "countryCode")),
                    ("city", value(location, "city")), ("localTime", value(location, "localTime")),
                ])
            ),
            ("updatedCarrierName", value(stats, "updatedCarrierName")),
        ])
    }

    private func writeReplay(_ replay: Replay, day: String) throws {
        let user = replay.userID
        let named = Self.user(user)
        let bare = Self.bareUser(user)
        let ids = "\(replay.historyCount)_\(replay.testID)"
        let address = Self.anonymized(replay.clientAddress)
        let time = Self.timestamp(replay.incomingTime)
        let clientDuration = Double(replay.clientDurationText)
        // The per-user record is the reference's 18-element array: the side channel's strings kept as strings.
        let info: ArchiveJSON = .array([
            .string(time), .string(user), .string(address), .string(address), .string(replay.replayName),
            .string(replay.extraString), .string(String(replay.historyCount)), .string(String(replay.testID)),
            .string("NoExp"), .bool(true), .bool(true), .null, .float(replay.serverDurationSeconds),
            .string(replay.clientDurationText),
            replay.mobileStats.map { _ in Self.metadata(replay.mobileStats) } ?? .null,
            .bool(false), .optionalString(replay.clientVersion), .string(replay.measurementUUID),
        ])
        let row: ArchiveJSON = .object([
            ("timestamp", .string(time)), ("userID", .string(user)), ("clientIP", .string(address)),
            ("clientIP2", .string(address)), ("replayName", .string(replay.replayName)),
            ("extraString", .string(replay.extraString)), ("historyCount", .int(replay.historyCount)),
            ("testID", .string(String(replay.testID))), ("exception", .string("NoExp")), ("testFinished", .bool(true)),
            ("testFinishedWoutError", .bool(true)), ("iperfInfo", .null),
            ("testDurationServer", .float(replay.serverDurationSeconds)),
            ("testDurationClient", clientDuration.map(ArchiveJSON.float) ?? .null),
            ("metadata", Self.metadata(replay.mobileStats)), ("emptyBool", .bool(false)),
            ("clientVersion", .optionalString(replay.clientVersion)),
            ("measurementUUID", .string(replay.measurementUUID)),
        ])
        let xputs: ArchiveJSON = .array([
            .array(replay.samples.mbps.map(ArchiveJSON.clientNumber)),
            .array(replay.samples.times.map(ArchiveJSON.clientNumber)),
        ])
        let xputRow: ArchiveJSON = .object([
            ("userID", .string(user)), ("historyCount", .int(replay.historyCount)), ("testID", .int(replay.testID)),
            ("xputSamples", .array(replay.samples.mbps.map(ArchiveJSON.float))),
            ("intervals", .array(replay.samples.times.map(ArchiveJSON.float))),
        ])
        let userDirectory = "replay/\(day)/\(named)"
        try write(info.serialized(), to: "\(userDirectory)/replayInfo/replayInfo_\(named)_\(ids).json")
        try write(xputs.serialized(), to: "\(userDirectory)/clientXputs/Xput_\(named)_\(ids).json")
        try write(row.serialized(), to: "replayInfo1/\(day)/replayInfo_\(bare)_\(ids).json")
        try write(xputRow.serialized(), to: "clientXputs1/\(day)/Xput_\(bare)_\(ids).json")
    }

    private func writeDecision(
        _ test: TestKey, comparedTestID: Int, statistics s: TestStatistics, day: String
    ) throws {
        let user = test.userID
        let ids = "\(test.historyCount)_\(comparedTestID)"
        let minimum = min(s.original.min, s.control.min)
        // Python's min()/max() return the client's own (possibly integer) values; mean, median and std are floats.
        func list(_ summary: ThroughputSummary) -> ArchiveJSON {
            .array([
                .clientNumber(summary.max), .clientNumber(summary.min), .float(summary.mean), .float(summary.median),
                .float(summary.standardDeviation),
            ])
        }
        func record(_ summary: ThroughputSummary) -> ArchiveJSON {
            .object([
                ("max", .float(summary.max)), ("min", .float(summary.min)), ("average", .float(summary.mean)),
                ("median", .float(summary.median)), ("std", .float(summary.standardDeviation)),
            ])
        }
        let decision: ArchiveJSON = .array([
            .float(s.areaTest), .float(s.ks2RatioTest), .float(s.area), .int(0), list(s.original), list(s.control),
            .clientNumber(minimum), .float(s.meanSubsetKSStatistic), .float(s.meanSubsetKSPValue),
            .float(s.ksStatistic), .float(s.ksPValue),
        ])
        let row: ArchiveJSON = .object([
            ("userID", .string(user)), ("historyCount", .int(test.historyCount)), ("testID", .int(comparedTestID)),
            ("avgXputDiffPct", .float(s.areaTest)), ("KSAcceptRatio", .float(s.ks2RatioTest)),
            ("avgXputDiff", .float(s.area)), ("emptyField", .int(0)), ("originalXputStats", record(s.original)),
            ("controlXputStats", record(s.control)), ("minXput", .float(minimum)),
            ("KSAvgDVal", .float(s.meanSubsetKSStatistic)), ("KSAvgPVal", .float(s.meanSubsetKSPValue)),
            ("KSDVal", .float(s.ksStatistic)), ("KSPVal", .float(s.ksPValue)),
        ])
        let named = Self.user(user)
        try write(
            decision.serialized(), to: "replay/\(day)/\(named)/decisions/results_\(named)_Client_\(ids).json")
        try write(row.serialized(), to: "decisions1/\(day)/results_\(Self.bareUser(user))_Client_\(ids).json")
    }

    /// `{max, min, average, median, std}` of a sample list (population std), as the localization record holds it.
    static func stats(_ values: [Double]) -> ArchiveJSON {
        guard !values.isEmpty else { return .null }
        let sorted = values.sorted()
        let mean = values.reduce(0, +) / Double(values.count)
        let middle = sorted.count / 2
        let median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count)
        return .object([
            ("max", .clientNumber(sorted.last ?? 0)), ("min", .clientNumber(sorted.first ?? 0)),
            ("average", .float(mean)), ("median", .float(median)), ("std", .float(variance.squareRoot())),
        ])
    }

    private func writeLocalization(_ run: Localization, day: String) throws {
        var tests: [ArchiveJSON] = []
        var results: [(String, ArchiveJSON)] = []
        let summary = run.summary
        if let u = summary.mwuStatistic, let p = summary.mwuPValue {
            var pair: [(String, ArchiveJSON)] = [
                ("singleReplayHistoryCount", run.singleHistoryCount.map { .string(String($0)) } ?? .null),
                ("mwuVal", .float(u)), ("mwuPVal", .float(p)),
            ]
            if let simultaneous = run.simultaneous, simultaneous.count == 2 {
                let sum = zip(simultaneous[0], simultaneous[1]).map { $0 + $1 }
                pair.append(("simReplaysXputStats", .array(simultaneous.map(Self.stats))))
                pair.append(("simReplaySumXputStats", Self.stats(sum)))
            }
            if let single = run.single { pair.append(("singleReplayXputStats", Self.stats(single))) }
            tests.append(.string("pairsum_vs_single_xput"))
            results.append(("pairsum_vs_single_xput", .object(pair)))
        }
        if !summary.averageLoss.isEmpty {
            tests.append(.string("loss_correlation"))
            results.append(
                (
                    "loss_correlation",
                    .object([
                        ("intervalSizes", .array(summary.intervalSizes.map(ArchiveJSON.float))),
                        ("corrPValues", .array(summary.correlationPValues.map(ArchiveJSON.float))),
                        ("simReplaysAvgLoss", .array(summary.averageLoss.map(ArchiveJSON.float))),
                    ])
                ))
        }
        let record: ArchiveJSON = .object([
            ("userID", .string(run.userID)), ("simReplayHistoryCounts", .array(run.historyCounts.map(ArchiveJSON.int))),
            ("testID", .int(0)), ("localizeTestsList", .array(tests)), ("localizeTestsResults", .object(results)),
        ])
        let counts = run.historyCounts.map(String.init).joined(separator: "-")
        try write(
            record.serialized(),
            to: "localizeDecisions1/\(day)/localizeResults_\(Self.bareUser(run.userID))_\(counts)_0.json")
    }

    // MARK: - Files

    private func enqueue(_ what: String, _ body: @escaping @Sendable (String) throws -> Void) {
        guard pendingCount.add(1, ordering: .relaxed).newValue <= maximumPending else {
            pendingCount.subtract(1, ordering: .relaxed)
            failureCount.add(1, ordering: .relaxed)
            metrics.fileWriteFailed("archive", stage: "pending")
            logger.error("archive: too many writes pending, dropped", metadata: ["wehe.archive.item": "\(what)"])
            return
        }
        let day = Self.dayPath(now())
        queue.async {
            defer { self.pendingCount.subtract(1, ordering: .relaxed) }
            do {
                try body(day)
            } catch {
                self.report(error, file: what)
            }
        }
    }

    private func report(_ error: any Error, file: String) {
        failureCount.add(1, ordering: .relaxed)
        metrics.fileWriteFailed("archive", stage: (error as? ArchiveError)?.stage ?? "write")
        logger.error(
            "archive file not written (the database copy is kept)",
            metadata: ["wehe.archive.file": "\(file)", "wehe.error": "\(error)", "wehe.archive": "\(directory)"])
    }

    /// Writes `text` to `.partial/` and renames it to `relativePath` (same file system, so the rename is atomic).
    private func write(_ text: String, to relativePath: String) throws {
        let components = relativePath.split(separator: "/").map(String.init)
        guard components.allSatisfy(ClientFileName.isSafe) else {
            throw ArchiveError(message: "unsafe archive path \(relativePath)", stage: "path")
        }
        let root = URL(fileURLWithPath: directory, isDirectory: true)
        let target = root.appendingPathComponent(relativePath)
        let partial = root.appendingPathComponent(".partial", isDirectory: true)
        let files = FileManager.default
        try files.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try files.createDirectory(at: partial, withIntermediateDirectories: true)
        let temporary = partial.appendingPathComponent("\(UUID().uuidString).json")
        guard files.createFile(atPath: temporary.path, contents: Data(text.utf8)) else {
            throw ArchiveError(message: "cannot write \(temporary.path): \(String(cString: strerror(errno)))")
        }
        guard rename(temporary.path, target.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? files.removeItem(at: temporary)
            throw ArchiveError(message: "cannot rename into \(target.path): \(reason)", stage: "rename")
        }
    }
}

/// Why an archive file (or a packet capture) was not written.
struct ArchiveError: Error, CustomStringConvertible {
    var message: String
    /// The step that failed, for `wehe_file_write_failures_total`.
    var stage = "write"
    var description: String { message }
}

extension Calendar {
    fileprivate static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        return calendar
    }()
}
