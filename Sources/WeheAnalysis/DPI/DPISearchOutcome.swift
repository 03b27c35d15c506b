/// How a DPI search ended (analysis.md section 5.3).
public enum DPISearchOutcome: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Matching bytes were found; one rule per packet with matching bytes (the longest run in that packet).
    case rules([DPIRule])
    /// The configured number of packets (10) was tested without finding a matching byte.
    case noDPIInFirstPackets(Int)
    /// The probe budget (200) ran out.
    case probeLimitReached(Int)
    /// Every packet of the trace was tested without finding a matching byte. The reference crashes with an index
    /// error here (defect 3 of analysis.md section 5.4); we report it as "no rule".
    case noRuleFound

    /// A short text; the two limit cases use the reference server's wording.
    public var description: String {
        switch self {
        case .rules(let rules):
            return rules.map { "\($0.packet)[\($0.region.lowerBound),\($0.region.upperBound))" }
                .joined(separator: ", ")
        case .noDPIInFirstPackets(let packets):
            return "NO DPI for first \(packets) pacs"
        case .probeLimitReached(let probes):
            return "NO DPI after \(probes) tests"
        case .noRuleFound:
            return "no rule found"
        }
    }
}
