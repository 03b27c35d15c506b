/// A linear axis from `lower` to a "nice" upper bound with round tick values (0, 0.5, 1, … or 0, 20, 40, …).
package struct AxisScale: Sendable, Hashable {
    /// Lower end of the axis.
    package let lower: Double
    /// Upper end of the axis (a round number at or above the data's maximum).
    package let upper: Double
    /// The tick values, from `lower` to `upper`.
    package let ticks: [Double]
    /// Decimals needed to print the ticks.
    package let decimals: Int

    /// A scale from `lower` covering `maximum`, with about `count` ticks. A non-finite or empty range becomes
    /// [lower, lower + 1]. `integers` keeps every tick a whole number (counts: never "0.5 tests").
    package init(lower: Double = 0, maximum: Double, count: Int = 5, integers: Bool = false) {
        let span = maximum - lower
        if integers, !(span.isFinite && span >= 1) {
            self.lower = lower
            self.upper = lower + 1
            self.ticks = [lower, lower + 1]
            self.decimals = 0
            return
        }
        guard span.isFinite, span > 0 else {
            self.lower = lower
            self.upper = lower + 1
            self.ticks = [lower, lower + 0.5, lower + 1]
            self.decimals = 1
            return
        }
        let rough = span / Double(max(1, count))
        let magnitude = pow10(floorLog10(rough))
        let residual = rough / magnitude
        var step: Double
        if residual <= 1 {
            step = magnitude
        } else if residual <= 2 {
            step = 2 * magnitude
        } else if residual <= 2.5 {
            step = 2.5 * magnitude
        } else if residual <= 5 {
            step = 5 * magnitude
        } else {
            step = 10 * magnitude
        }
        if integers { step = max(1, step.rounded(.up)) }
        let steps = (span / step).rounded(.up)
        self.lower = lower
        self.upper = lower + steps * step
        var ticks: [Double] = []
        var index = 0.0
        while index <= steps + 0.5 {
            ticks.append(lower + index * step)
            index += 1
        }
        self.ticks = ticks
        let digits = -floorLog10(step) + (residual > 2 && residual <= 2.5 ? 1 : 0)
        self.decimals = integers ? 0 : max(0, min(6, digits))
    }

    /// Where `value` falls on a pixel range: `from` at `lower`, `to` at `upper`.
    package func position(_ value: Double, from: Double, to: Double) -> Double {
        guard value.isFinite else { return from }
        let clamped = min(max(value, lower), upper)
        return from + (clamped - lower) / (upper - lower) * (to - from)
    }
}

private func floorLog10(_ value: Double) -> Int {
    guard value > 0, value.isFinite else { return 0 }
    var exponent = 0
    var scaled = value
    while scaled >= 10 {
        scaled /= 10
        exponent += 1
    }
    while scaled < 1 {
        scaled *= 10
        exponent -= 1
    }
    return exponent
}

private func pow10(_ exponent: Int) -> Double {
    var result = 1.0
    if exponent >= 0 {
        for _ in 0..<exponent { result *= 10 }
    } else {
        for _ in 0..<(-exponent) { result /= 10 }
    }
    return result
}
