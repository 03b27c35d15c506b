import Testing
import WeheCore
import WeheTestKit
import WeheWire

@Suite("replay directory validation")
struct ValidatorTests {
    @Test("fixtures are valid; the absent app is a warning, not an error")
    func fixtures() {
        let report = ReplayValidator().validate(path: TestResources.fixtureReplays)
        #expect(!report.hasErrors, "\(report.errors)")
        #expect(report.validTraces == 8)
        #expect(report.warnings.count == 2)
        #expect(report.warnings.allSatisfy { $0.message.contains("absent") })
    }

    @Test("a broken file is an error naming file, entry and field; others stay valid")
    func brokenFile() throws {
        let directory = TestResources.temporaryDirectory()
        let library = ReplayLibrary(directory: TestResources.fixtureReplays)
        let good = ClientTraceEncoder().encode(try library.trace(file: "TinySix_11212026.pcap_client_all.json"))
        TestResources.write(good, to: directory + "/Good_01012026.pcap_client_all.json")
        TestResources.write(
            good.replacingOccurrences(of: "\"timestamp\": 0.1", with: "\"timestamp\": 0.01"),
            to: directory + "/Late_01012026.pcap_client_all.json"
        )
        TestResources.write(String(good.prefix(50)), to: directory + "/Cut_01012026.pcap_client_all.json")
        let report = ReplayValidator().validate(path: directory)
        #expect(report.validTraces == 1)
        #expect(report.errors.count == 2)
        #expect(
            report.errors.contains {
                $0.file.hasSuffix("Late_01012026.pcap_client_all.json")
                    && $0.message.contains("entry 2, field timestamp")
            })
        #expect(
            report.errors.contains {
                $0.file.hasSuffix("Cut_01012026.pcap_client_all.json") && $0.message.contains("truncated")
            })
        #expect(report.warnings.contains { $0.message.contains("no catalog") })
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
