/// The legacy server's `processResult` (analysis.md section 2.4; dead code in the reference, no handler calls it).
///
/// `code` is 0 (no differentiation), 1 (inconclusive) or 2 (differentiation, with
/// `rate = (m_R − m_O) / min(m_O, m_R)`), negated together with the rate when the control was slower than the
/// original. Because the comparison uses the *signed* area, a prioritized app can only come out as −1 or 0.
public struct LegacyDecision: Sendable, Hashable, Codable {
    /// −2…2 as described above.
    public var code: Int
    /// The relative throughput difference for differentiation, else 0.
    public var rate: Double

    /// Creates a decision.
    public init(code: Int, rate: Double) {
        self.code = code
        self.rate = rate
    }

    /// Applies the legacy rule.
    public static func processResult(
        areaTest: Double,
        ksPValue: Double,
        originalMeanMbps: Double,
        controlMeanMbps: Double,
        areaThreshold: Double = 0.1,
        pThreshold: Double = 0.05
    ) -> LegacyDecision {
        var code = 1
        var rate = 0.0
        if areaTest < areaThreshold && ksPValue > pThreshold {
            code = 0
        } else if areaTest > areaThreshold && ksPValue < pThreshold {
            code = 2
            let smaller = min(originalMeanMbps, controlMeanMbps)
            rate = smaller > 0 ? (controlMeanMbps - originalMeanMbps) / smaller : 0
        }
        if controlMeanMbps < originalMeanMbps {
            code = -code
            rate = -rate
        }
        return LegacyDecision(code: code, rate: rate == 0 ? 0 : rate)
    }
}
