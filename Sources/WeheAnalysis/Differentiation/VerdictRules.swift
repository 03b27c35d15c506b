public import WeheCore

/// The client-side decision that turns `area_test`, the KS p-value and (for iOS) the jackknife ratio into a verdict
/// (analysis.md section 2.4). All thresholds are configuration; the defaults are those of the current clients.
///
/// A verdict is `differentiation` when `|area_test|` reaches the area threshold *and* the KS p-value is below its
/// threshold (and, for the iOS rule, the jackknife ratio reaches its threshold); `inconclusive` when only the area
/// criterion holds; `no-differentiation` otherwise. With default thresholds the area threshold drops from 0.5 to 0.3
/// for fast connections; the two rule sets disagree on exactly when (see `VerdictRuleSet`).
///
/// NaN inputs never satisfy a criterion, so they lead to `no-differentiation`; `DifferentiationAnalyzer` never
/// produces them.
public struct VerdictRules: Sendable, Hashable, Codable {
    /// Which client's rule to follow.
    public var ruleSet: VerdictRuleSet
    /// An area threshold chosen by the user (fraction, e.g. 0.4), or `nil` for the default.
    ///
    /// Android rule: any custom threshold (area or p) disables the reduced threshold for fast connections.
    /// iOS rule: the reduced threshold applies whenever the effective area threshold equals `defaultAreaThreshold`,
    /// even when the user typed that value.
    public var customAreaThreshold: Double?
    /// A KS p-value threshold chosen by the user, or `nil` for the default.
    public var customKSPValueThreshold: Double?
    /// The default area threshold (0.5).
    public var defaultAreaThreshold: Double
    /// The area threshold used for fast connections with default thresholds (0.3).
    public var highThroughputAreaThreshold: Double
    /// The throughput, Mbit/s, above which a connection counts as fast (10).
    public var highThroughputMbps: Double
    /// The default KS p-value threshold (0.01).
    public var defaultKSPValueThreshold: Double
    /// The jackknife ratio threshold of the iOS rule (0.95); unused by the Android rule.
    public var ratioThreshold: Double

    /// Creates rules; every threshold defaults to the current clients' value.
    public init(
        ruleSet: VerdictRuleSet = .android,
        customAreaThreshold: Double? = nil,
        customKSPValueThreshold: Double? = nil,
        defaultAreaThreshold: Double = 0.5,
        highThroughputAreaThreshold: Double = 0.3,
        highThroughputMbps: Double = 10,
        defaultKSPValueThreshold: Double = 0.01,
        ratioThreshold: Double = 0.95
    ) {
        self.ruleSet = ruleSet
        self.customAreaThreshold = customAreaThreshold
        self.customKSPValueThreshold = customKSPValueThreshold
        self.defaultAreaThreshold = defaultAreaThreshold
        self.highThroughputAreaThreshold = highThroughputAreaThreshold
        self.highThroughputMbps = highThroughputMbps
        self.defaultKSPValueThreshold = defaultKSPValueThreshold
        self.ratioThreshold = ratioThreshold
    }

    /// The Android / command-line rule with default thresholds.
    public static let android = VerdictRules(ruleSet: .android)
    /// The iOS rule with default thresholds.
    public static let ios = VerdictRules(ruleSet: .ios)

    /// Checks that every threshold is a finite number in its meaningful range.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` naming the offending threshold.
    public func validated() throws(WeheAnalysisError) -> VerdictRules {
        let fractions: [(String, Double?)] = [
            ("area threshold", customAreaThreshold), ("KS p-value threshold", customKSPValueThreshold),
            ("default area threshold", defaultAreaThreshold),
            ("high-throughput area threshold", highThroughputAreaThreshold),
            ("default KS p-value threshold", defaultKSPValueThreshold), ("ratio threshold", ratioThreshold),
        ]
        for (name, value) in fractions {
            guard let value else { continue }
            guard value.isFinite, value >= 0, value <= 1 else {
                throw WeheAnalysisError(.invalidConfiguration, "\(name) must lie in [0, 1], got \(value)")
            }
        }
        guard highThroughputMbps.isFinite, highThroughputMbps >= 0 else {
            throw WeheAnalysisError(
                .invalidConfiguration,
                "high-throughput limit must be a non-negative number of Mbit/s, got \(highThroughputMbps)"
            )
        }
        return self
    }

    /// The thresholds that apply to a test with the given mean throughputs.
    public func appliedThresholds(originalMeanMbps: Double, controlMeanMbps: Double) -> AppliedThresholds {
        let ksThreshold = customKSPValueThreshold ?? defaultKSPValueThreshold
        var area = customAreaThreshold ?? defaultAreaThreshold
        switch ruleSet {
        case .android:
            let usesDefaults = customAreaThreshold == nil && customKSPValueThreshold == nil
            if usesDefaults && (originalMeanMbps > highThroughputMbps || controlMeanMbps > highThroughputMbps) {
                area = highThroughputAreaThreshold
            }
            return AppliedThresholds(area: area, ksPValue: ksThreshold, ks2Ratio: nil, ruleSet: ruleSet.rawValue)
        case .ios:
            if area == defaultAreaThreshold && max(originalMeanMbps, controlMeanMbps) >= highThroughputMbps {
                area = highThroughputAreaThreshold
            }
            return AppliedThresholds(
                area: area, ksPValue: ksThreshold, ks2Ratio: ratioThreshold, ruleSet: ruleSet.rawValue)
        }
    }

    /// Decides the verdict for one test's numbers.
    /// - Parameters:
    ///   - areaTest: signed `area_test`; positive when the control was faster.
    ///   - ksPValue: `ks2pVal`.
    ///   - ks2Ratio: `ks2_ratio_test` (only the iOS rule reads it).
    ///   - originalMeanMbps: `xput_avg_original`.
    ///   - controlMeanMbps: `xput_avg_test`.
    public func decide(
        areaTest: Double,
        ksPValue: Double,
        ks2Ratio: Double,
        originalMeanMbps: Double,
        controlMeanMbps: Double
    ) -> VerdictDecision {
        let thresholds = appliedThresholds(originalMeanMbps: originalMeanMbps, controlMeanMbps: controlMeanMbps)
        let aboveArea = abs(areaTest) >= thresholds.area
        let belowP = ksPValue < thresholds.ksPValue
        let trusted = thresholds.ks2Ratio.map { ks2Ratio >= $0 } ?? true
        let verdict: Verdict
        if aboveArea && belowP && trusted {
            verdict = .differentiation
        } else if aboveArea {
            verdict = .inconclusive
        } else {
            verdict = .noDifferentiation
        }
        let direction: DifferentiationDirection? =
            verdict == .differentiation ? (originalMeanMbps > controlMeanMbps ? .prioritized : .throttled) : nil
        return VerdictDecision(verdict: verdict, direction: direction, thresholds: thresholds)
    }
}
