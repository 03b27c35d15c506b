import Testing
import WeheTestKit

@Suite("layering (ARCHITECTURE.md section 1)")
struct ArchitectureTests {
    @Test("no source folder imports a target of its own or a higher layer")
    func packageObeysLayers() throws {
        let folders = try LayerRules.loadFolders(packageRoot: TestResources.packageRoot)
        #expect(folders.count >= 6)
        let violations = LayerRules.check(folders)
        #expect(violations.isEmpty, "\(violations.map(\.description).joined(separator: "\n"))")
    }

    @Test("the checker catches same-layer, upward and test-kit imports and unknown folders")
    func checkerCatchesViolations() {
        let folders = [
            LayerRules.Folder(
                name: "WeheCore", isExample: false, files: [("A.swift", "import Foundation\npublic import WeheWire\n")]),
            LayerRules.Folder(
                name: "WeheWire", isExample: false, files: [("B.swift", "@testable import WeheAnalysis")]),
            LayerRules.Folder(
                name: "wehe", isExample: false, files: [("C.swift", "import WeheTestKit\nimport WeheCore")]),
            LayerRules.Folder(name: "WeheMystery", isExample: false, files: []),
            LayerRules.Folder(
                name: "demo", isExample: true, files: [("D.swift", "import WeheTestKit\nimport struct WeheCore.CSPair")]
            ),
        ]
        let messages = LayerRules.check(folders).map(\.description)
        #expect(messages.contains { $0.hasPrefix("WeheCore/A.swift: upward import of WeheWire") })
        #expect(messages.contains { $0.hasPrefix("WeheWire/B.swift: same-layer import of WeheAnalysis") })
        #expect(messages.contains { $0 == "wehe/C.swift: production executable imports WeheTestKit" })
        #expect(messages.contains { $0.hasPrefix("WeheMystery/: folder is missing") })
        #expect(!messages.contains { $0.hasPrefix("demo/") })
        #expect(messages.count == 4)
    }

    @Test("import parsing handles attributes, access levels and kinds")
    func importParsing() {
        let text =
            "@_exported import WeheCore\npackage import WeheWire\nimport func WeheStatistics.mean\n// import WeheX\nlet importance = 1"
        #expect(LayerRules.imports(in: text) == ["WeheCore", "WeheWire", "WeheStatistics"])
    }

    @Test("no source or test uses a Foundation API that has crashed the test process on Linux")
    func noRuntimeHazards() throws {
        let findings = try RuntimeHazards.findings(packageRoot: TestResources.packageRoot)
        #expect(findings.isEmpty, "\(findings.map(\.description).joined(separator: "\n"))")
    }

    @Test("the hazard check finds each use in code and none in comments")
    func hazardCheckFindsUses() {
        let text = """
            // readabilityHandler, URLSession and Process() are named in comments only here
            handle.readabilityHandler = { _ in }
            let (data, _) = try await URLSession.shared.data(from: url)  // a trailing comment
            let child = Process()
            """
        let found = RuntimeHazards.findings(in: text, file: "X.swift")
        #expect(found.map(\.line) == [2, 3, 4])
        #expect(found.map(\.marker) == ["readabilityHandler", "URLSession", "= Process()"])
    }
}
