import Foundation
import Synchronization
import WeheCore
import WeheWire

/// The recorded tests clients brought (`--accept-client-traces`): each upload is checked against the policy's
/// bounds and the server's replay ports, its server side is derived here from the client trace (never taken from
/// the client), and it is held for the uploader alone (the same user id from the same address) until a replay takes
/// it or its lifetime ends.
package final class ClientTraceStore: Sendable {
    /// Why an upload was refused, with the HTTP status the analyzer answers.
    package struct Refusal: Error, Sendable, Equatable {
        /// The HTTP status: 400 malformed, 403 off, 409 known, 413 too large, 422 out of bounds, 429 quota.
        package var status: Int
        /// One line for people.
        package var reason: String
    }

    /// What a stored upload gives back.
    package struct Receipt: Sendable, Equatable {
        /// The replay name the uploader declares to run it.
        package var replayName: String
        /// Seconds the upload waits for its replay.
        package var expiresInSeconds: Int
        /// Bytes the replay moves (client payload and server responses).
        package var replayBytes: Int
    }

    private struct Key: Hashable {
        var userID: String
        var address: String
        var name: String
    }

    private struct Held {
        var replay: LoadedReplay
        var network: String
        var expires: ContinuousClock.Instant
    }

    /// The bounds.
    package let policy: ClientTracePolicy
    private let uploads: StoredReplayQuota
    private let catalogueNames: Set<String>
    private let tcpPorts: [Int: Int]
    private let udpPorts: [Int: Int]
    private let held = Mutex<[Key: Held]>([:])
    private let keepLock = Mutex<Void>(())

    /// Creates the store of a server whose catalogue is `catalogue` and whose replay listeners are `tcpPorts` and
    /// `udpPorts` (recorded port → listening port).
    package init(policy: ClientTracePolicy, catalogue: ReplayCatalogue, tcpPorts: [Int: Int], udpPorts: [Int: Int]) {
        self.policy = policy
        self.uploads = StoredReplayQuota(limit: policy.uploadsPerNetwork, window: policy.uploadWindow)
        self.catalogueNames = Set(catalogue.replays.keys)
        self.tcpPorts = tcpPorts
        self.udpPorts = udpPorts
    }

    /// Whether the server's own catalogue has a replay of this name (the "do you know this test" check).
    package func knows(_ name: String) -> Bool { catalogueNames.contains(name) }

    /// Uploads held now (all clients).
    package var count: Int { held.withLock { $0.count } }

    /// Checks and holds an uploaded client trace for `userID` at `address`.
    /// - Throws: `Refusal` with the reason; nothing is held then.
    package func upload(
        _ body: [UInt8], userID: String, address: String, now: ContinuousClock.Instant = .now
    ) throws(Refusal) -> Receipt {
        guard body.count <= policy.maximumUploadBytes else {
            throw Refusal(
                status: 413,
                reason: "the trace is \(body.count) bytes; this server takes at most "
                    + "\(policy.maximumUploadBytes)")
        }
        guard IDDeclaration.isValidUserID(userID) else {
            throw Refusal(status: 400, reason: "userID is not a valid user id")
        }
        let network = AddressText.network(address)
        // Cheap refusals first: the held bounds, then the network's upload quota (which also bounds the parsing
        // work one network can cause).
        try held.withLock { table throws(Refusal) in
            Self.purge(&table, now: now)
            try checkRoom(in: table, network: network, replacing: nil)
        }
        guard uploads.take(network, now: now) else {
            let minutes = max(1, (uploads.secondsUntilNext(network, now: now) + 59) / 60)
            let hours = max(1, Int(policy.uploadWindow.components.seconds / 3600))
            throw Refusal(
                status: 429,
                reason: "your network made its \(policy.uploadsPerNetwork) uploads per "
                    + "\(hours) h on this server; the next is possible in about \(minutes) min")
        }
        let replay = try validated(body)
        let key = Key(userID: userID, address: address, name: replay.name)
        // Checked again with the insertion, under one lock: uploads from one network that arrive together all pass
        // the first check while the others are still being parsed (the attack suite's flood of eight at a time
        // once held five where four are allowed).
        try held.withLock { table throws(Refusal) in
            Self.purge(&table, now: now)
            try checkRoom(in: table, network: network, replacing: key)
            table[key] = Held(replay: replay, network: network, expires: now.advanced(by: policy.lifetime))
        }
        keep(body, userID: userID, name: replay.name)
        return Receipt(
            replayName: replay.name, expiresInSeconds: Int(policy.lifetime.components.seconds),
            replayBytes: replay.client.bytesUp + replay.server.tcpFlows.reduce(0) { $0 + $1.responseBytes })
    }

    /// Refuses when holding one more upload from `network` would pass a held bound; an upload that replaces the one
    /// held under `replacing` (the same user, address and name) takes no more room.
    private func checkRoom(in table: [Key: Held], network: String, replacing key: Key?) throws(Refusal) {
        if let key, table[key] != nil { return }
        guard table.count < policy.heldTotal else {
            throw Refusal(
                status: 429,
                reason: "this server holds its maximum of \(policy.heldTotal) uploaded "
                    + "tests; try again in a few minutes")
        }
        guard table.values.filter({ $0.network == network }).count < policy.heldPerNetwork else {
            throw Refusal(
                status: 429,
                reason: "your network holds its maximum of \(policy.heldPerNetwork) "
                    + "uploaded tests not yet run; run them or wait until they expire")
        }
    }

    /// The upload of `name` held for `userID` at `address`, removed from the store (a replay takes it once; the
    /// session keeps it until it ends). `nil` when there is none, it expired, or it is someone else's.
    package func take(
        name: String, userID: String, address: String, now: ContinuousClock.Instant = .now
    ) -> LoadedReplay? {
        held.withLock { table in
            Self.purge(&table, now: now)
            return table.removeValue(forKey: Key(userID: userID, address: address, name: name))?.replay
        }
    }

    /// The port map for a replay of an uploaded trace: its flows' recorded addresses and ports mapped to the
    /// listening ports (the catalogue's port map does not name the uploaded trace's server addresses).
    package func portMapBody(for replay: LoadedReplay) -> String {
        ReplayCatalogue(replays: [replay]).portMap(tcpPort: { self.tcpPorts[$0] }, udpPort: { self.udpPorts[$0] }).body
    }

    /// Parses and checks an upload; derives its server side.
    private func validated(_ body: [UInt8]) throws(Refusal) -> LoadedReplay {
        let trace: ReplayTrace
        do {
            trace = try ClientTraceDecoder().decode(body)
        } catch {
            throw Refusal(status: 400, reason: "the trace is not a client trace: \(error.message)")
        }
        if let problem = trace.problems().first {
            throw Refusal(status: 400, reason: "the trace is invalid: \(problem)")
        }
        let name = trace.name
        guard ClientFileName.component(name) == name else {
            throw Refusal(
                status: 400,
                reason: "the replay name must be 1 to \(ClientFileName.maximumBytes) "
                    + "characters of A-Z, a-z, 0-9, '@', '.', '_', '-'")
        }
        guard !knows(name) else {
            throw Refusal(status: 409, reason: "this server has its own test named \(name): run it without uploading")
        }
        let flows = trace.flows
        guard flows.count <= policy.maximumFlows else {
            throw Refusal(
                status: 422,
                reason: "the trace has \(flows.count) flows; this server takes at most "
                    + "\(policy.maximumFlows)")
        }
        guard trace.packets.count <= policy.maximumPackets else {
            throw Refusal(
                status: 422,
                reason: "the trace has \(trace.packets.count) packets; this server takes at "
                    + "most \(policy.maximumPackets)")
        }
        guard trace.duration.isFinite, trace.duration <= policy.maximumDurationSeconds else {
            throw Refusal(
                status: 422,
                reason: "the trace lasts \(Int(trace.duration.rounded(.up))) s; this server "
                    + "takes at most \(Int(policy.maximumDurationSeconds)) s")
        }
        // The server side comes from the client trace, never from the client (ServerTrace(derivingFrom:)).
        let server = ServerTrace(derivingFrom: trace)
        let bytes = trace.bytesUp + server.tcpFlows.reduce(0) { $0 + $1.responseBytes }
        guard bytes <= policy.maximumReplayBytes else {
            throw Refusal(
                status: 422,
                reason: "a replay of the trace moves \(bytes) bytes; this server takes at "
                    + "most \(policy.maximumReplayBytes)")
        }
        // The replay runs on ports the server already listens on; it never binds one for a client.
        let isUDP = trace.transport == .udp
        let listening = isUDP ? udpPorts : tcpPorts
        let missing = Set(flows.map { Int($0.serverPort) }).filter { listening[$0] == nil }.sorted()
        if !missing.isEmpty {
            let offered = listening.keys.sorted().prefix(20).map(String.init).joined(separator: ", ")
            throw Refusal(
                status: 422,
                reason: "this server does not replay \(isUDP ? "UDP" : "TCP") port(s) "
                    + "\(missing.map(String.init).joined(separator: ", ")); its \(isUDP ? "UDP" : "TCP") replay ports are "
                    + (offered.isEmpty ? "none" : offered))
        }
        return LoadedReplay(name: name, client: trace, server: server)
    }

    /// Writes the upload into the operator's directory when asked to, within the disk budget.
    private func keep(_ body: [UInt8], userID: String, name: String) {
        guard let directory = policy.keepDirectory else { return }
        keepLock.withLock { _ in
            let manager = FileManager.default
            let used = ((try? manager.contentsOfDirectory(atPath: directory)) ?? []).reduce(0) { total, file in
                let size = (try? manager.attributesOfItem(atPath: directory + "/" + file))?[.size] as? Int ?? 0
                return total + size
            }
            guard used + body.count <= policy.keepDiskBudgetBytes else { return }
            let stamp = Int((Date().timeIntervalSince1970 * 1000).rounded(.down))
            let file = "\(directory)/\(ClientFileName.component(userID))-\(stamp)-\(name).pcap_client_all.json"
            _ = manager.createFile(atPath: file, contents: Data(body))
        }
    }

    private static func purge(_ table: inout [Key: Held], now: ContinuousClock.Instant) {
        table = table.filter { $0.value.expires > now }
    }
}
