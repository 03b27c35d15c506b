import ArgumentParser
import Foundation
import WeheCore
import WeheStore

/// `wehe results show <id>`.
struct ShowResult: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one test in full.")

    @Argument(help: "The test id from `wehe results`.") var id: Int
    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?
    @Option(name: .customLong("lang"), help: "Language of messages: en or fr.")
    var language: String?

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            let settings = try directory.loadSettings()
            let strings = Strings.select(language ?? settings.language)
            let (found, localization) = try await History.with(directory) { store in
                (
                    try await store.test(TestKey(userID: settings.userID, historyCount: id)),
                    try await store.localizations(userID: settings.userID).first { $0.historyCounts.contains(id) }
                )
            }
            guard let record = found else {
                guard let localization else { throw CLIError(code: .missingInput, "no result with id \(id)") }
                for line in LocalizationRows.details(localization, strings: strings) { print(line) }
                return
            }
            print("\(record.metadata.replayName)  #\(id)  \(ResultsCommand.date(record.metadata.startedAt))")
            if let summary = record.mainAnalysis?.summary {
                var verdict = strings.verdict(summary.verdict.rawValue)
                if let direction = summary.direction { verdict += " (\(strings.direction(direction.rawValue)))" }
                print("  verdict: \(verdict)")
                print("  original mean: \(Terminal.format(summary.originalMeanMbps, decimals: 3)) Mbit/s")
                print("  control mean:  \(Terminal.format(summary.controlMeanMbps, decimals: 3)) Mbit/s")
                print("  area_test: \(summary.areaTest)  ks2pVal: \(summary.ksPValue)  ks2dVal: \(summary.ksStatistic)")
                print("  ks2_ratio_test: \(summary.ks2RatioTest)")
                print(
                    "  thresholds: area \(summary.thresholds.area), p \(summary.thresholds.ksPValue) (\(summary.thresholds.ruleSet))"
                )
                if let note = summary.note { print("  note: \(note)") }
            }
            let lines = Sparkline.render(series: record.replays.map(\.samples.mbps), width: 60)
            for (replay, line) in zip(record.replays, lines) {
                let label = replay.key.testID == 0 ? strings.original : strings.control
                let mean = replay.samples.meanMbps.map { Terminal.format($0, decimals: 2) } ?? "-"
                print("  \(label) \(replay.replayName): \(replay.samples.count) samples, mean \(mean) Mbit/s")
                print("    " + line)
            }
            let peak = record.replays.flatMap { Sparkline.resample($0.samples.mbps, width: 60) }.max() ?? 0
            if peak > 0 {
                print("    (one scale for both: █ = \(Terminal.format(peak, decimals: 1)) Mbit/s)")
            }
        } catch let error as CLIError {
            throw error.exit()
        } catch let error as WeheStoreError {
            throw CLIError(code: .storeFailed, error.description).exit()
        }
    }
}
