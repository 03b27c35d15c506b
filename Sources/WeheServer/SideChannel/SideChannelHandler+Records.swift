import Foundation
import Logging
import WeheCore
import WeheStore
import WeheWire

/// What a session leaves behind: its samples and metadata in the store, its copy in the archive, and the record of a
/// connection that failed.
extension SideChannelHandler {
    /// Hands the replay to the archive (after the database copy is stored; the archive writes on its own queue).
    func archiveReplay(
        _ archive: ArchiveWriter, session: Session, samples: ThroughputSeries, clientDurationText: String,
        stats: JSONValue?
    ) async {
        let declaration = session.declaration
        let cookie = await SocketCookie.read(channel.channel)
        archive.archive(
            replay: ArchiveWriter.Replay(
                userID: declaration.userID, historyCount: declaration.historyCount, testID: declaration.testID,
                replayName: declaration.replayName, extraString: declaration.extraString,
                clientAddress: session.peerAddress, clientVersion: declaration.clientVersion,
                incomingTime: session.admittedAt,
                serverDurationSeconds: context.configuration.now().timeIntervalSince(session.admittedAt),
                clientDurationText: clientDurationText, mobileStats: stats,
                measurementUUID: SocketCookie.measurementUUID(prefix: archive.uuidPrefix, cookie: cookie),
                samples: samples))
    }

    /// Stores the replay's samples with the test's metadata (the provider from the mobile stats, else the client's
    /// AS) and records the completed replay.
    func persist(
        session: Session,
        samples: ThroughputSeries,
        clientDuration: Double,
        stats: MobileStats?
    ) async throws {
        let declaration = session.declaration
        let store = context.configuration.store
        let now = context.configuration.now()
        var originalName = declaration.replayName
        if declaration.testID != 0 {
            if let existing = try? await store.test(session.key.test) {
                originalName = existing.metadata.replayName
            } else {
                originalName = originalName.replacingOccurrences(of: "Random", with: "")
            }
        }
        var provider: String?
        if let carrier = stats?.carrierName {
            provider = carrier + (stats?.networkType?.uppercased() == "WIFI" ? " (WiFi)" : " (cellular)")
        }
        // The AS of the client's own address: the side channel's peer, or the declared realIP only behind a trusted
        // proxy (the admission rule), so no client learns the AS of an address it chose.
        let network = context.configuration.asTable?.lookup(
            SessionRegistry.clientAddress(
                declaration: declaration, peerAddress: session.peerAddress,
                trustedProxies: context.configuration.trustedProxies))
        if provider == nil, let network {
            provider = NetworkProvider(asNumber: network.number, asName: network.name).displayName
        }
        let metadata = TestMetadata(
            replayName: originalName,
            startedAt: session.admittedAt,
            provider: provider,
            networkType: stats?.networkType,
            clientVersion: declaration.clientVersion,
            clientAddress: session.peerAddress,
            serverName: context.configuration.serverName,
            extraString: declaration.extraString,
            asNumber: network.map { Int($0.number) },
            asName: network?.name
        )
        let record = ReplayRecord(
            key: session.key,
            replayName: declaration.replayName,
            samples: samples,
            receivedAt: now,
            clientDurationSeconds: clientDuration
        )
        do {
            try await store.save(replay: record, metadata: metadata)
        } catch {
            throw ReplayServerError(.storage, "samples of \(session.key) not stored", underlying: error)
        }
        context.metrics.replayCompleted()
        await context.events.record(
            .replayCompleted,
            declaration: WeheWireDeclaration(
                userID: declaration.userID, historyCount: declaration.historyCount, testID: declaration.testID,
                replayName: declaration.replayName),
            clientAddress: session.peerAddress,
            detail: "\(samples.count) samples stored, client duration \(clientDuration) s"
        )
    }

    /// Logs why a connection ended badly, counts it, and records it for an identified session (before admission,
    /// only within the per-network allowance).
    func failed(
        _ error: any Error,
        session: Session?,
        declaration: IDDeclaration?,
        peer: String,
        logger: Logger
    ) async {
        let reason: String
        let code: String
        if let terminated = session?.terminationReason {
            reason = terminated
            code = "terminated"
        } else if let error = error as? ReplayServerError {
            reason = error.message
            code = error.code.description
        } else if error is CancellationError {
            reason = "server shutting down"
            code = "shutdown"
        } else if declaration == nil {
            reason = "connection failed before the ID declaration: \(error)"
            code = "handshake"
        } else {
            reason = "connection error: \(error)"
            code = "io"
        }
        context.metrics.connectionFailed("side", reason: code)
        logger.notice("side channel closed", metadata: ["wehe.reason": "\(reason)", "wehe.code": "\(code)"])
        // Only identified sessions go to the session log; anonymous garbage is logged above and dropped. A failure
        // before admission (anyone can send a declaration) is written only within the per-network allowance.
        if let declaration {
            let wire = WeheWireDeclaration(
                userID: declaration.userID, historyCount: declaration.historyCount, testID: declaration.testID,
                replayName: declaration.replayName)
            if session != nil {
                await context.events.record(
                    .error, declaration: wire, clientAddress: peer, detail: "\(code): \(reason)")
            } else {
                await recordUnadmitted(.error, declaration: wire, peer: peer, detail: "\(code): \(reason)")
            }
        }
    }
}
