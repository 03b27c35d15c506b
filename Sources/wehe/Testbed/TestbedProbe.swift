import ArgumentParser
import Foundation
import WeheClient
import WeheCore
import WeheWire

/// `wehe testbed probe <test>`: one test against a testbed server, confirmation off, printed as one JSON object that
/// includes the throughput samples the server analysed (for the accuracy benchmark's reference verdict).
struct TestbedProbe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Run one test against a testbed server and print the verdict with its samples as JSON.",
        discussion: """
            Meant for measuring the detector on a testbed (scripts/accuracy.sh): no consent prompt, no settings, \
            no history, no confirmation run, a fresh random user id per probe unless --user-id is given. The \
            JSON object has the verdict and statistics of `wehe run --json` plus "original" and "control": the \
            samples (Mbit/s) as the server analysed them (the last, partial sample of each replay dropped), \
            and "label", copied from --label. With --rounds N the published test is followed by N − 1 more rounds \
            and "sensitiveVerdict" is decided on all of them (Docs/testbed.md, "Sensitive verdict").
            """
    )

    @Argument(help: "Test id from the catalog (deezer, port80s …).")
    var test: String

    @Option(name: .long, help: "Server address.")
    var server = "198.18.2.2"

    @Option(name: .long, help: "PEM certificate (or CA) to trust.")
    var cert: String?

    @Option(name: .customLong("side-channel-port"), help: "TLS side-channel port.")
    var sideChannelPort = 55556

    @Option(name: .customLong("analyzer-port"), help: "HTTPS analyzer port.")
    var analyzerPort = 56566

    @Option(name: .customLong("user-id"), help: "User id (default: a fresh random one).")
    var userID: String?

    @Option(name: .long, help: "Replay order: random, original-first or control-first.")
    var order = "random"

    @Option(name: .long, help: "A text copied into the JSON output (e.g. the testbed condition).")
    var label = ""

    @Option(
        name: .long,
        help: "Rounds of both replays (coin-flipped order each) for the sensitive verdict; 1 = the published test only."
    )
    var rounds = 1

    @Flag(
        name: .long,
        help: "The adaptive verdict: short randomized rounds until the evidence suffices (no published test).")
    var adaptive = false

    @OptionGroup var replays: ReplayDirectoryOption

    func validate() throws {
        guard ["random", "original-first", "control-first"].contains(order) else {
            throw ValidationError("--order must be random, original-first or control-first")
        }
        guard (1...24).contains(rounds) else { throw ValidationError("--rounds must be between 1 and 24") }
        if adaptive && rounds != 1 { throw ValidationError("--adaptive chooses its own rounds; leave out --rounds") }
    }

    func run() async throws {
        do {
            let library = try replays.library()
            let catalog: AppCatalog
            do {
                catalog = try library.catalog()
            } catch {
                throw CLIError(code: error.code == .unreadable ? .missingInput : .invalidInput, error.description)
            }
            let selected: ReplayClient.Test
            do {
                selected = try ReplayClient.Test.load(test, from: library, catalog: catalog)
            } catch {
                throw CLIError(error)
            }
            var configuration = ReplayClientConfiguration(
                server: server,
                userID: userID ?? Self.randomUserID(),
                trustedCertificatesPEM: try RunCommand.readCertificate(cert),
                sideChannelPort: sideChannelPort,
                analyzerPort: analyzerPort,
                confirmation: false
            )
            // The probe measures: UDP replays are followed by the report that gives the server their loss timeline.
            configuration.reportsDatagrams = true
            configuration.replayOrder =
                order == "original-first" ? .originalFirst : order == "control-first" ? .controlFirst : .random
            let result: TestResult
            do {
                let client = ReplayClient(configuration: configuration)
                // The testbed measures the adaptive verdict itself: no fall-back to the published test.
                result =
                    adaptive
                    ? try await client.runAdaptive(selected, fallBack: false)
                    : try await client.runInterleaved(selected, rounds: rounds)
            } catch {
                throw CLIError(error)
            }
            print(Self.json(result, label: label, publishedBytes: AdaptivePlan(test: selected).publishedBytes))
        } catch let error as CLIError {
            throw error.exit()
        }
    }

    /// `@` and nine characters of `[0-9a-z]`, like the published clients' ids.
    static func randomUserID() -> String {
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyz")
        return "@" + String((0..<9).map { _ in alphabet.randomElement() ?? "0" })
    }

    static func json(_ result: TestResult, label: String, publishedBytes: Int) -> String {
        func number(_ value: Double) -> JSONValue {
            value.isFinite ? .number(value, text: JSONText.compactNumber(value)) : .null
        }
        func samples(_ series: ThroughputSeries) -> JSONValue {
            .array(series.droppingLastSample().mbps.map(number))
        }
        let summary = result.summary
        return JSONValue.object(
            [
                ("label", .string(label)),
                ("test", .string(result.test)),
                ("userID", .string(result.userID)),
                ("historyCount", .number(Double(result.historyCount), text: String(result.historyCount))),
                ("verdict", .string(summary.verdict.rawValue)),
                ("direction", summary.direction.map { .string($0.rawValue) } ?? .null),
                ("area", number(summary.areaTest)),
                ("ksPValue", number(summary.ksPValue)),
                ("ksStatistic", number(summary.ksStatistic)),
                ("originalMeanMbps", number(summary.originalMeanMbps)),
                ("controlMeanMbps", number(summary.controlMeanMbps)),
                ("areaThreshold", number(summary.thresholds.area)),
                ("ksPValueThreshold", number(summary.thresholds.ksPValue)),
                ("durationSeconds", number(result.durationSeconds)),
                ("bytes", .number(Double(result.bytesReceived), text: String(result.bytesReceived))),
                ("original", samples(result.originalSamples)),
                ("control", samples(result.controlSamples)),
            ] + ResultOutput.sensitiveMembers(result.sensitiveSummary) + [
                ("roundOriginalMeansMbps", .array(result.sensitiveSummary.originalMeansMbps.map(number))),
                ("roundControlMeansMbps", .array(result.sensitiveSummary.controlMeansMbps.map(number))),
                (
                    "reachedDeadline",
                    .bool(result.original?.reachedDeadline == true || result.control?.reachedDeadline == true)
                ),
                ("timeLimitNote", result.timeLimitNote.map(JSONValue.string) ?? .null),
                // What the published test of this app moves (original and control once): the adaptive verdict's
                // cost is compared with it.
                ("publishedBytes", .number(Double(publishedBytes), text: String(publishedBytes))),
            ]
        ).serialized()
    }
}
