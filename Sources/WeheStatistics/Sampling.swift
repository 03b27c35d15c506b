/// Random subsets, as used by the jackknife ratio (analysis.md §2.1 step 5) and the WeHeY Monte Carlo step.
public enum Sampling {
    /// `count` distinct elements of `values` (distinct by position), in random order.
    ///
    /// A partial Fisher-Yates shuffle whose index draws use Lemire's unbiased multiply-and-reject method on
    /// `generator.next()`, so a given generator state always yields the same subset. `count` is clamped to
    /// 0…`values.count`.
    public static func withoutReplacement<T>(
        _ values: [T], count: Int, using generator: inout some RandomNumberGenerator
    ) -> [T] {
        let take = min(max(count, 0), values.count)
        var pool = values
        for position in 0..<take {
            let chosen = position + uniformIndex(below: pool.count - position, using: &generator)
            pool.swapAt(position, chosen)
        }
        return Array(pool[0..<take])
    }

    /// A uniformly distributed integer in 0..<bound (bound > 0).
    static func uniformIndex(below bound: Int, using generator: inout some RandomNumberGenerator) -> Int {
        let range = UInt64(bound)
        var product = generator.next().multipliedFullWidth(by: range)
        if product.low < range {
            let threshold = (0 &- range) % range
            while product.low < threshold {
                product = generator.next().multipliedFullWidth(by: range)
            }
        }
        return Int(product.high)
    }
}
