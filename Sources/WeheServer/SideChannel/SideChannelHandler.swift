import Foundation
import Logging
import NIOCore
import WeheCore
import WeheStore
import WeheWire

/// Serves one side-channel connection (protocol.md 5.2): ID declaration, change spec, admission, iperf and mobile
/// stats messages, port map, sender count, then the client's `DONE`, throughput upload, `OK`, `Result;No`, `OK`.
struct SideChannelHandler {
    let context: ServerContext
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    let secure: Bool
    /// Called once the declaration (and change spec) is complete, before admission: from then on the connection's
    /// slot of the budget is never given to a newcomer. Before, an idle, trickling or still-handshaking connection
    /// may be evicted when the side-channel share is full. (Marked before admission, not after: a client evicted
    /// between its grant and the mark lost its test under a flood; refused declarations are closed at once and
    /// admitted ones are bounded by the session caps and progress deadlines.)
    var declared: @Sendable () -> Void = {}

    private var limits: ReplayServerConfiguration.Limits { context.configuration.limits }

    /// Runs the exchange; never throws (errors are logged and recorded, the connection closed).
    func run() async {
        let peer = AddressText.normalized(channel.channel.remoteAddress?.ipAddress ?? "unknown")
        var logger = context.logger
        logger[metadataKey: "wehe.peer"] = "\(AddressText.redacted(peer))"
        logger[metadataKey: "wehe.channel"] = "\(secure ? "side-tls" : "side")"
        let nioChannel = channel.channel
        context.seams.sideChannelHandlerStarted()
        // Handshake, declaration and change spec must all arrive within the first-message timeout.
        let firstTimedOut = ManagedAtomicFlag()
        let firstDeadline = nioChannel.eventLoop.scheduleTask(in: .init(limits.firstMessageTimeout)) {
            firstTimedOut.set()
            nioChannel.close(promise: nil)
        }
        var session: Session?
        var declaration: IDDeclaration?
        // How a connection that never declared anything ended: see `PreDeclarationEnd`.
        var silent = false
        do {
            try await channel.executeThenClose { inbound, outbound in
                let notifier = SideChannelNotifier(
                    write: { try await outbound.write($0) },
                    close: { nioChannel.close(promise: nil) },
                    minimumRTT: {
                        guard let reading = try? await TCPInfoReading.read(nioChannel).get() else { return nil }
                        let microseconds = reading.minimumRTTMicroseconds ?? reading.smoothedRTTMicroseconds
                        return microseconds.flatMap { $0 > 0 ? Double($0) / 1e6 : nil }
                    }
                )
                var reader = FrameReader(
                    inbound, limit: limits.preAdmissionMessageBytes, hardLimit: limits.maximumMessageBytes)
                let parsed: IDDeclaration
                do {
                    let first: [UInt8]
                    do {
                        first = try await reader.next()
                    } catch {
                        silent = reader.receivedByteCount == 0
                        throw error
                    }
                    parsed = try IDDeclaration(parsing: first)
                } catch let error as WeheWireError {
                    throw ReplayServerError(
                        .protocolViolation, "bad ID declaration: \(error.message)", underlying: error)
                }
                declaration = parsed
                logger[metadataKey: "wehe.test"] = "\(parsed.replayKey)"
                logger[metadataKey: "wehe.replay.name"] = "\(parsed.replayName)"
                let replay = try await changedReplay(
                    named: parsed.replayName, changeSpec: try await reader.next(), notifier: notifier, logger: logger,
                    uploader: (parsed.userID, peer))
                firstDeadline.cancel()
                declared()
                session = try await admit(parsed, replay: replay, peer: peer, notifier: notifier, logger: logger)
                guard let session else { return }
                let watchdog = nioChannel.eventLoop.scheduleTask(in: .init(limits.sessionMaximumDuration)) {
                    session.terminate(reason: "session exceeded \(limits.sessionMaximumDuration)")
                }
                defer { watchdog.cancel() }
                reader.limit = limits.maximumMessageBytes
                try await exchange(session: session, reader: &reader, notifier: notifier, logger: logger)
            }
        } catch {
            firstDeadline.cancel()
            if declaration == nil, let end = PreDeclarationEnd(error, silent: silent, timedOut: firstTimedOut.isSet) {
                switch end {
                case .unused: context.metrics.connectionUnused("side")
                case .timedOut: context.metrics.connectionFailed("side", reason: end.code)
                }
                logger.log(
                    level: end.level, "side channel closed",
                    metadata: ["wehe.reason": "\(end.reason)", "wehe.code": "\(end.code)"])
            } else {
                await failed(error, session: session, declaration: declaration, peer: peer, logger: logger)
            }
        }
        if let session {
            context.captures?.finish(id: session.id)
            await context.registry.remove(session)
            context.metrics.activeSessions(await context.registry.count)
        }
    }

