import Foundation
import Testing
import WeheCore
import WeheTestKit
import WeheWire

@Suite("malformed traces give one clear error naming entry and field")
struct MalformedTraceTests {
    static let good =
        #"[[{"c_s_pair": "010.000.000.001.40000-010.000.000.002.00443", "payload": "1603", "timestamp": 0.5, "response_len": 10, "response_hash": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}], [], ["010.000.000.001.40000-010.000.000.002.00443"], "Good-01012026"]"#

    func decode(_ text: String) throws(WeheWireError) -> ReplayTrace {
        try ClientTraceDecoder().decode(Array(text.utf8))
    }

    @Test("the reference document decodes")
    func good() throws {
        let trace = try decode(Self.good)
        #expect(trace.packets.count == 1)
        #expect(trace.packets[0].payload == [0x16, 0x03])
        #expect(trace.packets[0].responseLength == 10)
    }

    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let text: String
        let code: WeheWireError.Code
        let entry: Int?
        let field: String?
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "truncated", text: String(good.prefix(120)), code: .malformedJSON, entry: nil, field: nil),
        Case(name: "empty file", text: "", code: .malformedJSON, entry: nil, field: nil),
        Case(name: "not an array", text: #"{"a": 1}"#, code: .unexpectedStructure, entry: nil, field: nil),
        Case(name: "three elements", text: #"[[], [], []]"#, code: .unexpectedStructure, entry: nil, field: nil),
        Case(name: "five elements", text: #"[[], [], [], "x", 1]"#, code: .unexpectedStructure, entry: nil, field: nil),
        Case(name: "two elements", text: #"[[], []]"#, code: .unexpectedStructure, entry: nil, field: nil),
        Case(
            name: "odd-length hex", text: good.replacingOccurrences("\"1603\"", "\"160\""), code: .invalidValue,
            entry: 0, field: "payload"),
        Case(
            name: "non-hex payload", text: good.replacingOccurrences("\"1603\"", "\"16zz\""), code: .invalidValue,
            entry: 0, field: "payload"),
        Case(
            name: "bad c_s_pair", text: good.replacingOccurrences("010.000.000.001.40000-", "010.000.000.001-"),
            code: .invalidValue, entry: 0, field: "c_s_pair"),
        Case(
            name: "negative timestamp", text: good.replacingOccurrences("0.5", "-0.5"), code: .invalidValue, entry: 0,
            field: "timestamp"),
        Case(
            name: "string timestamp", text: good.replacingOccurrences("0.5", "\"0.5\""), code: .invalidValue, entry: 0,
            field: "timestamp"),
        Case(
            name: "negative response_len", text: good.replacingOccurrences("10,", "-10,"), code: .invalidValue,
            entry: 0, field: "response_len"),
        Case(
            name: "fractional response_len", text: good.replacingOccurrences("10,", "10.5,"), code: .invalidValue,
            entry: 0, field: "response_len"),
        Case(
            name: "missing payload", text: good.replacingOccurrences(#""payload": "1603", "#, ""),
            code: .unexpectedStructure, entry: 0, field: "payload"),
        Case(
            name: "packet not an object", text: #"[[1], [], [], "x"]"#, code: .unexpectedStructure, entry: 0, field: nil
        ),
        Case(
            name: "name not a string", text: #"[[], [], [], 5]"#, code: .unexpectedStructure, entry: nil,
            field: "element 3"),
        Case(
            name: "bad udp port", text: #"[[], ["99999x"], [], "x"]"#, code: .invalidValue, entry: nil,
            field: "element 1[0]"),
        Case(name: "trailing garbage", text: good + "]", code: .malformedJSON, entry: nil, field: nil),
        Case(
            name: "deep nesting", text: String(repeating: "[", count: 10_000), code: .unexpectedStructure, entry: 0,
            field: nil),
    ]

    @Test("each malformed input throws the expected code, entry and field", arguments: cases)
    func malformed(testCase: Case) {
        do {
            _ = try decode(testCase.text)
            Issue.record("\(testCase.name) decoded without error")
        } catch {
            #expect(error.code == testCase.code, "\(error)")
            #expect(error.entry == testCase.entry, "\(error)")
            #expect(error.field == testCase.field, "\(error)")
            #expect(error.offset != nil || error.field != nil, "\(error)")
        }
    }

    @Test("decreasing timestamps load but fail validation with entry and field")
    func decreasing() throws {
        let text = Self.good.replacingOccurrences(
            "}], []",
            #"}, {"c_s_pair": "010.000.000.001.40000-010.000.000.002.00443", "payload": "", "timestamp": 0.1, "response_len": 0, "response_hash": null}], []"#
        )
        let trace = try decode(text)
        #expect(
            trace.problems() == [
                TraceProblem(entry: 1, field: "timestamp", message: trace.problems().first?.message ?? "")
            ])
    }

    @Test("random bytes and random truncations never crash the decoder")
    func fuzz() throws {
        var generator = SystemRandomNumberGenerator()
        let good = Array(Self.good.utf8)
        for round in 0..<2000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                bytes = Array(good.prefix(Int.random(in: 0..<good.count, using: &generator)))
                if !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
            }
            do { _ = try ClientTraceDecoder().decode(bytes) } catch { #expect(!error.message.isEmpty) }
        }
    }

    @Test("a 2 GB file is refused before it is read, naming the file")
    func hugeFile() throws {
        let directory = TestResources.temporaryDirectory()
        let path = directory + "/huge.pcap_client_all.json"
        #expect(TestResources.makeSparseFile(path, size: 2 << 30))
        do {
            _ = try ReplayLibrary.trace(at: path)
            Issue.record("a 2 GB file was accepted")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(error.file == path)
            #expect(error.description.contains("huge.pcap_client_all.json"))
        }
    }

    @Test("a missing file or a directory is unreadable, naming the path")
    func unreadable() {
        #expect(throws: WeheWireError(.unreadable, "")) { try ReplayLibrary.trace(at: "/nonexistent/x.json") }
        #expect(throws: WeheWireError(.unreadable, "")) { try ReplayLibrary.trace(at: "/tmp") }
    }
}

extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        replacingOccurrences(of: target, with: replacement)
    }
}
