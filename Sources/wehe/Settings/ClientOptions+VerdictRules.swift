import WeheAnalysis

extension ClientOptions {
    /// The decision rule from options over settings.
    func verdictRules(_ settings: WeheSettings) throws -> VerdictRules {
        try TestSelection.verdictRules(
            rules: rules ?? settings.ruleSet, area: areaThreshold ?? settings.areaThreshold,
            pValue: pValueThreshold ?? settings.ksPValueThreshold)
    }
}