    /// The declared replay with the change spec applied (protocol.md 5.2 #2, `ServerPacketChange`). A spec that does
    /// not parse or does not fit the replay's server packets is refused with `0;5;<why>` and the connection closed.
    /// A name the catalogue does not have may be a recorded test `uploader` brought (`ClientTraceStore`).
    private func changedReplay(
        named name: String, changeSpec body: [UInt8], notifier: SideChannelNotifier, logger: Logger,
        uploader: (userID: String, address: String)
    ) async throws -> LoadedReplay? {
        let replay =
            context.catalogue.replay(named: name)
            ?? context.clientTraces?.take(name: name, userID: uploader.userID, address: uploader.address)
        do {
            if let slice = try Self.slice(body), let replay {
                let sliced = try replay.sliced(slice)
                logger.info("slice served", metadata: ["wehe.slice": "\(slice)"])
                return sliced
            }
            guard let change = try ServerPacketChange.parse(body), let replay else { return replay }
            let changed = try replay.applying(change)
            logger.info(
                "change spec applied",
                metadata: ["wehe.change": "S_\(change.packetNumber) \(change.action.name)"])
            return changed
        } catch {
            let reason = error.message.replacingOccurrences(of: "\n", with: " ")
            try? await notifier.send(
                PermissionReply.denied(.changeSpecRefused, sampleCount: nil).body + ";" + reason)
            context.metrics.admission("denied-\(PermissionReply.DenialReason.changeSpecRefused.rawValue)")
            throw ReplayServerError(.protocolViolation, "change spec refused: \(reason)", underlying: error)
        }
    }

    /// The UDP slice a change spec asks for (`UDPSlice.changeSpec`), with a malformed one as a refusal.
    private static func slice(_ body: [UInt8]) throws(ReplayServerError) -> UDPSlice? {
        do {
            return try UDPSlice(changeSpec: body)
        } catch {
            throw ReplayServerError(.protocolViolation, error.message)
        }
    }

