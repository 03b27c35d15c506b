import Foundation
import WeheAnalysis
import WeheClient
import WeheCore
import WeheWire

/// Loading tests from a replay directory, shared by `wehe run` and `wehe demo`.
enum TestSelection {
    /// The decision rule from a rule-set name and optional thresholds.
    static func verdictRules(rules: String, area: Double?, pValue: Double?) throws -> VerdictRules {
        guard let ruleSet = VerdictRuleSet(rawValue: rules) else {
            throw CLIError(code: .invalidInput, "--rules must be android or ios")
        }
        let rules = VerdictRules(ruleSet: ruleSet, customAreaThreshold: area, customKSPValueThreshold: pValue)
        do {
            return try rules.validated()
        } catch {
            throw CLIError(code: .invalidInput, "\(error)")
        }
    }

    /// The catalog of a replay directory.
    static func catalog(_ library: ReplayLibrary) throws -> AppCatalog {
        do {
            return try library.catalog()
        } catch {
            throw CLIError(code: error.code == .unreadable ? .missingInput : .invalidInput, error.description)
        }
    }

    /// Loads the named tests and their traces.
    /// - Throws: `CLIError` `.usage` for a name the catalog does not know (with the closest ids and names), or the
    ///   client's error for a missing or invalid trace.
    static func load(_ ids: [String], from library: ReplayLibrary, catalog: AppCatalog) throws -> [ReplayClient.Test] {
        var selected: [ReplayClient.Test] = []
        for id in ids {
            guard catalog.entry(named: id) != nil else { throw unknownTest(id, catalog) }
            do {
                selected.append(try ReplayClient.Test.load(id, from: library, catalog: catalog))
            } catch {
                throw CLIError(error)
            }
        }
        return selected
    }

    /// A test name the catalog does not know: a usage error, with the tests whose id or name is closest.
    static func unknownTest(_ name: String, _ catalog: AppCatalog) -> CLIError {
        let entries = catalog.entries
        let candidates = entries.map(\.id) + entries.map(\.name)
        var suggested: [CatalogEntry] = []
        for match in Suggestions.closest(to: name, among: candidates, limit: 6) {
            guard let entry = entries.first(where: { $0.id == match || $0.name == match }),
                !suggested.contains(where: { $0.id == entry.id })
            else { continue }
            suggested.append(entry)
        }
        let names = suggested.prefix(3).map { (id: $0.id, name: $0.name.lowercased() == $0.id ? nil : $0.name) }
        return CLIError(code: .usage, Strings.active.unknownTest(name, suggestions: names))
    }

    /// Whether both traces of a catalog test are present.
    static func available(_ entry: CatalogEntry, _ library: ReplayLibrary, _ catalog: AppCatalog) -> Bool {
        guard let control = catalog.controlFile(for: entry) else { return false }
        let manager = FileManager.default
        return manager.fileExists(atPath: library.path(of: entry.originalFile))
            && manager.fileExists(atPath: library.path(of: control))
    }
}
