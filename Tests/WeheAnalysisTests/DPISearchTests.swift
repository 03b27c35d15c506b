import Foundation
import Testing
import WeheAnalysis

/// A simulated classifier: inverting any byte of a keyword breaks the classification.
private struct KeywordOracle {
    var keywords: [DPIPacketID: Set<Int>]

    func broke(_ probe: DPIProbe) -> Bool {
        guard let bytes = keywords[probe.packet] else { return false }
        return probe.region.contains { bytes.contains($0) }
    }
}

private let c1 = DPIPacketID(side: .client, number: 1)
private let s1 = DPIPacketID(side: .server, number: 1)
private let s2 = DPIPacketID(side: .server, number: 2)
/// The packets of analysis.md section 8.4.
private let vectorPackets = [
    DPIPacket(id: c1, length: 230), DPIPacket(id: s1, length: 751), DPIPacket(id: s2, length: 182),
]

/// Runs a search to the end against an oracle; returns the answered probes with their answers and the outcome.
private func run(
    _ packets: [DPIPacket], oracle: (DPIProbe) -> Bool
) throws -> (probes: [(DPIProbe, Bool)], outcome: DPISearchOutcome?) {
    var search = try DPISearch(packets: packets)
    var log: [(DPIProbe, Bool)] = []
    while let probe = search.currentProbe {
        let broke = oracle(probe)
        log.append((probe, broke))
        try search.record(probe, classificationBroke: broke)
        #expect(log.count <= 1000)
        if log.count > 1000 { break }
    }
    #expect(search.probeCount == log.count)
    return (log, search.outcome)
}

@Test("D1: 8-byte keyword in C_1 is found in 27 probes with the documented probe order")
func dpiVectorD1() throws {
    let oracle = KeywordOracle(keywords: [c1: Set(100..<108)])
    let (probes, outcome) = try run(vectorPackets, oracle: oracle.broke)
    #expect(probes.count == 27)
    let prefix: [(Int, Int, Bool)] = [
        (10, 230, true), (10, 120, true), (120, 230, false), (10, 65, false), (65, 120, true), (65, 92, false),
        (92, 120, true),
    ]
    for (index, expected) in prefix.enumerated() {
        let (probe, broke) = probes[index]
        #expect(probe.packet == c1)
        #expect(probe.region == expected.0..<expected.1)
        #expect(broke == expected.2)
    }
    let tail = probes.suffix(10)
    #expect(tail.map(\.0.region.lowerBound) == Array(99...108))
    #expect(tail.allSatisfy { $0.0.region.count == 1 })
    #expect(tail.map(\.1) == (99...108).map { (100...107).contains($0) })
    #expect(outcome == .rules([DPIRule(packet: c1, region: 100..<108, matchingBytes: Array(100..<108))]))
}

@Test("D2: a single matching byte is reported as a one-byte rule after 16 probes")
func dpiVectorD2() throws {
    let (probes, outcome) = try run(vectorPackets, oracle: KeywordOracle(keywords: [c1: [100]]).broke)
    #expect(probes.count == 16)
    #expect(outcome == .rules([DPIRule(packet: c1, region: 100..<101, matchingBytes: [100])]))
}

@Test("D3: keyword in S_1 after a negative first packet, 39 probes")
func dpiVectorD3() throws {
    let (probes, outcome) = try run(vectorPackets, oracle: KeywordOracle(keywords: [s1: Set(40..<52)]).broke)
    #expect(probes.count == 39)
    #expect(probes.first?.0 == DPIProbe(packet: c1, region: 10..<230))
    #expect(probes.first?.1 == false)
    #expect(probes.dropFirst().first?.0 == DPIProbe(packet: s1, region: 10..<751))
    #expect(outcome == .rules([DPIRule(packet: s1, region: 40..<52, matchingBytes: Array(40..<52))]))
}

@Test("D4: keyword inside the skipped prefix: three probes, packets exhausted, no rule")
func dpiVectorD4() throws {
    let (probes, outcome) = try run(vectorPackets, oracle: KeywordOracle(keywords: [c1: Set(2..<8)]).broke)
    #expect(
        probes.map(\.0) == [
            DPIProbe(packet: c1, region: 10..<230), DPIProbe(packet: s1, region: 10..<751),
            DPIProbe(packet: s2, region: 10..<182),
        ])
    #expect(outcome == .noRuleFound)
}

@Test("D5: no keyword among 12 packets stops after the first 10 packets")
func dpiVectorD5() throws {
    let packets = (1...12).map { DPIPacket(id: DPIPacketID(side: .client, number: $0), length: 300) }
    let (probes, outcome) = try run(packets, oracle: { _ in false })
    #expect(probes.count == 10)
    #expect(outcome == .noDPIInFirstPackets(10))
    #expect(outcome?.description == "NO DPI for first 10 pacs")
}

@Test("D6: a classifier broken by every flip exhausts the 200-probe budget")
func dpiVectorD6() throws {
    let (probes, outcome) = try run([DPIPacket(id: c1, length: 1500)], oracle: { _ in true })
    #expect(probes.count == 200)
    #expect(outcome == .probeLimitReached(200))
    #expect(outcome?.description == "NO DPI after 200 tests")
}