    private func admit(
        _ declaration: IDDeclaration,
        replay: LoadedReplay?,
        peer: String,
        notifier: SideChannelNotifier,
        logger: Logger
    ) async throws -> Session? {
        // A network whose stored-replay quota is used up is refused before its replay, not after it.
        let network = storedReplayNetwork(declaration, peer: peer)
        if replay != nil, context.storedReplayQuota.remaining(network) < 1 {
            let reason = quotaReason(network)
            try? await notifier.send(PermissionReply.denied(.lowResources, sampleCount: nil).body + ";" + reason)
            context.metrics.admission("denied-quota")
            logger.notice("replay refused", metadata: ["wehe.reason": "\(reason)"])
            await recordUnadmitted(
                .admissionDenied,
                declaration: WeheWireDeclaration(
                    userID: declaration.userID, historyCount: declaration.historyCount, testID: declaration.testID,
                    replayName: declaration.replayName),
                peer: peer, detail: "0;3: \(reason)")
            return nil
        }
        let shortage = context.isDraining ? "server shutting down" : context.resources.shortage()
        let decision = await context.registry.admit(
            declaration: declaration,
            peerAddress: peer,
            replay: replay,
            resourcesAvailable: shortage == nil,
            notifier: notifier,
            now: context.configuration.now()
        )
        let sampleCount = context.configuration.sampleCount
        let wireDeclaration = WeheWireDeclaration(
            userID: declaration.userID, historyCount: declaration.historyCount, testID: declaration.testID,
            replayName: declaration.replayName)
        switch decision {
        case .granted(let session):
            try await notifier.send(
                PermissionReply.granted(clientIP: peer, sampleCount: sampleCount, servesSlice: replay?.slice != nil)
                    .body)
            context.metrics.admission("granted")
            context.metrics.activeSessions(await context.registry.count)
            context.captures?.start(
                session: session, client: peer, day: ArchiveWriter.dayPath(context.configuration.now()))
            logger.info("replay admitted", metadata: ["wehe.session": "\(session.id)"])
            await context.events.record(
                .admissionGranted, declaration: wireDeclaration, clientAddress: peer,
                detail: "granted on \(secure ? "TLS" : "plain") side channel")
            return session
        case .denied(let reason):
            let reply = PermissionReply.denied(reason, sampleCount: reason == .addressBusy ? sampleCount : nil)
            try? await notifier.send(reply.body)
            context.metrics.admission("denied-\(reason.rawValue)")
            var detail = "0;\(reason.rawValue): \(reason.explanation)"
            if reason == .lowResources, let shortage { detail += " (\(shortage))" }
            logger.notice("replay refused", metadata: ["wehe.reply": "\(reply.body)", "wehe.reason": "\(detail)"])
            await recordUnadmitted(.admissionDenied, declaration: wireDeclaration, peer: peer, detail: detail)
            return nil
        }
    }

    /// The network whose stored-replay quota a declaration from `peer` draws on (IPv4 /24, IPv6 /48 of the client's
    /// address as admission sees it).
    private func storedReplayNetwork(_ declaration: IDDeclaration, peer: String) -> String {
        StoredReplayQuota.network(
            of: SessionRegistry.clientAddress(
                declaration: declaration, peerAddress: peer, trustedProxies: context.configuration.trustedProxies))
    }

    /// Why a network's replays are not stored now.
    private func quotaReason(_ network: String) -> String {
        let quota = context.storedReplayQuota
        let hours = Int(quota.window.components.seconds / 3600)
        let minutes = max(1, (quota.secondsUntilNext(network) + 59) / 60)
        return "your network stored its quota of \(quota.limit) replays per \(hours) h on this server; "
            + "the next can be stored in about \(minutes) min"
    }

    /// Sends a refusal after `DONE` (in place of the `OK`: the client logs it) and throws it.
    private func refuseSamples(_ reason: String, notifier: SideChannelNotifier) async throws -> Never {
        try? await notifier.send("Refused;" + reason)
        throw ReplayServerError(.protocolViolation, reason + ": samples refused")
    }

    /// A session-log row for a declaration that was not admitted: anyone can send those, so only a few per client
    /// network and minute are written; the rest are logged.
    func recordUnadmitted(
        _ kind: SessionEvent.Kind, declaration: WeheWireDeclaration, peer: String, detail: String
    ) async {
        guard context.eventLimiter.allow(AddressText.network(peer)) else {
            context.metrics.connectionFailed("side", reason: "event-not-stored")
            context.logger.debug(
                "session log entry not stored: too many from this network",
                metadata: ["wehe.peer": "\(AddressText.redacted(peer))", "wehe.event": "\(kind)"])
            return
        }
        await context.events.record(kind, declaration: declaration, clientAddress: peer, detail: detail)
    }

    /// Closes the session unless it reaches its next protocol step within `timeout`; cancel once it did.
    private func progressDeadline(_ session: Session, _ timeout: Duration, waitingFor step: String) -> Scheduled<Void> {
        channel.channel.eventLoop.scheduleTask(in: .init(timeout)) {
            session.terminate(reason: "no progress: \(step) did not come within \(timeout)")
        }
    }

