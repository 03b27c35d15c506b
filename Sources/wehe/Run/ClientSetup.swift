import Foundation
import WeheClient

/// How the client runs a test, from the command-line options over the settings: the one place that builds the
/// `ReplayClientConfiguration` for `wehe run` and for tests started from `wehe dashboard`.
struct ClientSetup: Sendable {
    /// `--server`, overriding the settings.
    var server: String?
    /// `--cert`, overriding the settings.
    var certificate: String?
    /// Side-channel port.
    var sideChannelPort: Int
    /// Analyzer port.
    var analyzerPort: Int
    /// `--rules`.
    var rules: String?
    /// `--area-threshold`.
    var areaThreshold: Double?
    /// `--p-threshold`.
    var pValueThreshold: Double?
    /// `--no-confirmation`.
    var noConfirmation: Bool
    /// `--mlab`, `--locate-url`, `--locate-ca`, `--site`, `--resolve`.
    var fleet = FleetOptions()
    /// `--asn-prefixes`, `--asn-names`, `--provider`.
    var network = NetworkSetup()

    /// The client configuration for a test with `settings` (history counts come from, and are recorded in, the
    /// settings file of `directory`, which changes nothing else there). The caller sets the result store.
    /// - Throws: `CLIError` for an unreadable certificate or invalid thresholds.
    func configuration(settings: WeheSettings, directory: DataDirectory) throws -> ReplayClientConfiguration {
        var configuration = ReplayClientConfiguration(
            server: server ?? settings.server, userID: settings.userID,
            trustedCertificatesPEM: try RunCommand.readCertificate(certificatePath(settings)),
            sideChannelPort: sideChannelPort, analyzerPort: analyzerPort,
            verdictRules: try TestSelection.verdictRules(
                rules: rules ?? settings.ruleSet, area: areaThreshold ?? settings.areaThreshold,
                pValue: pValueThreshold ?? settings.ksPValueThreshold),
            confirmation: settings.confirmation && !noConfirmation,
            historyCounter: SettingsHistoryCounter(directory: directory))
        configuration.asTable = try network.table(settings: settings)
        configuration.providerName = network.providerName(settings: settings)
        return configuration
    }
}

extension ClientSetup {
    /// The certificate file named by `--cert` or the settings.
    func certificatePath(_ settings: WeheSettings) -> String? {
        certificate ?? settings.certificate
    }

    /// Whether a test takes the fleet path: `--mlab`, or the server (option, else setting) is the published
    /// default name. `--server <host>` bypasses locate.
    func usesFleet(_ settings: WeheSettings) throws -> Bool {
        if fleet.mlab {
            if let server, !FleetConfiguration.meansFleet(server) {
                throw CLIError(code: .invalidInput, "--mlab and --server \(server) contradict each other; pick one")
            }
            return true
        }
        return FleetConfiguration.meansFleet(server ?? settings.server)
    }

    /// How to reach the fleet, when a test takes the fleet path (`nil` otherwise): the locate service, its CA, the
    /// site, address overrides, and the certificate the fleet's servers are checked against (`--cert` or the
    /// setting when given, else the Wehe CA found next to the replays).
    /// - Throws: `CLIError` for an unreadable CA file, a malformed `--resolve`, or a missing Wehe CA.
    func fleetPlan(settings: WeheSettings, replayDirectory: String?) throws -> FleetPlan? {
        guard try usesFleet(settings) else { return nil }
        let configuration = try fleetConfiguration(settings: settings)
        let trust: FleetTrust
        if let path = certificatePath(settings) {
            trust = FleetTrust(path: path, label: path)
        } else {
            trust = try FleetTrust.weheCA(replayDirectory: replayDirectory)
        }
        return FleetPlan(configuration: configuration, trust: trust)
    }

    /// The locate service, its CA, the site and the address overrides, from the options over the settings.
    func fleetConfiguration(settings: WeheSettings) throws -> FleetConfiguration {
        var overrides: [String: String] = [:]
        for entry in fleet.resolve {
            guard let colon = entry.firstIndex(of: ":"), colon != entry.startIndex,
                entry.index(after: colon) != entry.endIndex
            else {
                throw CLIError(code: .invalidInput, "--resolve wants host:address, not '\(entry)'")
            }
            overrides[String(entry[..<colon])] = String(entry[entry.index(after: colon)...])
        }
        var configuration = FleetConfiguration(
            locateURL: fleet.locateURL ?? settings.locateURL ?? FleetConfiguration.defaultLocateURL,
            additionalTrustPEM: try RunCommand.readCertificate(fleet.locateCA ?? settings.locateCA),
            sites: (fleet.site ?? settings.site).map { [$0] } ?? [],
            addressOverrides: overrides)
        if let path = fleet.locateTokenFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError(code: .missingInput, "cannot read the locate token file \(path)")
            }
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty, !token.contains(where: { $0.isWhitespace || $0.isNewline }) else {
                throw CLIError(
                    code: .invalidInput, "the locate token file \(path) must hold one token (no spaces or lines)")
            }
            configuration.priorityToken = token
        }
        return configuration
    }

    /// What a TLS failure should name as the expected certificate.
    func expectedCertificate(settings: WeheSettings, plan: FleetPlan?) -> String {
        if let plan { return plan.trust.label }
        if let path = certificatePath(settings) { return path }
        return "the system's trust store"
    }
}
