#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ReplayServerConfiguration {
    /// The soft `RLIMIT_NOFILE` of this process; `nil` when it cannot be read or is unlimited.
    package static func currentOpenFileLimit() -> Int? {
        var limit = rlimit()
        #if canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// File descriptors kept out of the connection budget: listeners, UDP sockets, the store, peer requests, logs.
    package static let reservedFileDescriptors = 128

    /// The connection budget: the configured maximum, lowered so that every connection it admits has a file
    /// descriptor (the open-file limit less the reserve and the listeners).
    ///
    /// With `--pcap`, a claimed TCP replay connection holds a second descriptor, its capture file (an unclaimed one
    /// holds none: `PacketCapture` opens its file at the claim). Claimed connections are at most one per session and
    /// at most the replay share of the budget, so the budget leaves room for the smaller of the two: it is the larger
    /// of (descriptors − maximum sessions) and descriptors × 100 / (100 + replay share %), where either bound makes
    /// connections plus captures fit.
    package func connectionBudget(listeners: Int) -> Int {
        guard let files = openFileLimit() else { return limits.maximumConnections }
        let descriptors = files - Self.reservedFileDescriptors - listeners
        guard pcapDirectory != nil else { return max(1, min(limits.maximumConnections, descriptors)) }
        let replayPercent = ConnectionLimiter.Pool.replay.percent
        let withCaptures = max(descriptors - limits.maximumSessions, descriptors * 100 / (100 + replayPercent))
        return max(1, min(limits.maximumConnections, withCaptures))
    }
}