    private func exchange(
        session: Session,
        reader: inout FrameReader,
        notifier: SideChannelNotifier,
        logger: Logger
    ) async throws {
        // Every step has a deadline: a session that stops advancing is closed long before the watchdog, so idle
        // sessions kept alive by a byte now and then cannot hold admission slots.
        var deadline = progressDeadline(
            session, limits.progressTimeout, waitingFor: "the iperf and mobile-stats messages")
        defer { deadline.cancel() }
        // #4: iperf.
        let iperf = try await reader.nextText()
        if iperf == SideChannelMessage.willSendIperf {
            _ = try await reader.next()
        } else if iperf != SideChannelMessage.noIperf {
            throw ReplayServerError(.protocolViolation, "expected NoIperf, got '\(iperf.prefix(40))'")
        }
        // #5: mobile stats.
        var stats: MobileStats?
        var statsJSON: JSONValue?
        let mobile = try await reader.nextText()
        if mobile == SideChannelMessage.willSendMobileStats {
            let body = try await reader.next()
            stats = try? MobileStats(parsing: body)
            if stats != nil, context.configuration.archive != nil { statsJSON = try? JSONValue.parse(body) }
            if stats == nil { logger.notice("mobile stats unreadable, ignored") }
        } else if mobile != SideChannelMessage.noMobileStats {
            throw ReplayServerError(.protocolViolation, "expected NoMobileStats, got '\(mobile.prefix(40))'")
        }
        // #6, #7: port map and sender count. Replay traffic from this address is recognised from before they are
        // sent: the client connects as soon as it reads them, and on a loaded server that connection may be handled
        // before this task resumes after the send (it was then refused as coming from an address without a session).
        deadline.cancel()
        // The replay window (grant to DONE) on the server's clock: it contains the whole replay (SampleBound).
        let windowStart = ContinuousClock.now
        session.markReady()
        // A client-brought test's flows are not in the catalogue's port map: it gets its own.
        let uploaded = context.catalogue.replay(named: session.replay.name) == nil
        let ownMap = uploaded ? context.clientTraces?.portMapBody(for: session.replay) : nil
        try await notifier.send(ownMap ?? context.portMapBody)
        try await notifier.send(String(session.replay.senderCount))
        await context.seams.senderCountSent(session)
        let progressTimeout = limits.progressTimeout
        let replayStart = channel.channel.eventLoop.scheduleTask(in: .init(progressTimeout)) {
            if !session.replayStarted {
                session.terminate(reason: "no progress: no replay connection or datagram within \(progressTimeout)")
            }
        }
        defer { replayStart.cancel() }
        deadline = progressDeadline(session, limits.replayPhaseTimeout, waitingFor: "DONE after the replay")
        // #8: DONE;<seconds> (or the Python client's ipFlip / timeout).
        let done = try await reader.next()
        let window = ContinuousClock.now - windowStart
        deadline.cancel()
        guard let clientDuration = SideChannelMessage.parseClientDone(done) else {
            let text = String(decoding: done.prefix(40), as: UTF8.self)
            if text == "ipFlip" || text == "timeout" {
                throw ReplayServerError(.protocolViolation, "client reported '\(text)' instead of DONE")
            }
            throw ReplayServerError(.protocolViolation, "expected DONE;<seconds>, got '\(text)'")
        }
        let requirement = ReplayProgress.requirement(for: session.replay)
        let progress = session.progress
        guard session.replayStarted else {
            // The upload is read and dropped first: closing on unread bytes resets the connection, and the client
            // could lose the refusal.
            deadline = progressDeadline(session, progressTimeout, waitingFor: "the throughput samples")
            _ = try? await reader.next()
            try await refuseSamples(progress.shortfall(of: requirement), notifier: notifier)
        }
        // #9: throughput samples (a legacy NoJitter message may come first).
        deadline = progressDeadline(session, progressTimeout, waitingFor: "the throughput samples")
        var body = try await reader.next()
        if String(decoding: body.prefix(64), as: UTF8.self).contains("NoJitter") {
            body = try await reader.next()
        }
        let samples: ThroughputSeries
        do {
            samples = try ThroughputUpload.parse(body).droppingLastSample()
        } catch {
            throw ReplayServerError(.protocolViolation, "bad throughput upload: \(error.message)", underlying: error)
        }
        // An upload larger than the grant asked for is stored only for a replay that ran here: half of its bytes, or
        // traffic for half of its duration (ReplayProgress). Up to the grant's allowance (SampleBound's floor) a
        // replay that started is enough: a replay the client cut short (its time limit, a throttle) produces fewer
        // samples than the grant asked for, and a fake test of one packet then stores no more than a real test,
        // counted against its network's quota below.
        if samples.count > SampleBound.floor(sampleCount: context.configuration.sampleCount),
            !progress.meets(requirement)
        {
            let late = await session.progress(
                meeting: requirement, within: limits.lateReplayTrafficGrace,
                quiet: limits.lateReplayTrafficQuiet(for: session.replay.transport))
            if !late.meets(requirement) {
                try await refuseSamples(late.shortfall(of: requirement), notifier: notifier)
            }
        }
        // No more samples than the replay could have produced: the analysis reads every one.
        do {
            try SampleBound.check(
                samples, sampleCount: context.configuration.sampleCount,
                windowSeconds: Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18)
        } catch {
            try await refuseSamples(error.message, notifier: notifier)
        }
        deadline.cancel()
        // The network's stored-replay quota is drawn now, for samples about to be stored.
        let network = storedReplayNetwork(session.declaration, peer: session.peerAddress)
        guard context.storedReplayQuota.take(network) else {
            try await refuseSamples(quotaReason(network), notifier: notifier)
        }
        // Persist before the OK.
        try await persist(session: session, samples: samples, clientDuration: clientDuration, stats: stats)
        if let archive = context.configuration.archive {
            let doneText = String(decoding: done.prefix(64), as: UTF8.self).dropFirst(5)
            await archiveReplay(
                archive, session: session, samples: samples, clientDurationText: String(doneText), stats: statsJSON)
        }
        try? await notifier.send(SideChannelMessage.ok)
        logger.info(
            "replay completed",
            metadata: ["wehe.samples": "\(samples.count)", "wehe.client.duration": "\(clientDuration)"]
        )
        // #11, #12: Result;No → OK. The Java client usually closes right after the first OK.
        deadline = progressDeadline(session, progressTimeout, waitingFor: "Result;No")
        do {
            let result = try await reader.nextText()
            if result == SideChannelMessage.resultYes {
                try? await notifier.send(bytes: [])
            } else if result != SideChannelMessage.resultNo {
                logger.notice(
                    "unexpected message after the samples", metadata: ["wehe.message": "\(result.prefix(40))"])
            }
            try? await notifier.send(SideChannelMessage.ok)
        } catch let error as ReplayServerError where error.code == .connectionClosed {
            // The client closed after the first OK, as the Java client does.
        }
        // Analyse eagerly once the compared replay is in; the answer is then ready for `singleResult`. The
        // computation runs on the analysis threads (bounded per network and server-wide); waiting for it here is
        // bounded too: past the wait, or when the queue refuses it, `singleResult` gets it later.
        if session.declaration.testID != 0 {
            do {
                _ = try await context.analysis.result(
                    for: session.key.test, comparedTestID: session.declaration.testID,
                    waitingAtMost: limits.progressTimeout)
            } catch {
                logger.warning("eager analysis failed", metadata: ["wehe.error": "\(error)"])
            }
        } else if let test = try? await context.configuration.store.test(session.key.test), test.replay(1) != nil {
            _ = try? await context.analysis.result(
                for: session.key.test, comparedTestID: 1, waitingAtMost: limits.progressTimeout)
        }
    }
}
