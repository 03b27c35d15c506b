import ArgumentParser
import Foundation
import WeheCore
import WeheStore
import WeheWire

/// `wehe results show <id>`.
struct ShowResult: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one test in full.")

    @Argument(help: "The test id from `wehe results`.") var id: Int
    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?
    @Option(name: .customLong("lang"), help: "Language of messages: en or fr.")
    var language: String?
    @Flag(name: .long, help: "Print every field and both sample series as one JSON object.")
    var json = false
    @Flag(name: .long, help: "Print one paragraph to quote: app, provider, date, server, speeds, verdict, version.")
    var summary = false
    @OptionGroup var replays: ReplayDirectoryOption

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            let settings = try directory.loadSettings()
            let strings = Strings.select(language ?? settings.language)
            let (found, localization, dpi) = try await History.with(directory) { store in
                (
                    try await store.test(TestKey(userID: settings.userID, historyCount: id)),
                    try await store.localizations(userID: settings.userID).first { $0.historyCounts.contains(id) },
                    try await store.dpiResults(DPIResultQuery(userID: settings.userID, historyCount: id, limit: 10))
                )
            }
            guard let record = found else {
                guard let localization else { throw CLIError(code: .missingInput, "no result with id \(id)") }
                for line in LocalizationRows.details(localization, strings: strings) { print(line) }
                return
            }
            let records = ResultRecords.load(replays: replays, strings: strings)
            let overview = TestOverview(
                key: record.key, metadata: record.metadata, originalMeanMbps: record.replay(0)?.samples.meanMbps,
                controlMeanMbps: record.replay(1)?.samples.meanMbps, analysis: record.mainAnalysis?.summary,
                sensitive: record.sensitive)
            if summary {
                print(Terminal.wrap(records.summary(overview), indent: ""))
                return
            }
            if json {
                // The result record with both sample series: the same keys as `wehe run --json`.
                let full = ResultRecord(
                    record: record, name: records.app(record.metadata.replayName),
                    test: records.testIDs[record.metadata.replayName])
                print(full.jsonText)
                return
            }
            let label = strings.showLabels
            print(
                "\(records.displayApp(record.metadata.replayName))  #\(id)  \(ResultRecords.isoDate(record.metadata.startedAt))"
                    + "  (\(record.metadata.replayName))")
            if let summary = record.mainAnalysis?.summary {
                var verdict = strings.verdict(summary.verdict.rawValue)
                if let direction = summary.direction { verdict += " (\(strings.direction(direction.rawValue)))" }
                print("  \(label.verdict): \(verdict)")
                print("  \(label.original): \(strings.speed(ResultRecords.originalMean(overview), decimals: 3))")
                print("  \(label.control): \(strings.speed(ResultRecords.controlMean(overview), decimals: 3))")
                print("  area_test: \(summary.areaTest)  ks2pVal: \(summary.ksPValue)  ks2dVal: \(summary.ksStatistic)")
                print("  ks2_ratio_test: \(summary.ks2RatioTest)")
                print(
                    "  \(label.thresholds): area \(summary.thresholds.area), p \(summary.thresholds.ksPValue) "
                        + "(\(summary.thresholds.ruleSet))")
                if let note = summary.note { print(Terminal.wrap("  \(label.note): \(note)", indent: "    ")) }
            }
            if let note = record.timeLimitNote { print(Terminal.wrap("  \(note)", indent: "    ")) }
            if let sensitive = record.sensitive {
                // The sensitive verdict of an interleaved test, beside the published one above.
                let kind = sensitive.stopReason == nil ? "sensitive verdict" : "adaptive verdict"
                var line = "  \(kind) (\(sensitive.rounds) rounds): \(sensitive.verdict.rawValue)"
                if let direction = sensitive.direction { line += " (\(direction.rawValue))" }
                if let reason = sensitive.stopReason {
                    line += ", stopped for \(reason.rawValue) after \(Terminal.bytes(sensitive.bytesMoved ?? 0))"
                }
                line += ", \(sensitive.effectText), p \(JSONText.compactNumber(sensitive.pValue))"
                // The note says, among others, how many replays the time limit stopped.
                if let note = sensitive.note { line += "; \(note)" }
                print(Terminal.wrap(line, indent: "    "))
                // A throttle that starts or stops during the replay (the change in time of the interleaved rounds).
                if let text = ResultOutput.changePointText(sensitive) {
                    print(Terminal.wrap("  \(text)", indent: "    "))
                } else if let change = sensitive.changePoint {
                    var text = "  change in time: none found, p \(JSONText.compactNumber(change.pValue))"
                    if let note = change.note { text += "; \(note)" }
                    print(Terminal.wrap(text, indent: "    "))
                }
            }
            // The DPI searches started from this test: the bytes the classifier matches, or why none were found.
            for line in DPIFindingLines.lines(dpi, strings: strings) {
                // Wrapped to 80 columns under its own indent.
                let indent = String(line.prefix { $0 == " " })
                let text = Terminal.wrap(String(line.dropFirst(indent.count)), width: 80 - indent.count)
                print(indent + text.replacingOccurrences(of: "\n", with: "\n" + indent))
            }
            let lines = Sparkline.render(series: record.replays.map(\.samples.mbps), width: 60)
            for (replay, line) in zip(record.replays, lines) {
                let role = replay.key.testID == 0 ? strings.original : strings.control
                let mean = replay.samples.meanMbps.map { Terminal.format($0, decimals: 2, language: strings.language) }
                print(
                    "  " + strings.replayLine(role, replay.replayName, samples: replay.samples.count, mean: mean ?? "-")
                )
                print("    " + line)
            }
            let peak = record.replays.flatMap { Sparkline.resample($0.samples.mbps, width: 60) }.max() ?? 0
            if peak > 0 {
                print("    " + strings.sparklineScale(Terminal.format(peak, decimals: 1, language: strings.language)))
            }
        } catch let error as CLIError {
            throw error.exit()
        } catch let error as WeheStoreError {
            throw CLIError(code: .storeFailed, error.description).exit()
        }
    }

}
