package import Foundation
import Logging
package import WeheWire

/// The admitted sessions, by admission key, user and client address (protocol.md 5.3 and 6.2 step 3).
///
/// Admission and release go through this actor; replay listeners ask it which session a new connection or
/// datagram belongs to. It holds no I/O: closing a replaced side channel goes through the session's notifier.
package actor SessionRegistry {
    /// What admission decided.
    package enum Decision: Sendable {
        /// Admitted: the session is registered.
        case granted(Session)
        /// Refused with a wire code.
        case denied(PermissionReply.DenialReason)
    }

    private let policy: ReplayServerConfiguration.AdmissionPolicy
    private let maximumSessions: Int
    private let maximumSessionsPerNetwork: Int
    private let maximumSessionsPerSite: Int
    private let trustedProxies: [LocalizationPair.Prefix]
    private let holdTime: Duration
    private var nextID: UInt64 = 1
    private var byKey: [String: Session] = [:]
    private var byUser: [String: Session] = [:]
    private var byPeer: [String: [Session]] = [:]
    private var all: [UInt64: Session] = [:]
    /// Sessions per client network (/24, /64) and the network of each session.
    private var byNetwork: [String: Int] = [:]
    private var networkOf: [UInt64: String] = [:]
    /// Sessions per IPv6 /48 and the /48 of each IPv6 session.
    private var bySite: [String: Int] = [:]
    private var siteOf: [UInt64: String] = [:]

    /// Creates a registry.
    /// - Parameters:
    ///   - policy: the admission rule.
    ///   - maximumSessions: sessions admitted at once; more are refused as low resources.
    ///   - maximumSessionsPerNetwork: sessions admitted at once from one client network (/24, /64); more are
    ///     refused as low resources.
    ///   - maximumSessionsPerSite: sessions admitted at once from one IPv6 /48; more are refused as low resources.
    ///   - trustedProxies: networks whose connections may declare the client's real address.
    ///   - holdTime: how long a holder keeps its address against other users (the published server: 5 minutes).
    package init(
        policy: ReplayServerConfiguration.AdmissionPolicy, maximumSessions: Int,
        maximumSessionsPerNetwork: Int = .max, maximumSessionsPerSite: Int = .max,
        trustedProxies: [LocalizationPair.Prefix] = [], holdTime: Duration
    ) {
        self.policy = policy
        self.maximumSessions = maximumSessions
        self.maximumSessionsPerNetwork = maximumSessionsPerNetwork
        self.maximumSessionsPerSite = maximumSessionsPerSite
        self.trustedProxies = trustedProxies
        self.holdTime = holdTime
    }

    /// Number of admitted sessions.
    package var count: Int { all.count }

    /// The client's address for admission: the declared `realIP` when the connection comes from a trusted proxy
    /// and the declared text is a real other address; otherwise the socket peer (anyone could declare anything).
    package nonisolated static func clientAddress(
        declaration: IDDeclaration, peerAddress: String, trustedProxies: [LocalizationPair.Prefix]
    ) -> String {
        guard trustedProxies.contains(where: { $0.contains(peerAddress) }) else { return peerAddress }
        let real = AddressText.normalized(declaration.realIP)
        if real != peerAddress, real != "127.0.0.1", AddressText.isIPAddress(real) { return real }
        return peerAddress
    }

    /// The admission key of a declaration from `clientAddress` (protocol.md 5.3 step 4).
    package nonisolated static func admissionKey(
        policy: ReplayServerConfiguration.AdmissionPolicy,
        declaration: IDDeclaration,
        clientAddress: String
    ) -> String {
        switch policy {
        case .perUser: "user:" + declaration.userID
        case .perAddress: "ip:" + clientAddress
        }
    }

    /// Runs the admission checks in the published order and registers the session when granted.
    /// - Parameters:
    ///   - declaration: the client's ID declaration.
    ///   - peerAddress: the side channel's peer address, normalised.
    ///   - replay: the requested replay, `nil` when unknown.
    ///   - resourcesAvailable: the result of the memory and disk check.
    ///   - notifier: the side channel's writer.
    ///   - now: wall-clock time of admission.
    package func admit(
        declaration: IDDeclaration,
        peerAddress: String,
        replay: LoadedReplay?,
        resourcesAvailable: Bool,
        notifier: SideChannelNotifier,
        now: Date
    ) -> Decision {
        // 1. An earlier side channel of the same user is ended, but only once this declaration is admitted and
        //    only when it comes from the same address: a declaration from elsewhere, or a refused one, never ends
        //    another's running test. Until then the earlier session does not count against this one.
        let earlier = byUser[declaration.userID].flatMap { $0.peerAddress == peerAddress ? $0 : nil }
        // 2. Unknown replay.
        guard let replay else { return .denied(.unknownReplay) }
        // 3. Resources: the server's sessions and those of the client's network.
        let client = Self.clientAddress(
            declaration: declaration, peerAddress: peerAddress, trustedProxies: trustedProxies)
        let network = AddressText.network(client)
        let replaced = earlier == nil ? 0 : 1
        let inNetwork = byNetwork[network, default: 0] - (earlier.map { networkOf[$0.id] == network ? 1 : 0 } ?? 0)
        let site = AddressText.site(client)
        let inSite = site.map { site in
            bySite[site, default: 0] - (earlier.map { siteOf[$0.id] == site ? 1 : 0 } ?? 0)
        }
        guard resourcesAvailable, all.count - replaced < maximumSessions, inNetwork < maximumSessionsPerNetwork,
            (inSite ?? 0) < maximumSessionsPerSite
        else {
            return .denied(.lowResources)
        }
        // 4. One test per key.
        let key = Self.admissionKey(policy: policy, declaration: declaration, clientAddress: client)
        if let holder = byKey[key], holder.id != earlier?.id {
            if holder.admittedInstant.duration(to: .now) < holdTime {
                return .denied(.addressBusy)
            }
            holder.terminate(reason: "address slot expired after \(holdTime)")
            remove(holder)
        }
        if let earlier {
            earlier.terminate(reason: "replaced by a newer side channel of the same user")
            remove(earlier)
        }
        let session = Session(
            id: nextID,
            declaration: declaration,
            peerAddress: peerAddress,
            admissionKey: key,
            replay: replay,
            admittedAt: now,
            notifier: notifier
        )
        nextID += 1
        byKey[key] = session
        byUser[declaration.userID] = session
        byPeer[peerAddress, default: []].append(session)
        all[session.id] = session
        byNetwork[network, default: 0] += 1
        networkOf[session.id] = network
        if let site {
            bySite[site, default: 0] += 1
            siteOf[session.id] = site
        }
        return .granted(session)
    }

    /// Removes a session (its side channel ended). Safe to call twice.
    package func remove(_ session: Session) {
        session.markEnded()
        guard all.removeValue(forKey: session.id) != nil else { return }
        if let network = networkOf.removeValue(forKey: session.id) {
            let left = byNetwork[network, default: 1] - 1
            byNetwork[network] = left > 0 ? left : nil
        }
        if let site = siteOf.removeValue(forKey: session.id) {
            let left = bySite[site, default: 1] - 1
            bySite[site] = left > 0 ? left : nil
        }
        if byKey[session.admissionKey]?.id == session.id { byKey[session.admissionKey] = nil }
        if byUser[session.declaration.userID]?.id == session.id { byUser[session.declaration.userID] = nil }
        byPeer[session.peerAddress]?.removeAll { $0.id == session.id }
        if byPeer[session.peerAddress]?.isEmpty == true { byPeer[session.peerAddress] = nil }
    }

    /// The session a new TCP replay connection from `peerAddress` belongs to: the oldest session of that address
    /// still waiting for its replay connection. The connection is claimed.
    package func claimTCP(peerAddress: String) -> Session? {
        byPeer[peerAddress]?.first { $0.claimTCP() }
    }

    /// The session a UDP datagram from a new source belongs to, with the index of the flow it starts: the first
    /// session of that address, in admission order, that `accepts` (the listener's test of the datagram, e.g. its
    /// content) and that awaits another flow.
    package func claimUDP(
        peerAddress: String, source: String, accepts: @Sendable (Session) -> Bool = { _ in true }
    ) -> (Session, Int)? {
        for session in byPeer[peerAddress] ?? [] where accepts(session) {
            if let index = session.claimUDPFlow(source: source) { return (session, index) }
        }
        return nil
    }

    /// Whether any session is registered for an address (to tell "unknown client" from "already claimed").
    package func hasSession(peerAddress: String) -> Bool { byPeer[peerAddress] != nil }

    /// Ends every session with a reason (shutdown after the grace period).
    package func terminateAll(reason: String) {
        for session in all.values { session.terminate(reason: reason) }
    }
}
