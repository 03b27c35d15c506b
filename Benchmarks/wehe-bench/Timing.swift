#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Monotonic time in seconds.
func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Runs `body` `repetitions` times after one warm-up and returns (median, min) seconds.
func measure(repetitions: Int, _ body: () -> Void) -> (median: Double, min: Double) {
    body()
    var times: [Double] = []
    for _ in 0..<repetitions {
        let start = monotonicSeconds()
        body()
        times.append(monotonicSeconds() - start)
    }
    times.sort()
    return (times[times.count / 2], times[0])
}

/// Peak resident set size of this process, in MiB.
func peakResidentMiB() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

/// Fixed-point formatting.
func fixed(_ value: Double, _ decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    var text = "\(rounded)"
    if let dot = text.firstIndex(of: "."), text.distance(from: dot, to: text.endIndex) - 1 < decimals {
        text += String(repeating: "0", count: decimals - (text.distance(from: dot, to: text.endIndex) - 1))
    }
    return text
}
