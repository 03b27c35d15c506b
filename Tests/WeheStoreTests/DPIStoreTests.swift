import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

@Suite("DPI searches in the store")
struct DPIStoreTests {
    static let id = DPISearchID(userID: "@dpistore1", carrierName: "Orange (cellular)", replayName: "Netflix-1")
    static let start = Date(timeIntervalSince1970: 1_760_000_000.123_456_7)

    static func result(_ id: DPISearchID, historyCount: Int, finishedAfter seconds: Double, rule: Bool)
        -> DPIResultRecord
    {
        DPIResultRecord(
            id: id, historyCount: historyCount, startedAt: start, finishedAt: start.addingTimeInterval(seconds),
            probes: rule ? 27 : 10, bytesUsed: 1_234_567, outcome: rule ? "rule" : "noDPIInFirstPackets",
            message: rule ? "rule: C_1[100,108)" : "NO DPI for first 10 pacs",
            rules: rule
                ? [
                    DPIFoundRule(
                        packet: "C_1", left: 100, right: 108, content: Array("netflix.".utf8),
                        matchingBytes: Array(100..<108) + [150], packetPayload: Array(repeating: 0xAB, count: 230))
                ] : [])
    }

    @Test("a running search is saved, replaced, read back and deleted", arguments: StoreKind.allCases)
    func runningSearch(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            #expect(try await store.dpiSearch(Self.id) == nil)
            var record = DPISearchRecord(
                id: Self.id, historyCount: 4, startedAt: Self.start, updatedAt: Self.start, probes: 0, bytesUsed: 0,
                state: #"{"probeCount":0}"#)
            try await store.save(dpiSearch: record)
            record.probes = 5
            record.bytesUsed = 9_000
            record.state = #"{"probeCount":5}"#
            record.updatedAt = Self.start.addingTimeInterval(30)
            try await store.save(dpiSearch: record)
            let read = try #require(try await store.dpiSearch(Self.id))
            #expect(read.probes == 5 && read.bytesUsed == 9_000 && read.state == record.state)
            #expect(read.historyCount == 4)
            #expect(read.startedAt == Self.start.storeRounded)
            var other = Self.id
            other.carrierName = "SFR"
            #expect(try await store.dpiSearch(other) == nil)
            #expect(try await store.deleteDPISearch(Self.id))
            #expect(!(try await store.deleteDPISearch(Self.id)))
            #expect(try await store.dpiSearch(Self.id) == nil)
        }
    }

    @Test(
        "finishing a search drops its state and keeps the outcome; results filter and sort",
        arguments: StoreKind.allCases)
    func finishedSearches(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.save(
                dpiSearch: DPISearchRecord(
                    id: Self.id, historyCount: 4, startedAt: Self.start, updatedAt: Self.start, probes: 26,
                    bytesUsed: 1, state: "{}"))
            let first = Self.result(Self.id, historyCount: 4, finishedAfter: 60, rule: true)
            try await store.finish(dpiSearch: first)
            #expect(try await store.dpiSearch(Self.id) == nil)
            let second = Self.result(Self.id, historyCount: 5, finishedAfter: 120, rule: false)
            try await store.finish(dpiSearch: second)
            var elsewhere = Self.id
            elsewhere.userID = "@dpistore2"
            try await store.finish(dpiSearch: Self.result(elsewhere, historyCount: 4, finishedAfter: 90, rule: true))
            let latest = try await store.dpiResults(
                DPIResultQuery(
                    userID: Self.id.userID, carrierName: Self.id.carrierName, replayName: Self.id.replayName, limit: 1))
            #expect(latest.count == 1)
            #expect(latest.first?.outcome == "noDPIInFirstPackets")
            let byTest = try await store.dpiResults(DPIResultQuery(userID: Self.id.userID, historyCount: 4))
            #expect(byTest.count == 1)
            let stored = try #require(byTest.first)
            var expected = first
            expected.startedAt = first.startedAt.storeRounded
            expected.finishedAt = first.finishedAt.storeRounded
            #expect(stored == expected)
            let rules = try await store.dpiResults(DPIResultQuery(rulesOnly: true))
            #expect(rules.map(\.id.userID) == ["@dpistore2", Self.id.userID])
            #expect(try await store.dpiResults(DPIResultQuery(carrierName: "nobody")).isEmpty)
        }
    }
}
