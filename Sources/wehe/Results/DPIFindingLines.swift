import Foundation
import WeheStore

/// The DPI searches recorded for a test, as `wehe results show` prints them: what the classifier matched (the bytes
/// as text and hex, and where), or why no rule was found, with the search's cost; the same finding the dashboard's
/// test page shows.
enum DPIFindingLines {
    static func lines(_ results: [DPIResultRecord], strings: Strings) -> [String] {
        results.flatMap { result -> [String] in
            let megabytes = Terminal.format(
                Double(result.bytesUsed) / 1_000_000, decimals: 1, language: strings.language)
            let cost = strings.dpiCost(probes: result.probes, megabytes: megabytes)
            let date = ResultRecords.isoDate(result.finishedAt)
            guard result.foundRule else {
                return ["  " + strings.dpiNoRule(date: date, cost: cost, why: result.message)]
            }
            return ["  " + strings.dpiFound(date: date, cost: cost)]
                + result.rules.map { rule in
                    let text = String(
                        decoding: rule.content.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: ".") },
                        as: UTF8.self)
                    let hex = rule.content.map { String(format: "%02x", $0) }.joined(separator: " ")
                    return "    " + strings.dpiRule(packet: rule.packet, first: rule.left, last: rule.right - 1)
                        + ": \"\(text)\" (hex \(hex))"
                }
        }
    }
}
