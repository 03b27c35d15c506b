import Foundation
import Testing
import WeheWire

@Suite("IP-to-AS table")
struct ASTableTests {
    static let prefixes = """
        # comment lines and blank lines are skipped

        127.0.0.0\t8\t64500
        10.0.0.0\t8\t64501
        10.1.0.0\t16\t64502
        10.1.2.0\t24\t64503
        0.0.0.0\t0\t64999
        2001:db8::\t32\t64510
        2001:db8:1::\t48\t64511
        192.0.2.0\t24\t{64520,64521}
        198.51.100.0\t24\t64530_64531
        not-an-address\t8\t1
        10.2.0.0\t33\t1
        10.3.0.0\t16\tAS-X
        10.4.0.0\t16
        """
    static let names = """
        64500\tLoopback Test Net
        64503\t  Deep  Net\u{7}\t
        AS64510\tDocumentation Six
        x\tbroken
        64511\t
        """

    static func table() -> ASTable {
        ASTable(prefixes: Array(prefixes.utf8), names: Array(names.utf8))
    }

    @Test("longest prefix wins, for IPv4 and IPv6")
    func longestPrefix() {
        let table = Self.table()
        #expect(table.lookup("127.0.0.1") == ASTable.Entry(number: 64500, name: "Loopback Test Net"))
        #expect(table.lookup("10.9.9.9")?.number == 64501)
        #expect(table.lookup("10.1.9.9")?.number == 64502)
        #expect(table.lookup("10.1.2.200")?.number == 64503)
        #expect(table.lookup("8.8.8.8")?.number == 64999)
        #expect(table.lookup("2001:db8:ffff::1") == ASTable.Entry(number: 64510, name: "Documentation Six"))
        #expect(table.lookup("2001:db8:1:2::3")?.number == 64511)
        #expect(table.lookup("2001:db9::1") == nil)
        #expect(table.lookup("::ffff:10.1.2.3")?.number == 64503)
        #expect(table.lookup("[2001:db8:1::1]")?.number == 64511)
        #expect(table.lookup("fe80::1%eth0") == nil)
        #expect(table.lookup("not an address") == nil)
    }

    @Test("AS sets and multi-origin routes keep the first AS and are counted; bad lines are counted, not fatal")
    func report() {
        let table = Self.table()
        #expect(table.lookup("192.0.2.7")?.number == 64520)
        #expect(table.lookup("198.51.100.7")?.number == 64530)
        let report = table.report
        #expect(report.prefixes == 9)
        #expect(report.multiOriginPrefixes == 2)
        #expect(report.badPrefixLines == 4)
        #expect(report.names == 3)
        #expect(report.badNameLines == 2)
        #expect(report.firstProblems.count == 2)
        #expect(report.firstProblems.first?.hasPrefix("prefix file line 12") == true)
        // Control characters dropped, spaces trimmed.
        #expect(table.lookup("10.1.2.3")?.name == "Deep  Net")
    }

    @Test("the table is bounded: routes and names beyond the limits are counted, not stored")
    func bounded() {
        var lines = ""
        for index in 0..<50 { lines += "10.\(index).0.0\t16\t\(index + 1)\n" }
        let table = ASTable(
            prefixes: Array(lines.utf8), names: Array("1\ta\n2\tb\n3\tc\n".utf8), maximumPrefixes: 20,
            maximumNames: 2)
        #expect(table.report.prefixes == 20)
        #expect(table.report.droppedPrefixes == 30)
        #expect(table.report.names == 2)
        #expect(table.report.droppedNames == 1)
        #expect(table.lookup("10.19.1.1")?.number == 20)
        #expect(table.lookup("10.20.1.1") == nil)
    }

    @Test(
        "garbage never traps",
        arguments: [
            "", "\t\t\t", "1.2.3.4\t99999999999999999999\t1", "::::\t8\t1", "1.2.3.4.5\t8\t1", "256.1.1.1\t8\t1",
            "1:2:3:4:5:6:7:8:9\t64\t1", "1.2.3.4\t8\t{}", "1.2.3.4\t8\t4294967296", "\u{FF}\u{FE}\t8\t1",
            "2001:db8::1.2.3\t64\t1", "::1.2.3.4\t128\t5",
        ])
    func garbage(line: String) {
        let table = ASTable(prefixes: Array(line.utf8), names: Array(line.utf8))
        #expect(table.report.prefixes + table.report.badPrefixLines <= 1)
    }

    @Test("address parsing matches inet_pton's on the forms that matter")
    func addressParsing() {
        #expect(IPAddressBits("1.2.3.4") == .v4(0x0102_0304))
        #expect(IPAddressBits("::") == .v6(0))
        #expect(IPAddressBits("::1") == .v6(1))
        #expect(IPAddressBits("1::") == .v6(UInt128(1) << 112))
        #expect(IPAddressBits("2001:db8::1.2.3.4") == .v6(UInt128(0x2001_0db8) << 96 | 0x0102_0304))
        #expect(IPAddressBits("1:2:3:4:5:6:7:8") == .v6(0x0001_0002_0003_0004_0005_0006_0007_0008))
        #expect(IPAddressBits("1:2:3:4:5:6:7::") != nil)
        for bad in ["1.2.3", "01234.1.1.1", "1::2::3", ":1::", "1:2:3:4:5:6:7:8:9", "12345::", "1.2.3.4:80", "g::"] {
            #expect(IPAddressBits(bad) == nil, "\(bad)")
        }
    }

    @Test("files are size-checked before reading and a missing file names itself")
    func files() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("astable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let prefixFile = directory.appendingPathComponent("pfx2as").path
        try Data(Self.prefixes.utf8).write(to: URL(fileURLWithPath: prefixFile))
        let loaded = try ASTable.load(prefixFile: prefixFile, namesFile: nil)
        #expect(loaded.lookup("127.0.0.1") == ASTable.Entry(number: 64500, name: nil))
        #expect(throws: WeheWireError(.tooLarge, "")) {
            try ASTable.load(prefixFile: prefixFile, namesFile: nil, sizeLimit: 10)
        }
        let missing = directory.appendingPathComponent("absent").path
        do {
            _ = try ASTable.load(prefixFile: prefixFile, namesFile: missing)
            Issue.record("a missing names file loaded")
        } catch {
            #expect(error.code == .unreadable && error.file == missing)
        }
    }
}

@Suite("singleResult AS extension keys")
struct SingleResultASTests {
    @Test("as_number and as_name travel as strings beside the published keys and read back; absent stays nil")
    func roundTrip() throws {
        var result = SingleResult(
            replayName: "r", date: "2026-01-01 00:00:00", userID: "@u", extraString: "0", historyCount: 3, testID: 1,
            areaTest: 0.1, ks2RatioTest: 1, originalMeanMbps: 2, controlMeanMbps: 2, ksStatistic: 0.2, ksPValue: 0.5,
            asNumber: 64500, asName: "Loopback \"Test\" Net")
        let body = result.responseBody
        #expect(body.contains("\"as_number\":\"64500\"") || body.contains("\"as_number\": \"64500\""))
        guard case .success(let parsed) = try SingleResult.parse(Array(body.utf8)) else {
            Issue.record("not a success")
            return
        }
        #expect(parsed.asNumber == 64500 && parsed.asName == "Loopback \"Test\" Net")
        result.asNumber = nil
        result.asName = nil
        #expect(!result.responseBody.contains("as_"))
        guard case .success(let plain) = try SingleResult.parse(Array(result.responseBody.utf8)) else {
            Issue.record("not a success")
            return
        }
        #expect(plain.asNumber == nil && plain.asName == nil)
    }
}
