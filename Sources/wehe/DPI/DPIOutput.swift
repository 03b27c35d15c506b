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

    /// One JSON object for the search.
    static func json(_ search: DPISearchResult) -> String {
        func int(_ value: Int) -> JSONValue { .number(Double(value), text: String(value)) }
        func number(_ value: Double) -> JSONValue {
            value.isFinite ? .number(value, text: JSONText.compactNumber(value)) : .null
        }
        var rules: [JSONValue] = []
        var message: String?
        switch search.conclusion {
        case .rules(let findings):
            rules = findings.map { finding in
                .object([
                    ("packet", .string(finding.packet.description)), ("left", int(finding.region.lowerBound)),
                    ("right", int(finding.region.upperBound)), ("hex", finding.hex.map(JSONValue.string) ?? .null),
                    ("text", finding.text.map(JSONValue.string) ?? .null),
                    ("matchingBytes", .array(finding.matchingBytes.map(int))),
                    ("runs", .array(finding.runs.map { .array([int($0.lowerBound), int($0.upperBound)]) })),
                ])
            }
        default:
            message = DPIReport.conclusionLine(search)
        }
        let probes: [JSONValue] = search.probes.map { probe in
            .object([
                ("number", int(probe.number)), ("packet", .string(probe.probe.packet.description)),
                ("left", int(probe.probe.region.lowerBound)), ("right", int(probe.probe.region.upperBound)),
                ("mask", .array(probe.mask.map { .array([int($0.lowerBound), int($0.upperBound)]) })),
                ("testID", int(probe.testID)), ("diff", .string(probe.classificationBroke ? "T" : "F")),
                ("verdict", .string(probe.summary.verdict.rawValue)),
                ("originalMeanMbps", number(probe.summary.originalMeanMbps)),
                ("probeMeanMbps", number(probe.summary.controlMeanMbps)), ("bytes", int(probe.bytes)),
                ("seconds", number(probe.seconds)), ("stoppedEarly", .bool(probe.stoppedEarly)),
            ])
        }
        return JSONValue.object([
            ("dpi", .string(search.test)), ("replayName", .string(search.replayName)),
            ("historyCount", int(search.historyCount)), ("method", .string(search.method.rawValue)),
            ("earlyStop", .bool(search.earlyStop)), ("result", .string(search.conclusion.code)),
            ("rules", .array(rules)), ("message", message.map(JSONValue.string) ?? .null),
            ("probeCount", int(search.probes.count)), ("bytes", int(search.bytes)),
            ("durationSeconds", number(search.durationSeconds)), ("probes", .array(probes)),
        ]).serialized()
    }
}
