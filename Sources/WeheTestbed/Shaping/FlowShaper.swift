/// Decides, for one flow, how the next bytes of a direction are relayed: how many at once, when, and whether
/// they are lost.
package struct FlowShaper: Sendable {
    /// What to do with the next piece.
    package struct Plan: Sendable, Hashable {
        /// How many bytes the piece has (TCP may split a chunk; a datagram is never split).
        package var length: Int
        /// When the piece may be written (elapsed clock time); `nil` when it is dropped (UDP only).
        package var departure: Duration?
        /// Whether the piece went through a token bucket.
        package var shaped: Bool
        /// Whether the piece was hit by random loss (dropped for UDP, stalled for TCP).
        package var lost: Bool
    }

    private let shaping: ThrottlingProxyConfiguration.Shaping?
    private let loss: ThrottlingProxyConfiguration.Loss?
    private let downloadBucket: SharedBucket?
    private let uploadBucket: SharedBucket?
    private let random: SeededRandom

    /// A shaper for a new flow. With aggregate scope the flow uses the proxy's shared buckets; with per-flow
    /// scope it gets its own.
    package init(
        shaping: ThrottlingProxyConfiguration.Shaping?,
        loss: ThrottlingProxyConfiguration.Loss?,
        aggregate: (download: SharedBucket?, upload: SharedBucket?),
        random: SeededRandom
    ) {
        self.shaping = shaping
        self.loss = loss
        self.random = random
        if let shaping, shaping.scope == .perFlow {
            func bucket(_ direction: ThrottlingProxyConfiguration.Directions) -> SharedBucket? {
                shaping.directions.contains(direction)
                    ? SharedBucket(rateBitsPerSecond: shaping.rateBitsPerSecond, burstBytes: shaping.burstBytes)
                    : nil
            }
            downloadBucket = bucket(.download)
            uploadBucket = bucket(.upload)
        } else {
            downloadBucket = aggregate.download
            uploadBucket = aggregate.upload
        }
    }

    /// The plan for the next piece of `available` bytes in `direction` at `now`, for a flow that is `matched`
    /// and has relayed `relayed` bytes in that direction so far. `isDatagram` keeps the piece whole and lets the
    /// queue limit drop it.
    package func plan(
        available: Int,
        direction: FlowDirection,
        matched: Bool,
        relayed: Int,
        now: Duration,
        isDatagram: Bool
    ) -> Plan {
        let segment = shaping?.segmentBytes ?? 1448
        let lossApplies = lossApplies(direction: direction, matched: matched)
        var plan = Plan(length: available, departure: now, shaped: false, lost: false)
        // With loss, TCP pieces are segment-sized so that each draws its own loss decision.
        if lossApplies && !isDatagram { plan.length = min(available, segment) }
        if lossApplies && isDatagram && lossStrikes() {
            plan.departure = nil
            plan.lost = true
            return plan
        }
        let bucket = direction == .download ? downloadBucket : uploadBucket
        if matched, let shaping, let bucket {
            if relayed < shaping.afterBytes {
                // Delayed throttling: bytes before the threshold pass unshaped; a TCP chunk is cut at it.
                if !isDatagram { plan.length = min(plan.length, shaping.afterBytes - relayed) }
            } else {
                if !isDatagram { plan.length = min(plan.length, segment) }
                plan.shaped = true
                plan.departure = bucket.reserve(
                    plan.length,
                    at: now,
                    backlogLimit: isDatagram ? shaping.queueLimitBytes : nil
                )
            }
        }
        if lossApplies && !isDatagram, let loss, let departure = plan.departure, lossStrikes() {
            plan.lost = true
            plan.departure = departure + loss.tcpStall
        }
        return plan
    }

    private func lossApplies(direction: FlowDirection, matched: Bool) -> Bool {
        guard direction == .download, let loss, loss.probability > 0 else { return false }
        return matched || !loss.matchedFlowsOnly
    }

    private func lossStrikes() -> Bool {
        guard let loss else { return false }
        return random.nextUnit() < loss.probability
    }
}
