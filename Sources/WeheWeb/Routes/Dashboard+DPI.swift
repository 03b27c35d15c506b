import Foundation
import WeheCore
import WeheStore

extension Dashboard {
    /// Finished DPI searches started from the test `key` (its probes replayed that test), newest first.
    func dpiSearches(of key: TestKey, info: RequestInfo) async throws -> [DPISearchView] {
        let results = try await configuration.store.dpiResults(
            DPIResultQuery(userID: key.userID, historyCount: key.historyCount, limit: 10))
        return results.map { DPIViews.search($0, strings: info.strings, formatter: info.formatter) }
    }

    /// The operator's list of rules found by DPI searches, by provider then app (newest first within each), at most
    /// 500 searches.
    func dpiRulesHTML(_ info: RequestInfo) async throws -> String {
        let strings = info.strings
        let formatter = info.formatter
        let results = try await configuration.store.dpiResults(DPIResultQuery(rulesOnly: true, limit: 500))
        let ordered = results.sorted {
            ($0.id.carrierName, names.displayName(ofReplay: $0.id.replayName), $1.finishedAt)
                < ($1.id.carrierName, names.displayName(ofReplay: $1.id.replayName), $0.finishedAt)
        }
        var rows: [DPIRuleRow] = []
        for result in ordered {
            let key = TestKey(userID: result.id.userID, historyCount: result.historyCount)
            for rule in result.rules {
                rows.append(
                    DPIRuleRow(
                        provider: result.id.carrierName, app: names.displayName(ofReplay: result.id.replayName),
                        location: DPIViews.location(rule, strings: strings), text: DPIViews.printable(rule.content),
                        hex: DPIViews.hex(rule.content),
                        cost: DPIViews.cost(result, strings: strings, formatter: formatter),
                        date: formatter.dateTime(result.finishedAt), testHref: testHref(key, info: info)))
            }
        }
        let content = DPIRulesContent(intro: strings["dpi_intro"], rows: rows, hasRows: !rows.isEmpty)
        let context = PageContext(
            chrome: Chrome(
                info: info, title: strings["section_dpi"], basePath: configuration.operatorPath, operatorLinks: true,
                section: .dpi),
            t: strings.table, page: content)
        return try renderer.render("dpi-rules", context)
    }
}
