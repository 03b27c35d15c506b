package import WeheCore

/// The words and style of a verdict: a badge (symbol + text, so colour is never the only signal) and the
/// one-sentence explanation of a test's statistics.
package struct VerdictText: Sendable, Hashable {
    /// Badge text (`Throttled`).
    package var label: String
    /// CSS style suffix (`diff`, `none`, `inconclusive`, `blocked`, `pending`).
    package var style: String
    /// A symbol shown before the text (`▼`, `▲`, `✓`, `?`, `⊘`, `…`).
    package var symbol: String

    /// The badge of a verdict (`nil`: not analysed).
    package init(verdict: Verdict?, direction: DifferentiationDirection?, strings: Strings) {
        switch verdict {
        case .differentiation:
            switch direction {
            case .prioritized:
                self.init(label: strings["verdict_prioritized"], style: "diff", symbol: "▲")
            case .throttled:
                self.init(label: strings["verdict_throttled"], style: "diff", symbol: "▼")
            case nil:
                self.init(label: strings["verdict_differentiation"], style: "diff", symbol: "▼")
            }
        case .noDifferentiation:
            self.init(label: strings["verdict_no_differentiation"], style: "none", symbol: "✓")
        case .inconclusive:
            self.init(label: strings["verdict_inconclusive"], style: "inconclusive", symbol: "?")
        case .blocked:
            self.init(label: strings["verdict_blocked"], style: "blocked", symbol: "⊘")
        case nil:
            self.init(label: strings["not_analysed"], style: "pending", symbol: "…")
        }
    }

    /// The badge of an analysis: as `init(verdict:direction:strings:)`, and an inconclusive test whose data could
    /// not support a verdict says "Inconclusive (too few measurements)".
    package init(summary: AnalysisSummary?, strings: Strings) {
        self.init(verdict: summary?.verdict, direction: summary?.direction, strings: strings)
        if summary?.insufficientDataReason != nil { label = strings["verdict_insufficient"] }
    }

    private init(label: String, style: String, symbol: String) {
        self.label = label
        self.style = style
        self.symbol = symbol
    }

    /// The page heading of a test: what was found, in a few words ("Netflix looks throttled on Orange").
    /// An inconclusive test whose data could not support a verdict says so ("Too few measurements…").
    package static func headline(of summary: AnalysisSummary?, app: String, provider: String, strings: Strings)
        -> String
    {
        let values = ["app": app, "provider": provider]
        guard let summary else { return strings.format("headline_missing", values) }
        switch summary.verdict {
        case .differentiation:
            let prioritized =
                summary.direction == .prioritized
                || (summary.direction == nil && summary.originalMeanMbps > summary.controlMeanMbps)
            return strings.format(prioritized ? "headline_prioritized" : "headline_throttled", values)
        case .noDifferentiation:
            return strings.format("headline_none", values)
        case .inconclusive:
            return strings.format(
                summary.insufficientDataReason == nil ? "headline_inconclusive" : "headline_insufficient", values)
        case .blocked:
            return strings.format("headline_blocked", values)
        }
    }

    /// The caption under the two average-speed bars: what they show, then what this test's verdict read in them
    /// (differentiation, none, inconclusive, blocked), so that the caption never contradicts the badge above.
    package static func barsCaption(of summary: AnalysisSummary?, strings: Strings) -> String {
        let reading: String
        switch summary?.verdict {
        case .differentiation?: reading = "test_bars_caption_diff"
        case .noDifferentiation?: reading = "test_bars_caption_none"
        case .blocked?: reading = "test_bars_caption_blocked"
        case .inconclusive?, nil: reading = "test_bars_caption_inconclusive"
        }
        return strings["test_bars_caption"] + " " + strings[reading]
    }

    /// The sentence that explains a test's verdict from its statistics.
    package static func explanation(
        of summary: AnalysisSummary?, app: String, strings: Strings, formatter: Formatter
    ) -> String {
        guard let summary else { return strings["explain_missing"] }
        let original = formatter.number(summary.originalMeanMbps)
        let control = formatter.number(summary.controlMeanMbps)
        let values = [
            "app": app, "original": original, "control": control,
            "difference": formatter.percent(abs(summary.areaTest)),
            "area": formatter.percent(summary.thresholds.area),
            "p": formatter.pValue(summary.ksPValue),
            "pthreshold": formatter.pValue(summary.thresholds.ksPValue),
            "ratio": formatter.number(summary.ks2RatioTest),
            "rthreshold": formatter.number(summary.thresholds.ks2Ratio ?? 0),
        ]
        switch summary.verdict {
        case .differentiation:
            let prioritized =
                summary.direction == .prioritized
                || (summary.direction == nil && summary.originalMeanMbps > summary.controlMeanMbps)
            return strings.format(prioritized ? "explain_prioritized" : "explain_throttled", values)
        case .noDifferentiation:
            return strings.format("explain_none", values)
        case .inconclusive:
            if let reason = summary.insufficientDataReason {
                return strings.format("explain_insufficient", values.merging(["reason": reason]) { $1 })
            }
            let ratioFailed =
                summary.ksPValue < summary.thresholds.ksPValue
                && summary.thresholds.ks2Ratio.map { summary.ks2RatioTest < $0 } ?? false
            return strings.format(ratioFailed ? "explain_inconclusive_ratio" : "explain_inconclusive", values)
        case .blocked:
            return strings.format("explain_blocked", values)
        }
    }
}
