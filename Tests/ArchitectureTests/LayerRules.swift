import Foundation

/// The layer map of ARCHITECTURE.md and the checker that enforces it on source folders.
enum LayerRules {
    /// Every source folder's module and its layer. A folder missing here fails the check.
    static let layers: [String: Int] = [
        "WeheCore": 0, "WeheStatistics": 0,
        "WeheWire": 1, "WeheReplay": 1, "WeheAnalysis": 1, "WeheStore": 1, "WehePcap": 1,
        "WeheStoreSQL": 2, "WeheClient": 2, "WeheServer": 2, "WeheWeb": 2, "WeheTestbed": 2, "WeheRecord": 2,
        "WeheTestKit": 3,
        "wehe": 4, "wehe-server": 4, "wehe-bench": 4,
    ]
    /// Folders under `Examples/` are demos at layer 4.
    static let exampleLayer = 4
    /// Executables that ship to users: they must not import test support.
    static let productionExecutables: Set<String> = ["wehe", "wehe-server"]

    /// One violation.
    struct Violation: Hashable, CustomStringConvertible {
        let folder: String
        let file: String
        let message: String
        var description: String { "\(folder)/\(file): \(message)" }
    }

    /// A source folder: its module name and its files' contents.
    struct Folder {
        let name: String
        let isExample: Bool
        let files: [(name: String, text: String)]
    }

    /// First-party modules imported by a file (`import X`, `public import X`, `@testable import X`, …).
    static func imports(in text: String) -> [String] {
        var modules: [String] = []
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var words = rawLine.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            while let first = words.first,
                first.hasPrefix("@") || ["public", "package", "internal", "private", "fileprivate"].contains(first)
            {
                words.removeFirst()
            }
            guard words.count >= 2, words[0] == "import" else { continue }
            var module = words[1]
            if ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"].contains(module),
                words.count >= 3
            {
                module = words[2]
            }
            module = String(module.prefix { $0 != "." })
            modules.append(module)
        }
        return modules
    }

    /// Checks folders against the rules and returns every violation.
    static func check(_ folders: [Folder]) -> [Violation] {
        var violations: [Violation] = []
        let firstParty = Set(layers.keys.map { $0.replacingOccurrences(of: "-", with: "_") })
        func layer(ofModule module: String) -> Int? {
            layers[module] ?? layers[module.replacingOccurrences(of: "_", with: "-")]
        }
        for folder in folders {
            guard let own = folder.isExample ? exampleLayer : layers[folder.name] else {
                violations.append(
                    Violation(folder: folder.name, file: "", message: "folder is missing from the layer map"))
                continue
            }
            for file in folder.files {
                for module in imports(in: file.text) where firstParty.contains(module) {
                    guard let imported = layer(ofModule: module) else { continue }
                    if imported >= own {
                        let kind = imported == own ? "same-layer" : "upward"
                        violations.append(
                            Violation(
                                folder: folder.name,
                                file: file.name,
                                message: "\(kind) import of \(module) (layer \(imported)) from layer \(own)"
                            )
                        )
                    }
                    if productionExecutables.contains(folder.name), module == "WeheTestKit" {
                        violations.append(
                            Violation(
                                folder: folder.name, file: file.name,
                                message: "production executable imports WeheTestKit")
                        )
                    }
                }
            }
        }
        return violations
    }

    /// Reads every source folder of the package: `Sources/*`, `Benchmarks/*`, `Examples/*`.
    static func loadFolders(packageRoot: String) throws -> [Folder] {
        let manager = FileManager.default
        var folders: [Folder] = []
        for (parent, isExample) in [("Sources", false), ("Benchmarks", false), ("Examples", true)] {
            let base = packageRoot + "/" + parent
            guard let names = try? manager.contentsOfDirectory(atPath: base) else { continue }
            for name in names.sorted() {
                var isDirectory: ObjCBool = false
                guard manager.fileExists(atPath: base + "/" + name, isDirectory: &isDirectory), isDirectory.boolValue
                else {
                    continue
                }
                var files: [(String, String)] = []
                if let enumerator = manager.enumerator(atPath: base + "/" + name) {
                    for case let path as String in enumerator where path.hasSuffix(".swift") {
                        files.append(
                            (path, try String(contentsOfFile: base + "/" + name + "/" + path, encoding: .utf8)))
                    }
                }
                folders.append(Folder(name: name, isExample: isExample, files: files))
            }
        }
        return folders
    }
}
