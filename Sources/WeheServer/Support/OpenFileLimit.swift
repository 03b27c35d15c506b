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
    package func connectionBudget(listeners: Int) -> Int {
        guard let files = openFileLimit() else { return limits.maximumConnections }
        return max(1, min(limits.maximumConnections, files - Self.reservedFileDescriptors - listeners))
    }
}
