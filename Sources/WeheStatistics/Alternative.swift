/// The alternative hypothesis of a test, named as in SciPy.
///
/// For Mann-Whitney U, `.greater` means the first sample is stochastically greater than the second; for Spearman it
/// means a positive correlation.
public enum Alternative: Sendable, Hashable, CaseIterable {
    /// Either direction.
    case twoSided
    /// The first sample tends to be smaller (negative correlation for Spearman).
    case less
    /// The first sample tends to be larger (positive correlation for Spearman).
    case greater
}
