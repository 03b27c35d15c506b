import Foundation
import WeheStore

/// One finished DPI search as a test page shows it: the outcome, its cost, and each rule with
/// the matched bytes highlighted inside a hex dump of the packet.
struct DPISearchView {
    var heading: String
    var message: String
    var cost: String
    var found: Bool
    var rules: [DPIRuleView]
}

/// One rule: where it is, the matched bytes as text and hex, and the packet around it.
struct DPIRuleView {
    var location: String
    var text: String
    var hex: String
    var rows: [DPIDumpRow]
    var hasRows: Bool
}

/// Eight bytes of a packet dump.
struct DPIDumpRow {
    var offset: String
    var cells: [DPIByteCell]
}

/// One byte of a dump: hex, printable character (`.` otherwise), whether the rule matched it.
struct DPIByteCell {
    var hex: String
    var char: String
    var matched: Bool
}

/// A row of the operator's list of found rules.
struct DPIRuleRow {
    var provider: String
    var app: String
    var location: String
    var text: String
    var hex: String
    var cost: String
    var date: String
    var testHref: String
}

/// The operator page of found rules.
struct DPIRulesContent {
    var intro: String
    var rows: [DPIRuleRow]
    var hasRows: Bool
}

enum DPIViews {
    /// Bytes per dump row (8 keep a row inside a 390-pixel screen).
    static let rowWidth = 8
    /// Bytes of context shown before and after the match.
    static let context = 16

    /// `Host: example` style text: printable ASCII kept, other bytes as `.`.
    static func printable(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: ".") }, as: UTF8.self)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }.joined(separator: " ")
    }

    /// The dump rows around `rule` (from `context` bytes before to `context` after, whole rows).
    static func dump(_ rule: DPIFoundRule) -> [DPIDumpRow] {
        guard let payload = rule.packetPayload, rule.right <= payload.count, rule.left < rule.right else { return [] }
        let start = max(0, rule.left - context) / rowWidth * rowWidth
        let end = min(payload.count, rule.right + context)
        var rows: [DPIDumpRow] = []
        var offset = start
        while offset < end {
            let cells = (offset..<min(offset + rowWidth, end)).map { index in
                DPIByteCell(
                    hex: hex([payload[index]]), char: printable([payload[index]]),
                    matched: index >= rule.left && index < rule.right)
            }
            rows.append(DPIDumpRow(offset: String(offset), cells: cells))
            offset += rowWidth
        }
        return rows
    }

    static func location(_ rule: DPIFoundRule, strings: Strings) -> String {
        strings.format(
            "dpi_rule_location", ["packet": rule.packet, "left": String(rule.left), "last": String(rule.right - 1)])
    }

    static func cost(_ result: DPIResultRecord, strings: Strings, formatter: Formatter) -> String {
        strings.format(
            "dpi_cost",
            [
                "probes": formatter.integer(result.probes),
                "megabytes": formatter.number(Double(result.bytesUsed) / 1_000_000, digits: 1),
            ])
    }

    static func search(_ result: DPIResultRecord, strings: Strings, formatter: Formatter) -> DPISearchView {
        DPISearchView(
            heading: strings.format(
                "dpi_search_heading",
                ["provider": result.id.carrierName, "date": formatter.dateTime(result.finishedAt)]
            ),
            message: result.foundRule
                ? strings["dpi_found"]
                : strings[result.outcome == "budgetExhausted" ? "dpi_stopped" : "dpi_no_rule"] + " ("
                    + result.message + ")",
            cost: cost(result, strings: strings, formatter: formatter), found: result.foundRule,
            rules: result.rules.map { rule in
                let rows = dump(rule)
                return DPIRuleView(
                    location: location(rule, strings: strings), text: printable(rule.content), hex: hex(rule.content),
                    rows: rows, hasRows: !rows.isEmpty)
            })
    }
}
