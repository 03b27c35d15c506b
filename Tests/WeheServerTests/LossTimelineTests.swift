import Foundation
import NIOCore
import NIOPosix
import Testing
import WeheCore
import WeheStore
import WeheTestKit

@testable import WeheServer

/// The server's loss measurement without packet capture: `TCP_INFO` readings on a real loopback transfer, their
/// conversion into a loss timeline, and the per-interval loss ratios the WeHeY loss test uses.
@Suite("Loss timelines from TCP_INFO", .timeLimit(.minutes(6)))
struct LossTimelineTests {
    static func reading(
        sent: UInt64, retransmitted: UInt64, duplicated: UInt32 = 0, minRTT: UInt32? = 20_000
    ) -> TCPInfoReading {
        TCPInfoReading(
            bytesSent: sent, bytesRetransmitted: retransmitted, segmentsSent: UInt32(sent / 1000),
            segmentsRetransmitted: UInt32(retransmitted / 1000), segmentsDuplicated: duplicated, sendMSS: 1000,
            segmentsLost: 0, minimumRTTMicroseconds: minRTT, smoothedRTTMicroseconds: 25_000)
    }

    @Test(
        "a sampled loopback transfer gives a timeline that accounts for every byte sent",
        .enabled(if: TCPInfoReading.isSupported, "TCP_INFO is read on Linux only"))
    func loopbackTransfer() async throws {
        let total = 6 << 20
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let port = try #require(server.channel.localAddress?.port)
        let readings = try await withThrowingTaskGroup(of: [TCPInfoSampler.Timed]?.self) { group in
            group.addTask {
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        let sampler = TCPInfoSampler(channel: connection.channel, period: .milliseconds(2))
                        return try await connection.executeThenClose { inbound, outbound in
                            let chunk = ByteBuffer(repeating: 0x5A, count: 64 * 1024)
                            for _ in 0..<(total / chunk.readableBytes) { try await outbound.write(chunk) }
                            for try await _ in inbound {}
                            return await sampler.finish()
                        }
                    }
                    return nil
                }
            }
            group.addTask {
                // A slow reader with a small window stretches the transfer over many sampling periods.
                let client = try await RawConnection.connect(port: port, receiveBuffer: 16 * 1024)
                try await client.channel.executeThenClose { inbound, _ in
                    var received = 0
                    for try await chunk in inbound {
                        received += chunk.readableBytes
                        if received >= total { break }
                        try await Task.sleep(for: .microseconds(200))
                    }
                }
                return nil
            }
            var result: [TCPInfoSampler.Timed]?
            for try await value in group where value != nil { result = value }
            return result
        }
        let timed = try #require(readings)
        #expect(timed.count >= 5)
        let last = try #require(timed.last?.reading)
        #expect(last.bytesSent >= UInt64(total))
        #expect(last.bytesRetransmitted <= last.bytesSent)
        let key = ReplayKey(userID: "@sampler01", historyCount: 1, testID: 0)
        let record = try #require(TCPInfoSampler.record(key: key, readings: timed, recordedAt: Date()))
        let sent = record.samples.reduce(0) { $0 + $1.bytesSent }
        #expect(sent == Double(last.bytesSent))
        #expect(record.samples.count >= 3)
        #expect(zip(record.samples, record.samples.dropFirst()).allSatisfy { $0.time <= $1.time })
        let rtt = try #require(record.minimumRTT)
        #expect(rtt > 0 && rtt < 0.1)
        #expect(record.duration > 0)
        _ = try record.validated(database: "test")
    }

    @Test("cumulative readings become per-stretch deltas; idle stretches and backward counters add nothing")
    func deltas() throws {
        let timed: [TCPInfoSampler.Timed] = [
            .init(time: 0.01, reading: Self.reading(sent: 10_000, retransmitted: 0)),
            .init(time: 0.02, reading: Self.reading(sent: 10_000, retransmitted: 0)),  // idle
            .init(time: 0.03, reading: Self.reading(sent: 25_000, retransmitted: 3_000)),
            .init(time: 0.04, reading: Self.reading(sent: 24_000, retransmitted: 3_000)),  // regress: ignored
            .init(time: 0.05, reading: Self.reading(sent: 30_000, retransmitted: 3_500, minRTT: 18_000)),
        ]
        let samples = TCPInfoSampler.samples(timed)
        #expect(
            samples == [
                .init(time: 0.01, bytesSent: 10_000, bytesLost: 0),
                .init(time: 0.03, bytesSent: 15_000, bytesLost: 3_000),
                .init(time: 0.05, bytesSent: 5_000, bytesLost: 500),
            ])
        let record = try #require(
            TCPInfoSampler.record(
                key: ReplayKey(userID: "@d", historyCount: 0, testID: 0), readings: timed, recordedAt: Date()))
        #expect(record.minimumRTT == 0.018)
        #expect(record.duration == 0.05)
        #expect(TCPInfoSampler.record(key: record.key, readings: [], recordedAt: Date()) == nil)
    }

    @Test("retransmissions reported as duplicates (D-SACK) are not loss, even when the report comes readings later")
    func duplicatesAreNotLoss() {
        // A timeout resends 8 segments of which 6 had arrived: 2 000 bytes lost, not 8 000. The duplicate reports
        // arrive in two readings, the second one reading after the retransmissions.
        let timed: [TCPInfoSampler.Timed] = [
            .init(time: 0.1, reading: Self.reading(sent: 20_000, retransmitted: 0)),
            .init(time: 0.2, reading: Self.reading(sent: 30_000, retransmitted: 8_000, duplicated: 2)),
            .init(time: 0.3, reading: Self.reading(sent: 40_000, retransmitted: 8_000, duplicated: 6)),
            .init(time: 0.4, reading: Self.reading(sent: 50_000, retransmitted: 11_000, duplicated: 6)),
            .init(time: 0.5, reading: Self.reading(sent: 60_000, retransmitted: 16_000, duplicated: 6)),
        ]
        #expect(timed[1].reading.bytesLost == 6_000)
        #expect(timed[2].reading.bytesLost == 2_000)
        #expect(Self.reading(sent: 10_000, retransmitted: 1_000, duplicated: 3).bytesLost == 0)
        let samples = TCPInfoSampler.samples(timed)
        #expect(samples.map(\.bytesLost) == [0, 2_000, 0, 3_000, 5_000])
        // Duplicates reported after the last loss: the retransmissions' stretch is not charged for them.
        let quiet: [TCPInfoSampler.Timed] = [
            .init(time: 0.1, reading: Self.reading(sent: 20_000, retransmitted: 5_000)),
            .init(time: 0.2, reading: Self.reading(sent: 30_000, retransmitted: 5_000, duplicated: 5)),
        ]
        #expect(TCPInfoSampler.samples(quiet).map(\.bytesLost) == [0, 0])
        // Over the whole replay: 10 000 bytes lost of 60 000 sent, 16 000 retransmitted less 6 000 duplicated.
        #expect(samples.reduce(0) { $0 + $1.bytesLost } == 10_000)
    }

    @Test("tcp_info bytes decode at the kernel's offsets; an old kernel without byte counters counts segments")
    func decoding() throws {
        var raw = [UInt8](repeating: 0, count: TCPInfoReading.Offset.end)
        func put32(_ value: UInt32, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { raw.replaceSubrange(offset..<offset + 4, with: $0) }
        }
        func put64(_ value: UInt64, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { raw.replaceSubrange(offset..<offset + 8, with: $0) }
        }
        put32(1448, at: TCPInfoReading.Offset.sendMSS)
        put32(100, at: TCPInfoReading.Offset.dataSegmentsOut)
        put32(4, at: TCPInfoReading.Offset.totalRetransmits)
        put32(.max, at: TCPInfoReading.Offset.minimumRTT)
        put32(31_000, at: TCPInfoReading.Offset.rtt)
        let old = try #require(raw.withUnsafeBytes { TCPInfoReading.decode($0) })
        #expect(old.bytesSent == 144_800)
        #expect(old.bytesRetransmitted == 5_792)
        #expect(old.minimumRTTMicroseconds == nil)
        #expect(old.smoothedRTTMicroseconds == 31_000)
        put64(150_000, at: TCPInfoReading.Offset.bytesSent)
        put64(6_000, at: TCPInfoReading.Offset.bytesRetransmitted)
        put32(20_500, at: TCPInfoReading.Offset.minimumRTT)
        let new = try #require(raw.withUnsafeBytes { TCPInfoReading.decode($0) })
        #expect(new.bytesSent == 150_000)
        #expect(new.bytesRetransmitted == 6_000)
        #expect(new.bytesLost == 6_000)
        #expect(new.minimumRTTMicroseconds == 20_500)
        put32(3, at: TCPInfoReading.Offset.dsackDuplicates)
        let withDuplicates = try #require(raw.withUnsafeBytes { TCPInfoReading.decode($0) })
        #expect(withDuplicates.segmentsDuplicated == 3)
        #expect(withDuplicates.bytesLost == 6_000 - 3 * 1448)
        // A kernel whose structure ends before the duplicate count reads it as none.
        let shorter = try #require(
            Array(raw.prefix(TCPInfoReading.Offset.dsackDuplicates)).withUnsafeBytes { TCPInfoReading.decode($0) })
        #expect(shorter.segmentsDuplicated == 0 && shorter.bytesLost == 6_000)
        #expect(Array(raw.prefix(100)).withUnsafeBytes { TCPInfoReading.decode($0) } == nil)
    }

    /// 30 s of readings every 10 ms, 1 448 bytes each; in the listed seconds every 10th reading is a retransmission.
    static func synthetic(_ key: ReplayKey, lossySeconds: Set<Int>, rtt: Double = 0.02) -> ReplayLossRecord {
        let samples = (1...3000).map { index -> ReplayLossRecord.Sample in
            let time = Double(index) / 100
            let second = (index - 1) / 100
            let lost = lossySeconds.contains(second) && index % 10 == 0
            return .init(time: time, bytesSent: 1448, bytesLost: lost ? 1448 : 0)
        }
        return ReplayLossRecord(key: key, recordedAt: Date(), minimumRTT: rtt, duration: 30, samples: samples)
    }

    @Test("per-interval loss ratios of a synthetic timeline, at 10…50 × min RTT")
    func intervalRatios() throws {
        let record = Self.synthetic(ReplayKey(userID: "@r", historyCount: 1, testID: 0), lossySeconds: [3, 7])
        let sizes = LossMeasurements.intervalSizes(record)
        // min RTT 20 ms: 0.2 s … 1.0 s, all of which give ≥ 30 intervals in 30 s.
        #expect(sizes.count == 41)
        #expect(sizes.first == 0.2)
        #expect(sizes.last == 1.0)
        let rows = try LossMeasurements.intervalRatios(record, sizes: [1.0])
        // Intervals [t, t+1] hold 101 readings (both ends inclusive) except the first (100).
        #expect(rows.count == 30)
        let byEnd = Dictionary(rows.map { ($0.end, $0.ratio) }, uniquingKeysWith: { a, _ in a })
        #expect(byEnd[1.0] == 0)
        #expect(abs((byEnd[4.0] ?? -1) - 10.0 / 101.0) < 1e-12)
        #expect(abs((byEnd[8.0] ?? -1) - 10.0 / 101.0) < 1e-12)
        #expect(byEnd[6.0] == 0)
        // The boundary reading at t = 3.0 s (index 300) is lossless, so [2, 3] stays clean.
        #expect(byEnd[3.0] == 0)
        // Too short to hold 30 intervals of 10 × RTT: no size, the test cannot run.
        var short = record
        short.duration = 5
        #expect(LossMeasurements.intervalSizes(short).isEmpty)
        short.minimumRTT = nil
        #expect(try LossMeasurements.branch(short) == nil)
    }
}
