import Foundation
import Testing
import WeheTestKit

@Suite("wehe analyze (built binary)")
struct AnalyzeCommandTests {
    func write(_ text: String) -> String {
        let path = TestResources.temporaryDirectory() + "/samples.json"
        TestResources.write(text, to: path)
        return path
    }

    @Test("a throttled original gives differentiation in JSON with the documented keys")
    func throttled() async throws {
        let original = write("[1.5,1.4,1.6,1.5,1.45,1.55,1.5,1.52,1.48,1.5,1.51,1.49]")
        let control = write("[[8,7.9,8.1,8,7.95,8.05,8,8.02,7.98,8,8.1,7.9],[1,2,3,4,5,6,7,8,9,10,11,12]]")
        let output = try await CommandRunner.run("wehe", ["analyze", original, control, "--json"])
        #expect(output.status == 0, "\(output.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "differentiation")
        #expect(object["area"] as? Double == 0.8125)
        #expect(object["originalMeanMbps"] as? Double == 1.5)
        #expect(object["controlMeanMbps"] as? Double == 8)
        #expect(object["ksStatistic"] as? Double == 1)
        #expect((object["ksPValue"] as? Double ?? 1) < 1e-6)
    }

    @Test("two samples each are inconclusive (too few measurements), not 'no differentiation'")
    func tooFew() async throws {
        let two = write("[5, 5.2]")
        let json = try await CommandRunner.run("wehe", ["analyze", two, two, "--json"])
        #expect(json.status == 0)
        #expect(json.stdout.contains("\"inconclusive\""))
        #expect(json.stdout.contains("too few measurements"))
        let text = try await CommandRunner.run("wehe", ["analyze", two, two, "--lang", "en"])
        #expect(text.stdout.hasPrefix("Results inconclusive - too few measurements"))
        let french = try await CommandRunner.run("wehe", ["analyze", two, two, "--lang", "fr"])
        #expect(french.stdout.hasPrefix("Résultats non concluants - trop peu de mesures"), "\(french.stdout)")
        #expect(french.stdout.contains("5,1 Mbit/s"), "\(french.stdout)")
    }

    @Test("similar samples give no differentiation; bad files give exit 1 and 3")
    func errors() async throws {
        let same = write("[5,5.1,4.9,5,5.2,4.8,5,5.1,4.9,5,5.2,4.8]")
        let ok = try await CommandRunner.run("wehe", ["analyze", same, same, "--json"])
        #expect(ok.status == 0)
        #expect(ok.stdout.contains("\"no-differentiation\""))
        let bad = write("[1, -2, 3]")
        let invalid = try await CommandRunner.run("wehe", ["analyze", bad, same])
        #expect(invalid.status == 1)
        #expect(invalid.stderr.hasPrefix("wehe: "))
        let missing = try await CommandRunner.run("wehe", ["analyze", "/nonexistent.json", same])
        #expect(missing.status == 3)
    }
}
