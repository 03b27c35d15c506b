import Foundation
import Testing
import WeheTestKit

@Suite("bundled demo traces")
struct DemoReplaysTests {
    @Test("Sources/wehe/DemoReplays is an exact copy of Fixtures/replays (regenerate both together)")
    func sameAsFixtures() throws {
        let bundled = TestResources.packageRoot + "/Sources/wehe/DemoReplays"
        let fixtures = TestResources.fixtureReplays
        let manager = FileManager.default
        let names = try manager.contentsOfDirectory(atPath: fixtures).filter { $0.hasSuffix(".json") }.sorted()
        #expect(try manager.contentsOfDirectory(atPath: bundled).filter { $0.hasSuffix(".json") }.sorted() == names)
        #expect(!names.isEmpty)
        for name in names {
            #expect(
                manager.contents(atPath: bundled + "/" + name) == manager.contents(atPath: fixtures + "/" + name),
                "\(name)")
        }
    }
}
