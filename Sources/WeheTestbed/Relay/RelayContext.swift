internal import NIOCore

/// What every relay task shares: the configuration, the clock, the aggregate buckets, the loss source and the
/// counters.
struct RelayContext: Sendable {
    let configuration: ThrottlingProxyConfiguration
    let clock: ElapsedClock
    let group: any EventLoopGroup
    let counters: StatisticsCounters
    private let downloadBucket: SharedBucket?
    private let uploadBucket: SharedBucket?
    private let random: SeededRandom

    init(configuration: ThrottlingProxyConfiguration, group: any EventLoopGroup, counters: StatisticsCounters) {
        self.configuration = configuration
        self.group = group
        self.counters = counters
        clock = ElapsedClock(configuration.clock)
        random = SeededRandom(seed: configuration.randomSeed)
        func bucket(_ direction: ThrottlingProxyConfiguration.Directions) -> SharedBucket? {
            guard let shaping = configuration.shaping, shaping.scope == .aggregate,
                shaping.directions.contains(direction)
            else { return nil }
            return SharedBucket(rateBitsPerSecond: shaping.rateBitsPerSecond, burstBytes: shaping.burstBytes)
        }
        downloadBucket = bucket(.download)
        uploadBucket = bucket(.upload)
    }

    /// The classification state and the shaper of a new flow on `route`.
    func newFlow(on route: ThrottlingProxyConfiguration.Route) -> (FlowInspector, FlowShaper) {
        let inspector = FlowInspector(
            classifier: configuration.classifier,
            route: route,
            inspectedBytes: configuration.inspectedBytes
        )
        let shaper = FlowShaper(
            shaping: configuration.shaping,
            loss: route.isClassified ? configuration.loss : nil,
            aggregate: (downloadBucket, uploadBucket),
            random: random
        )
        counters.update { stats in
            switch route.transport {
            case .tcp: stats.tcpFlows += 1
            case .udp: stats.udpFlows += 1
            }
            if inspector.isMatched { stats.matchedFlows += 1 }
        }
        return (inspector, shaper)
    }

    /// Inspects a chunk and counts a flow that it made matched.
    func inspect(_ buffer: ByteBuffer, direction: FlowDirection, inspector: FlowInspector) -> Bool {
        let verdict = buffer.withUnsafeReadableBytes { inspector.inspect($0, direction: direction) }
        if verdict.newlyMatched { counters.update { $0.matchedFlows += 1 } }
        return verdict.matched
    }
}
