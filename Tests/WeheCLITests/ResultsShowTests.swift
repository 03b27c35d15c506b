import Foundation
import Testing
import WeheTestKit

/// `wehe results show` on a seeded history (built binary).
@Suite("wehe results show (built binary, seeded history)")
struct ResultsShowTests {
    @Test("both sparklines share one scale: a 1.6 Mbit/s app draws low beside a 9.3 Mbit/s control")
    func oneScale() async throws {
        let data = TestResources.temporaryDirectory("wehe-show")
        let settings = """
            {"server":"127.0.0.1","userID":"\(DashboardCommandTests.userID)","lastHistoryCount":1,\
            "ruleSet":"android","confirmation":true,"consentAccepted":true}
            """
        #expect(TestResources.write(settings, to: data + "/settings.json"))
        try await DashboardCommandTests.seed(data + "/history.sqlite", [DashboardCommandTests.record()])
        let show = try await CommandRunner.run(
            "wehe", ["results", "show", "1", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        #expect(show.status == 0, "\(show.stderr)")
        let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
        let sparklines = show.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { line in !line.isEmpty && line.allSatisfy { blocks.contains($0) } }
        #expect(sparklines.count == 2, "\(show.stdout)")
        guard sparklines.count == 2 else { return }
        func height(_ block: Character) -> Int { blocks.firstIndex(of: block) ?? 0 }
        let app = sparklines[0].map(height)
        let control = sparklines[1].map(height)
        // On one scale the app (≈ 1.6/9.8 of the control's peak) stays in the lowest two heights, the control at the
        // top; on separate scales both would reach the full block.
        #expect(app.max() ?? 8 <= 1, "\(sparklines[0])")
        #expect(control.max() == 7, "\(sparklines[1])")
        #expect(show.stdout.contains("one scale for both"))
        // The verdict line names the direction; French labels follow --lang.
        #expect(show.stdout.contains("differentiation (throttled)"))
        let french = try await CommandRunner.run(
            "wehe",
            ["results", "show", "1", "--data-dir", data, "--lang", "fr", "--replays", TestResources.fixtureReplays])
        #expect(french.stdout.contains("débit moyen de l'appli"), "\(french.stdout)")
        #expect(french.stdout.contains("même échelle"))
    }
}
