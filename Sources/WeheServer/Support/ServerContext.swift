import Foundation
import Logging
import NIOCore
import Synchronization
import WeheStore

/// What every connection handler shares: configuration, replays, the session registry, the store, limits.
/// Built once the listeners are bound (the port map names the bound ports).
final class ServerContext: Sendable {
    let configuration: ReplayServerConfiguration
    let catalogue: ReplayCatalogue
    let portMapBody: String
    let registry: SessionRegistry
    let limiter: ConnectionLimiter
    var metrics: ServerMetrics { ServerMetrics(registry: configuration.metricsRegistry) }
    let resources: ResourceMonitor
    let analysis: AnalysisRunner
    let events: EventRecorder
    /// Fetches measurements from the other server of a WeHeY pair.
    let peerMeasurements: PeerMeasurements
    /// UDP streams waiting for the client's report of the datagrams that arrived (their loss timelines).
    let udpSendLogs = UDPSendLogs()
    /// Merge-point probe delays of recent replays (`--merge-point-probe`).
    let mergePointProbes = MergePointProbeLog()
    /// `localize` requests per client address, network and user id.
    let localizeAdmission: LocalizeAdmission
    /// Session-log rows for refused or failed declarations, per client network.
    let eventLimiter: RateLimiter
    /// Replays whose samples each client network may store (`--stored-replays-per-network`).
    let storedReplayQuota: StoredReplayQuota
    /// DPI requests per user and per client network.
    let dpiLimits: DPIRequestLimits
    /// The servers `localize` may ask for measurements: the configured pairs' and fleet peers' hosts.
    let fleetPeers: Set<String>
    let logger: Logger
    /// Each test's packet capture on an interface (`--capture-interface`); `nil` when off.
    let captures: InterfaceCaptures?
    /// 64 KiB of zeros: the filler sent when a trace has no recorded response content (slices share storage).
    let filler: ByteBuffer
    /// Test seams inside the protocol exchange (empty in a real server).
    let seams: ProtocolSeams
    /// Recorded tests uploaded by clients (`--accept-client-traces`); `nil` when off.
    let clientTraces: ClientTraceStore?
    private let draining = Atomic<Bool>(false)
    private let resultsRequested = Mutex<ContinuousClock.Instant?>(nil)

    init(
        configuration: ReplayServerConfiguration, catalogue: ReplayCatalogue, portMapBody: String,
        limiter: ConnectionLimiter, seams: ProtocolSeams = ProtocolSeams(), captures: InterfaceCaptures? = nil,
        clientTraces: ClientTraceStore? = nil
    ) {
        self.seams = seams
        self.clientTraces = clientTraces
        self.captures = captures
        self.configuration = configuration
        self.catalogue = catalogue
        self.portMapBody = portMapBody
        self.registry = SessionRegistry(
            policy: configuration.admission,
            maximumSessions: configuration.limits.maximumSessions,
            maximumSessionsPerNetwork: configuration.limits.maximumSessionsPerNetwork,
            maximumSessionsPerSite: configuration.limits.maximumSessionsPerSite,
            trustedProxies: configuration.trustedProxies,
            holdTime: configuration.limits.sessionMaximumDuration
        )
        self.limiter = limiter
        var resources = ResourceMonitor(
            memoryUseLimit: configuration.limits.memoryUseLimit,
            diskUseLimit: configuration.limits.diskUseLimit,
            dataDirectory: configuration.dataDirectory
        )
        resources.spoolDirectories = [configuration.pcapDirectory, configuration.archive?.directory].compactMap { $0 }
        self.resources = resources
        self.logger = configuration.logger
        self.events = EventRecorder(
            store: configuration.store,
            serverName: configuration.serverName,
            now: configuration.now,
            logger: configuration.logger
        )
        self.analysis = AnalysisRunner(
            store: configuration.store,
            configuration: configuration.analysis,
            now: configuration.now,
            logger: configuration.logger,
            archive: configuration.archive,
            scheduler: AnalysisScheduler(limits: .init(configuration.limits))
        )
        self.filler = ByteBuffer(repeating: 0, count: 64 * 1024)
        self.localizeAdmission = LocalizeAdmission(
            perAddressPerMinute: configuration.localizeRequestsPerMinute,
            perNetworkPerMinute: configuration.localizeRequestsPerNetworkPerMinute,
            perUserPerMinute: configuration.localizeRequestsPerMinute)
        self.storedReplayQuota = StoredReplayQuota(
            limit: configuration.limits.storedReplaysPerNetwork, window: configuration.limits.storedReplayWindow)
        self.dpiLimits = DPIRequestLimits(
            perUserPerMinute: configuration.limits.dpiRequestsPerUserPerMinute,
            perNetworkPerMinute: configuration.limits.dpiRequestsPerNetworkPerMinute)
        self.eventLimiter = RateLimiter(
            perMinute: Double(configuration.sessionEventsPerMinute), burst: configuration.sessionEventsPerMinute)
        let pairHosts = configuration.localizationServerPairs.flatMap { [$0.first, $0.second] }
        self.fleetPeers = Set((pairHosts + configuration.fleetPeers).map(FleetAuthenticator.hostName))
        self.peerMeasurements = PeerMeasurements(
            caCertificatePath: configuration.peerCACertificatePath,
            port: configuration.peerAnalyzerPort,
            timeout: configuration.peerTimeout,
            authenticator: configuration.fleetAuthenticator,
            requestsPerMinute: configuration.peerRequestsPerMinute,
            now: configuration.now
        )
    }

    /// Whether the server is shutting down (no new sessions).
    var isDraining: Bool { draining.load(ordering: .relaxed) }

    /// Starts draining.
    func beginDraining() { draining.store(true, ordering: .relaxed) }

    /// When the analyzer last got a `/Results` request (`nil` before the first): the drain waits for a quiet moment.
    var lastResultsRequest: ContinuousClock.Instant? { resultsRequested.withLock { $0 } }

    /// The analyzer got a `/Results` request.
    func noteResultsRequest() { resultsRequested.withLock { $0 = ContinuousClock.now } }
}
