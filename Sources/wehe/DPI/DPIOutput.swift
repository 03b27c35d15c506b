import WeheAnalysis
import WeheClient
import WeheCore
import WeheWire

/// How a DPI search is shown: progress lines, the report, and the `--json` object.
enum DPIOutput {
    static func expectedProbeBytes(_ result: TestResult, _ test: ReplayClient.Test) -> Int {
        if let original = result.original { return original.bytesSent + original.bytesReceived }
        return test.original.bytesUp + test.original.bytesDown
    }

    /// `probe 3: C_1[10,189) (used so far 4.1 MB)` and `probe 3: T (differentiation), 1.9 MB, 2.1 s`.
    static func progressLine(_ event: DPIEvent) -> String? {
        switch event {
        case .probeStarted(let number, let probe, let testID, let bytesSoFar):
            return "probe \(number): \(probe) (testID \(testID); used so far \(Terminal.bytes(bytesSoFar)))"
        case .probeProgress:
            return nil
        case .probeFinished(let probe, let bytesSoFar):
            return
                "probe \(probe.number): \(probe.classificationBroke ? "T" : "F") (\(probe.summary.verdict.rawValue)), "
                + "\(Terminal.bytes(probe.bytes)) in \(Terminal.format(probe.seconds, decimals: 1)) s"
                + (probe.stoppedEarly ? ", stopped early" : "") + "; total \(Terminal.bytes(bytesSoFar))"
        }
    }

    /// The report: what was found, with hex and text per packet and offset, and what it cost.
    static func lines(_ search: DPISearchResult) -> [String] {
        var lines: [String] = []
        let cost =
            "\(search.probes.count) probes, \(Terminal.bytes(search.bytes)), "
            + "\(Terminal.format(search.durationSeconds, decimals: 0)) s"
        switch search.conclusion {
        case .rules(let findings):
            lines.append("DPI search (\(search.method.rawValue)) for \(search.test): the classifier matches (\(cost)):")
            for finding in findings {
                lines.append(
                    "  \(finding.packet) bytes [\(finding.region.lowerBound),\(finding.region.upperBound)) "
                        + "(offset \(finding.region.lowerBound), \(finding.region.count) bytes)")
                if let hex = finding.hex, let text = finding.text {
                    lines.append("    hex:  \(hex)")
                    lines.append("    text: \(text)")
                } else {
                    lines.append("    (a server packet: the client has no recorded content for it)")
                }
                let runs = finding.runs
                if runs.count > 1 {
                    lines.append(
                        "    every matching byte, as runs: "
                            + runs.map { "[\($0.lowerBound),\($0.upperBound))" }.joined(separator: " "))
                }
            }
        default:
            lines.append(
                "DPI search (\(search.method.rawValue)) for \(search.test): \(DPIReport.conclusionLine(search)) (\(cost))"
            )
        }
        return lines
    }

    /// One JSON object for the search (`DPIReport.json`).
    static func json(_ search: DPISearchResult) -> String { DPIReport.json(search) }
}
