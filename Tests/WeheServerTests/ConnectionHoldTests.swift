import Foundation
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing
import WeheServer
import WeheStore
import WeheTestKit

/// A close that does nothing, for connections whose eviction a test does not watch.
private let noop: @Sendable () -> Void = {}

@Suite("Connection budget: connections idle between requests")
struct ConnectionLimiterHoldTests {
    /// Admits `count` connections of `pool`, one per address from `addresses`, each marked as having sent a complete
    /// request; their tickets and a record of which were closed by eviction.
    final class Closed: Sendable {
        let ids = Mutex<Set<Int>>([])
        func close(_ id: Int) -> @Sendable () -> Void { { [self] in ids.withLock { _ = $0.insert(id) } } }
        var all: Set<Int> { ids.withLock { $0 } }
    }

    @Test("a full analyzer share of connections waiting between requests makes way for a new one, oldest first")
    func idleEvicted() throws {
        let limiter = ConnectionLimiter(maximum: 1000, maximumPerAddress: 256)
        let share = limiter.share(.analyzer)
        #expect(share == 70)
        let closed = Closed()
        var tickets: [ConnectionLimiter.Ticket] = []
        for index in 0..<share {
            let ticket = try #require(
                limiter.admit(address: "10.0.\(index).1", pool: .analyzer, close: closed.close(index)))
            limiter.established(ticket)
            tickets.append(ticket)
        }
        // Every connection has a request in progress: nothing can be evicted.
        #expect(limiter.admit(address: "10.1.0.1", pool: .analyzer, close: noop) == nil)
        // Two answered theirs and wait for the next request (the later one first): the one idle longest goes first.
        limiter.idle(tickets[5])
        limiter.idle(tickets[3])
        let newcomer = try #require(limiter.admit(address: "10.1.0.1", pool: .analyzer, close: noop))
        #expect(closed.all == [5])
        limiter.established(newcomer)
        #expect(limiter.current(.analyzer) == share)
        // A connection that starts its next request is no longer evictable.
        limiter.established(tickets[3])
        #expect(limiter.admit(address: "10.1.0.2", pool: .analyzer, close: noop) == nil)
        limiter.release(newcomer)
        for ticket in tickets { limiter.release(ticket) }
        #expect(limiter.current == 0)
    }

    @Test("one address and one network are capped within the analyzer's and the dashboard's shares")
    func perAddressAndNetworkCaps() throws {
        let limiter = ConnectionLimiter(maximum: 1000, maximumPerAddress: 256)
        let caps = try #require(limiter.caps(.analyzer))
        #expect(caps.address == 8)
        #expect(caps.network == 17)
        #expect(limiter.caps(.side) == nil)
        let closed = Closed()
        var held: [ConnectionLimiter.Ticket] = []
        for index in 0..<caps.address {
            let ticket = try #require(limiter.admit(address: "10.0.0.1", pool: .analyzer, close: closed.close(index)))
            limiter.established(ticket)
            held.append(ticket)
        }
        // At its cap with every connection busy, the address gets no more, though the share has room.
        #expect(limiter.admit(address: "10.0.0.1", pool: .analyzer, close: noop) == nil)
        // The dashboard's cap is its own.
        let dashboard = try #require(limiter.admit(address: "10.0.0.1", pool: .dashboard, close: noop))
        // Once one of its connections waits between requests, the address's new connection replaces it.
        limiter.idle(held[2])
        let replacing = try #require(limiter.admit(address: "10.0.0.1", pool: .analyzer, close: noop))
        #expect(closed.all == [2])
        limiter.established(replacing)
        // The network: other addresses of 10.0.0.0/24 up to its cap, then none.
        var others: [ConnectionLimiter.Ticket] = []
        for index in 0..<(caps.network - caps.address) {
            let ticket = try #require(limiter.admit(address: "10.0.0.\(10 + index)", pool: .analyzer, close: noop))
            limiter.established(ticket)
            others.append(ticket)
        }
        #expect(limiter.admit(address: "10.0.0.200", pool: .analyzer, close: noop) == nil)
        #expect(limiter.admit(address: "10.0.1.200", pool: .analyzer, close: noop) != nil)
        for ticket in held + others + [dashboard, replacing] { limiter.release(ticket) }
    }
}

@Suite("Rate limiter: a full table")
struct RateLimiterTableTests {
    @Test("a full table forgets the keys with the oldest events and takes new callers")
    func fullTableEvictsOldest() {
        let limiter = RateLimiter(perMinute: 1, burst: 2, capacity: 16)
        let start = ContinuousClock.now
        // Every key spent a token, so no bucket is full again: the old rule refused every new key here.
        for index in 0..<16 {
            #expect(limiter.allow("key\(index)", now: start + .milliseconds(index)))
        }
        #expect(limiter.count == 16)
        #expect(limiter.allow("newcomer", now: start + .seconds(1)))
        #expect(limiter.count <= 16)
        // The oldest keys were forgotten (a full bucket again), the newest kept theirs.
        #expect(limiter.allow("key15", now: start + .seconds(1)))
        #expect(!limiter.allow("key15", now: start + .seconds(1)))
        #expect(limiter.allow("key0", now: start + .seconds(1)))
        #expect(limiter.allow("key0", now: start + .seconds(1)))
    }
}

