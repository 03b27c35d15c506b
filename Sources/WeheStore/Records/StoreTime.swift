package import Foundation

extension Date {
    /// Microseconds since 1970-01-01 UTC, the resolution every store keeps.
    package var storeMicroseconds: Int64 {
        let micros = (timeIntervalSince1970 * 1_000_000).rounded()
        guard micros.isFinite else { return micros < 0 ? Int64.min : Int64.max }
        if micros >= 9.2e18 { return Int64.max }
        if micros <= -9.2e18 { return Int64.min }
        return Int64(micros)
    }

    /// The instant `microseconds` after 1970-01-01 UTC.
    package init(storeMicroseconds microseconds: Int64) {
        self.init(timeIntervalSince1970: Double(microseconds) / 1_000_000)
    }

    /// This instant rounded to the store's resolution (what a store gives back).
    package var storeRounded: Date { Date(storeMicroseconds: storeMicroseconds) }

    /// The UTC day number (days since 1970-01-01) of this instant.
    package var storeDay: Int {
        Int((timeIntervalSince1970 / 86_400).rounded(.down))
    }
}