@Test("D7: two required keywords: both recorded, the longest run is reported, 51 probes")
func dpiVectorD7() throws {
    let keywords: Set<Int> = Set(20..<24).union(200..<206)
    let (probes, outcome) = try run(vectorPackets, oracle: KeywordOracle(keywords: [c1: keywords]).broke)
    #expect(probes.count == 51)
    #expect(outcome == .rules([DPIRule(packet: c1, region: 200..<206, matchingBytes: keywords.sorted())]))
}

@Test("Midpoints are integers and every probe lies inside the packet, past the skipped prefix")
func dpiProbesStayInBounds() throws {
    let (probes, _) = try run([DPIPacket(id: c1, length: 1001)], oracle: { _ in true })
    #expect(probes.allSatisfy { $0.0.region.lowerBound >= 10 && $0.0.region.upperBound <= 1001 })
    #expect(probes[1].0.region == 10..<505)
    #expect(probes[2].0.region == 505..<1001)
}

@Test("Packets too short to probe count towards the packet limit without a probe")
func dpiShortPacketsAreSkipped() throws {
    let packets = [DPIPacket(id: c1, length: 10), DPIPacket(id: s1, length: 40)]
    let (probes, outcome) = try run(packets, oracle: KeywordOracle(keywords: [s1: [20]]).broke)
    #expect(probes.first?.0 == DPIProbe(packet: s1, region: 10..<40))
    #expect(outcome == .rules([DPIRule(packet: s1, region: 20..<21, matchingBytes: [20])]))
    let empty = try DPISearch(packets: [])
    #expect(empty.outcome == .noRuleFound)
}

@Test("Answers for a probe that was not asked, or after the end, are rejected")
func dpiProtocolViolations() throws {
    var search = try DPISearch(packets: vectorPackets)
    #expect(throws: WeheAnalysisError(.dpiProtocolViolation, "")) {
        try search.record(DPIProbe(packet: c1, region: 10..<120), classificationBroke: true)
    }
    #expect(search.probeCount == 0)
    var finished = try DPISearch(packets: [DPIPacket(id: c1, length: 20)])
    try finished.record(DPIProbe(packet: c1, region: 10..<20), classificationBroke: false)
    #expect(finished.outcome == .noRuleFound)
    #expect(throws: WeheAnalysisError(.dpiProtocolViolation, "")) {
        try finished.record(DPIProbe(packet: c1, region: 10..<20), classificationBroke: false)
    }
}

@Test("Invalid packet lists and limits are rejected")
func dpiInvalidSetup() {
    #expect(throws: WeheAnalysisError(.invalidRegion, "")) {
        try DPISearch(packets: [DPIPacket(id: c1, length: -1)])
    }
    #expect(throws: WeheAnalysisError(.invalidRegion, "")) {
        try DPISearch(packets: [DPIPacket(id: c1, length: 50), DPIPacket(id: c1, length: 60)])
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try DPISearch(packets: vectorPackets, configuration: DPISearchConfiguration(maxProbes: 0))
    }
}

@Test("The search state survives a JSON round trip mid-search")
func dpiSearchIsCodable() throws {
    var search = try DPISearch(packets: vectorPackets)
    let oracle = KeywordOracle(keywords: [c1: Set(100..<108)])
    for _ in 0..<5 {
        guard let probe = search.currentProbe else { break }
        try search.record(probe, classificationBroke: oracle.broke(probe))
    }
    let data = try JSONEncoder().encode(search)
    var restored = try JSONDecoder().decode(DPISearch.self, from: data)
    #expect(restored == search)
    while let probe = restored.currentProbe {
        try restored.record(probe, classificationBroke: oracle.broke(probe))
    }
    #expect(restored.probeCount == 27)
}

@Test("Packet names parse and print as C_k / S_k")
func dpiPacketNames() throws {
    #expect(try DPIPacketID(parsing: "S_12") == DPIPacketID(side: .server, number: 12))
    #expect(DPIPacketID(side: .client, number: 3).description == "C_3")
    for bad in ["C1", "X_1", "C_0", "C_", "C_1_2", ""] {
        #expect(throws: WeheAnalysisError(.invalidRegion, "")) { try DPIPacketID(parsing: bad) }
    }
}

@Test("Inversion flips all eight bits of exactly the region and rejects regions outside the payload")
func dpiInversion() throws {
    let payload: [UInt8] = [0x00, 0x47, 0x45, 0x54, 0xFF, 0x0F]
    #expect(try PayloadInversion.inverting(payload, region: 1..<5) == [0x00, 0xB8, 0xBA, 0xAB, 0x00, 0x0F])
    #expect(try PayloadInversion.inverting(payload, region: 3..<3) == payload)
    let twice = try PayloadInversion.inverting(try PayloadInversion.inverting(payload, region: 0..<6), region: 0..<6)
    #expect(twice == payload)
    #expect(throws: WeheAnalysisError(.invalidRegion, "")) { try PayloadInversion.inverting(payload, region: 4..<7) }
    let rule = DPIRule(packet: c1, region: 1..<4, matchingBytes: [1, 2, 3])
    #expect(try rule.content(in: payload) == [0x47, 0x45, 0x54])
    #expect(throws: WeheAnalysisError(.invalidRegion, "")) { try rule.content(in: [0x00]) }
}