@Suite("Memory admission: the control group's limit")
struct CgroupMemoryTests {
    /// A directory tree standing in for `/sys/fs/cgroup` and `/proc/self/cgroup`.
    struct Tree {
        let root: String
        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("cgroup-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        }
        func write(_ path: String, _ text: String) throws {
            let full = root + "/" + path
            try FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }
        var monitor: CgroupMemory { CgroupMemory(root: root + "/fs", membership: root + "/self") }
        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    @Test("cgroup v2: memory.max of the process's group, usage less the inactive file cache")
    func version2() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.write("self", "0::/system.slice/wehe-server.service\n")
        let group = "fs/system.slice/wehe-server.service/"
        try tree.write(group + "memory.max", "1073741824\n")
        try tree.write(group + "memory.current", "943718400\n")
        try tree.write(group + "memory.stat", "anon 500000000\nfile 400000000\ninactive_file 104857600\n")
        try tree.write("fs/system.slice/memory.max", "max\n")
        let use = try #require(tree.monitor.use())
        #expect(use == CgroupMemory.Use(used: 943_718_400 - 104_857_600, limit: 1_073_741_824))
        #expect(abs(use.share - 0.78125) < 1e-9)
        let monitor = ResourceMonitor(memoryUseLimit: 0.75, diskUseLimit: 1, dataDirectory: nil, cgroup: tree.monitor)
        #expect(monitor.shortage()?.contains("control group") == true)
        let roomy = ResourceMonitor(memoryUseLimit: 0.8, diskUseLimit: 1, dataDirectory: nil, cgroup: tree.monitor)
        #expect(roomy.shortage() == nil || roomy.shortage()?.contains("control group") == false)
    }

    @Test("cgroup v1 on a hybrid system: the memory controller's group, a limit set on an ancestor")
    func version1Ancestor() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.write("self", "4:memory:/outer/inner\n1:cpu:/\n0::/\n")
        try tree.write("fs/memory/outer/inner/memory.limit_in_bytes", "9223372036854771712\n")
        try tree.write("fs/memory/outer/inner/memory.usage_in_bytes", "100\n")
        try tree.write("fs/memory/outer/memory.limit_in_bytes", "2000000000\n")
        try tree.write("fs/memory/outer/memory.usage_in_bytes", "1500000000\n")
        try tree.write("fs/memory/outer/memory.stat", "inactive_file 1\ntotal_inactive_file 500000000\n")
        try tree.write("fs/unified/cgroup.procs", "")
        let use = try #require(tree.monitor.use())
        #expect(use == CgroupMemory.Use(used: 1_000_000_000, limit: 2_000_000_000))
    }

    @Test("no limit anywhere, or no control group files: the host's memory alone counts")
    func noLimit() throws {
        let tree = try Tree()
        defer { tree.remove() }
        #expect(tree.monitor.use() == nil)
        try tree.write("self", "0::/user.slice\n")
        try tree.write("fs/user.slice/memory.max", "max\n")
        try tree.write("fs/user.slice/memory.current", "5000\n")
        #expect(tree.monitor.use() == nil)
    }
}

@Suite("Keep-alive connections on loopback", .timeLimit(.minutes(5)))
struct KeepAliveHoldTests {
    /// A budget of 200: analyzer share 14, at most 2 connections per address and 3 per /24.
    static let small: @Sendable (inout ReplayServerConfiguration) -> Void = { configuration in
        configuration.limits.maximumConnections = 200
    }

    @Test("one address holds at most its cap of analyzer connections: its newest replaces its oldest idle one")
    func perAddressCapOnLoopback() async throws {
        try await ServerHarness.run(configure: Self.small) { server in
            let port = try #require(server.ports.analyzerPlain)
            let caps = try #require(server.server.connectionLimiter.caps(.analyzer))
            #expect(caps.address == 2)
            var held: [KeepAliveClient] = []
            for _ in 0...caps.address {
                let client = try await KeepAliveClient.open(port: port, from: "127.0.50.2")
                #expect(try await client.request("/healthz") == 200)
                held.append(client)
            }
            try await held[0].waitClosed()
            #expect(held.filter(\.isClosed).count == 1)
            #expect(server.server.connectionLimiter.current(.analyzer) == caps.address)
            for client in held { client.close() }
        }
    }

