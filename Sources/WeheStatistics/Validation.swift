/// Input checks shared by every public routine of the target.
enum Validation {
    /// Throws unless `values` is non-empty and every value is finite.
    /// - Parameter name: how the message refers to the list ("first sample", "values", …).
    static func requireFiniteNonEmpty(_ values: [Double], _ name: String) throws(StatisticsError) {
        guard !values.isEmpty else {
            throw StatisticsError(.emptySample, "\(name) is empty")
        }
        try requireFinite(values, name)
    }

    /// Throws `nonFiniteValue` naming the first NaN or infinite entry of `values`.
    static func requireFinite(_ values: [Double], _ name: String) throws(StatisticsError) {
        for (index, value) in values.enumerated() where !value.isFinite {
            throw StatisticsError(.nonFiniteValue, "\(name)[\(index)] is not finite (\(value))")
        }
    }
}
