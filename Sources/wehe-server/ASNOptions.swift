import ArgumentParser
import Foundation
import Logging
import WeheWire

/// The operator's IP-to-AS table: with it, each test records the AS of the client's own address, and the client
/// is told it with its result (never the AS of an address it names).
struct ASNOptions: ParsableArguments {
    @Option(
        name: .customLong("asn-prefixes"),
        help: ArgumentHelp(
            "IP-to-AS table in the RouteViews prefix-to-AS format (prefix<TAB>length<TAB>asn), e.g. CAIDA's pfx2as.",
            valueName: "file"))
    var asnPrefixes: String?

    @Option(
        name: .customLong("asn-names"),
        help: ArgumentHelp("AS names for --asn-prefixes (asn<TAB>name).", valueName: "file"))
    var asnNames: String?

    /// Loads the table (bad lines skipped, counted and logged); `nil` without `--asn-prefixes`.
    /// - Throws: `ValidationError` for `--asn-names` alone, an unreadable or oversized file.
    func table(logger: Logger) throws -> ASTable? {
        guard let asnPrefixes else {
            if asnNames != nil { throw ValidationError("--asn-names needs --asn-prefixes") }
            return nil
        }
        let started = ContinuousClock.now
        let table: ASTable
        do {
            table = try ASTable.load(prefixFile: asnPrefixes, namesFile: asnNames)
        } catch {
            throw ValidationError("cannot read the IP-to-AS table: \(error)")
        }
        let seconds = started.duration(to: .now)
        logger.notice(
            "IP-to-AS table loaded",
            metadata: [
                "wehe.asn.report": "\(table.report)", "wehe.asn.seconds": "\(seconds)",
                "wehe.asn.problems": "\(table.report.firstProblems.joined(separator: "; "))",
            ])
        if table.isEmpty { logger.warning("the IP-to-AS table has no usable route: no test will name its AS") }
        return table
    }
}