    @Test("the waits between requests of one connection are bounded in total, not only each one")
    func keepAliveIdleTotal() async throws {
        let quick: (inout ReplayServerConfiguration) -> Void = { $0.limits.httpIdleTimeout = .seconds(3) }
        try await ServerHarness.run(configure: quick) { server in
            let port = try #require(server.ports.analyzerPlain)
            let client = try await KeepAliveClient.open(port: port, from: "127.0.60.2")
            let start = ContinuousClock.now
            #expect(try await client.request("/healthz") == 200)
            // Pauses of 0.5 s, each far under the 3 s idle timeout (a loaded 2-core machine has stalled a sleep by
            // seconds); the connection is closed once the waits add up to the 6 s total, after about twelve answers.
            // Without a total, all twenty are answered (9.5 s of waits).
            var answered = 1
            for _ in 0..<19 {
                try await Task.sleep(for: .milliseconds(500))
                guard try await client.request("/healthz") == 200 else { break }
                answered += 1
            }
            try await client.waitClosed()
            #expect(answered >= 2 && answered < 20, "\(answered) answered")
            #expect(start.duration(to: .now) < .seconds(40))
            client.close()
        }
    }
}

@Suite("Drain: the analyzer answers until the drain ends", .timeLimit(.minutes(5)))
struct DrainAnalyzerTests {
    @Test("after SIGTERM /healthz answers 503 draining and /Results still answers while a session runs")
    func analyzerAnswersThroughDrain() async throws {
        let store = InMemoryResultStore()
        var configuration = ServerHarness.configuration(store: store)
        // A grace period far past the quiet period: a drain that ends well before it ended for being quiet. (With
        // 20 s, a full parallel test run once took 18.04 s from the quiet start to the end, past an 18-s bound.)
        configuration.limits.shutdownGracePeriod = .seconds(120)
        let server = try ReplayServer(configuration: configuration)
        let group = ServiceGroup(configuration: .init(services: [server], logger: ServerHarness.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let ports = try await server.listeningPorts()
            let analyzer = try #require(ports.analyzerPlain)
            let connection = try await RawConnection.connect(port: try #require(ports.sideChannelPlain))
            try await connection.channel.executeThenClose { inbound, outbound in
                var peer = FramedPeer(inbound, outbound)
                try await peer.send("@drainer01;0;TinyWeb-11212026;0;1;False;127.0.0.1;3.3")
                try await peer.send("[-1, null, null]")
                #expect(try await peer.receive() == "1;127.0.0.1;100")
                await group.triggerGracefulShutdown()
                // Draining is visible at once and the analyzer still answers.
                var health = ""
                for _ in 0..<100 {
                    health = try await HTTPProbe.request(port: analyzer, path: "/healthz")
                    if health.contains("draining") { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(health == #"{"status": "draining"}"#)
                let answer = try await HTTPProbe.request(port: analyzer, path: "/Results?command=defaultSetting")
                #expect(answer.contains("success"))
            }
            // The session ended; the analyzer still answers (a client fetching its result after its replay).
            let after = try await HTTPProbe.request(port: analyzer, path: "/Results?command=defaultSetting")
            #expect(after.contains("success"))
            // The drain ends once nothing has happened for the quiet period, before the grace period.
            let quiet = ContinuousClock.now
            try await tasks.next()
            #expect(quiet.duration(to: .now) >= ReplayServer.drainQuietPeriod - .milliseconds(200))
            #expect(quiet.duration(to: .now) < .seconds(60))
        }
    }
}

@Suite("Sessions per IPv6 /48", .timeLimit(.minutes(5)))
struct SiteCapTests {
    @Test("the /64s of one /48 are capped together; another /48 is admitted")
    func perSiteCap() async throws {
        let loopback = try LocalizationPair.Prefix("127.0.0.0/8")
        let capped: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.trustedProxies = [loopback]
            configuration.limits.maximumSessionsPerSite = 2
        }
        let replay = "TinyWeb-11212026"
        try await ServerHarness.run(configure: capped) { server in
            // Declared through a trusted proxy (loopback has no other IPv6 addresses to connect from).
            _ = try await AdmissionTests.declare(
                server, user: "site000001", replay: replay, from: "127.0.0.5", realIP: "2001:db8:1:1::5"
            ) {
                _ = try await AdmissionTests.declare(
                    server, user: "site000002", replay: replay, from: "127.0.0.6", realIP: "2001:db8:1:2::5"
                ) {
                    let third = try await AdmissionTests.declare(
                        server, user: "site000003", replay: replay, from: "127.0.0.7", realIP: "2001:db8:1:3::5")
                    #expect(third == "0;3")
                    let otherSite = try await AdmissionTests.declare(
                        server, user: "site000004", replay: replay, from: "127.0.0.8", realIP: "2001:db8:2:1::5")
                    #expect(otherSite.hasPrefix("1;"))
                }
            }
        }
    }
}
