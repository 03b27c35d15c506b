import ArgumentParser
import Foundation
import WeheAnalysis
import WeheCore

/// `wehe analyze <original> <control>`: runs the per-test differentiation analysis on two throughput sample files.
///
/// Each file is a JSON array of Mbit/s values or the upload shape `[[mbps…], [times…]]`. Exit codes: 0 on success
/// (whatever the verdict), 64 for invalid options, 65 for a malformed sample file, 66 for an unreadable file.
struct AnalyzeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Compare an original and a control replay's throughput samples and print the verdict.",
        discussion: """
            Each file holds a JSON array of Mbit/s values, or [[mbps...], [times...]] as clients upload them \
            (numbers may use exponent notation such as 2.2E-4). Exit status: 0 success, 1 malformed sample file, \
            3 unreadable file, 64 usage error.
            """
    )

    /// The decision rule to apply.
    enum RuleSetOption: String, ExpressibleByArgument, CaseIterable {
        case android
        case ios
    }

    @Argument(help: "Sample file of the original replay.")
    var original: String

    @Argument(help: "Sample file of the control replay.")
    var control: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    @Option(help: "Decision rule: android (default, deterministic) or ios (also requires the jackknife ratio).")
    var rules: RuleSetOption = .android

    @Option(help: "Area threshold as a fraction (default 0.5, or 0.3 above 10 Mbit/s).")
    var areaThreshold: Double?

    @Option(help: "KS p-value threshold (default 0.01).")
    var pThreshold: Double?

    @Option(help: "Seed of the jackknife subsampling.")
    var seed: UInt64 = 1

    @Flag(help: "Drop the last sample of each file first, as the server does with client uploads.")
    var dropLast = false

    @Option(name: .customLong("lang"), help: "Language of the text output: en or fr (default: the locale).")
    var language: String?

    func run() async throws {
        let verdictRules = VerdictRules(
            ruleSet: rules == .ios ? .ios : .android, customAreaThreshold: areaThreshold,
            customKSPValueThreshold: pThreshold)
        let analyzer: DifferentiationAnalyzer
        do {
            analyzer = try DifferentiationAnalyzer(
                configuration: DifferentiationConfiguration(rules: verdictRules, dropsLastSample: dropLast))
        } catch {
            throw ValidationError(error.message)
        }
        do {
            let originalSeries = try SampleFile.read(path: original)
            let controlSeries = try SampleFile.read(path: control)
            let summary = try analyzer.analyze(original: originalSeries, control: controlSeries, seed: seed)
            let trimmed = dropLast ? 1 : 0
            let report = AnalysisReport(
                summary: summary, originalSamples: max(0, originalSeries.count - trimmed),
                controlSamples: max(0, controlSeries.count - trimmed))
            let strings = Strings.select(language)
            if json {
                print(String(decoding: report.jsonData(), as: UTF8.self))
            } else if strings.language == .fr {
                print(
                    Self.frenchText(
                        summary, originalSamples: report.originalSamples, controlSamples: report.controlSamples,
                        strings: strings))
            } else {
                print(report.text)
            }
        } catch {
            throw CLIError(code: error.code == .unreadableFile ? .missingInput : .invalidInput, error.message).exit()
        }
    }

    /// The text report in French, with French number formatting.
    static func frenchText(_ summary: AnalysisSummary, originalSamples: Int, controlSamples: Int, strings: Strings)
        -> String
    {
        func number(_ value: Double, _ digits: Int) -> String {
            Terminal.format(value, decimals: digits, language: .fr)
        }
        var verdict: String
        switch summary.verdict {
        case .differentiation:
            verdict =
                "Différenciation détectée" + (summary.direction.map { " (\(strings.direction($0.rawValue)))" } ?? "")
        case .noDifferentiation: verdict = "Pas de différenciation"
        case .blocked: verdict = "Bloqué"
        case .inconclusive:
            verdict = "Résultats non concluants"
            if summary.insufficientDataReason != nil {
                verdict +=
                    " - trop peu de mesures (il faut au moins "
                    + "\(DifferentiationConfiguration.defaultMinimumPositiveSamples) débits positifs par rejeu)"
            }
        }
        return [
            verdict,
            "original : \(number(summary.originalMeanMbps, 1)) Mbit/s en moyenne sur \(originalSamples) mesures",
            "contrôle : \(number(summary.controlMeanMbps, 1)) Mbit/s en moyenne sur \(controlSamples) mesures",
            "test d'aire \(number(summary.areaTest, 4)) (seuil \(number(summary.thresholds.area, 2))), KS D "
                + "\(number(summary.ksStatistic, 4)) p \(Terminal.pValue(summary.ksPValue, language: .fr)) (seuil "
                + "\(number(summary.thresholds.ksPValue, 2))), règle \(summary.thresholds.ruleSet)",
        ].joined(separator: "\n")
    }
}
