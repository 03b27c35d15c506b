extension ThrottlingProxyConfiguration {
    /// Parses a bit rate: a decimal number with an optional unit `bit`, `kbit`, `mbit`, `gbit` (also `k`, `m`,
    /// `g`, and `bps`/`kbps`/`mbps`/`gbps`), decimal multiples: `1.5mbit` = 1 500 000 bit/s. A bare number is
    /// in bits per second. The result is at least 1.
    public static func parseBitRate(_ text: String) throws(WeheTestbedError) -> Int {
        let lowered = text.lowercased().filter { $0 != " " && $0 != "_" }
        let number = lowered.prefix { $0.isNumber || $0 == "." }
        let unit = lowered.dropFirst(number.count)
        let multipliers: [String: Double] = [
            "": 1, "bit": 1, "bps": 1, "b": 1,
            "k": 1e3, "kbit": 1e3, "kbps": 1e3, "kb": 1e3,
            "m": 1e6, "mbit": 1e6, "mbps": 1e6, "mb": 1e6,
            "g": 1e9, "gbit": 1e9, "gbps": 1e9, "gb": 1e9,
        ]
        guard let value = Double(number), value > 0, value.isFinite, let multiplier = multipliers[String(unit)] else {
            throw WeheTestbedError(
                .invalidArgument, "'\(text)' is not a rate (examples: 1.5mbit, 800kbit, 2000000)", field: "rate")
        }
        let bits = (value * multiplier).rounded()
        guard bits >= 1, bits < 1e15 else {
            throw WeheTestbedError(.invalidArgument, "'\(text)' is outside 1 bit/s … 1 Pbit/s", field: "rate")
        }
        return Int(bits)
    }

    /// A bit rate for people: `1.5 Mbit/s`, `800 kbit/s`, `12 bit/s`.
    public static func formatBitRate(_ bitsPerSecond: Int) -> String {
        func trimmed(_ value: Double) -> String {
            let rounded = (value * 1000).rounded() / 1000
            return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
        }
        let value = Double(bitsPerSecond)
        if value >= 1e9 { return trimmed(value / 1e9) + " Gbit/s" }
        if value >= 1e6 { return trimmed(value / 1e6) + " Mbit/s" }
        if value >= 1e3 { return trimmed(value / 1e3) + " kbit/s" }
        return "\(bitsPerSecond) bit/s"
    }
}
