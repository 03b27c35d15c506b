import Foundation
import WeheClient

/// What `wehe` remembers between runs, in `<data directory>/settings.json`: server, certificate, user id, the last
/// history count, thresholds, language and consent. The default server is the published clients' default name,
/// which means "find a server of the public fleet through M-Lab's locate service".
struct WeheSettings: Codable, Equatable {
    var server: String = "wehe4.meddle.mobi"
    var certificate: String?
    /// The locate service's base URL (`nil`: M-Lab's).
    var locateURL: String?
    /// A CA (PEM file) trusted next to the system's roots for the locate service and the access envelopes.
    var locateCA: String?
    /// The site to ask locate for (`nil`: the nearest).
    var site: String?
    var userID: String = WeheSettings.makeUserID()
    var lastHistoryCount: Int = 0
    var areaThreshold: Double?
    var ksPValueThreshold: Double?
    var ruleSet: String = "android"
    var confirmation: Bool = true
    var language: String?
    var consentAccepted: Bool = false
    /// The client's own IP-to-AS table (RouteViews prefix file, AS-names file), used when the server answers none.
    var asnPrefixes: String?
    var asnNames: String?
    /// The provider name shown and stored instead of the AS name (`--provider`).
    var provider: String?
    /// `wehe monitor`: the monthly allowance and the per-run cap (bytes), quiet hours (`23-7`), whether metered
    /// connections may be used, the tests (none: the cheap default set) and the command run on a verdict change.
    var monitorAllowance: Int?
    var monitorPerRun: Int?
    var monitorQuietHours: String?
    var monitorAllowMetered: Bool?
    var monitorTests: [String]?
    var monitorOnChange: String?

    /// `@` and 9 characters of `[0-9a-z]`, like the command-line client.
    static func makeUserID() -> String {
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyz")
        return "@" + String((0..<9).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }

    /// Keys accepted by `wehe settings set`.
    static let keys = [
        "server", "cert", "locate-url", "locate-ca", "site", "user-id", "area-threshold", "p-threshold", "rules",
        "confirmation", "language",
        "consent", "asn-prefixes", "asn-names", "provider",
        "allowance", "per-run", "quiet-hours", "allow-metered", "monitor-tests", "on-change",
    ]

    /// Changes one setting from text; errors are in the language the command chose.
    mutating func set(_ key: String, _ value: String) throws {
        let strings = Strings.active
        func invalid(_ english: String, _ french: String) -> CLIError {
            CLIError(code: .invalidInput, strings.language == .fr ? french : english)
        }
        func fraction() throws -> Double? {
            if value == "default" { return nil }
            guard let number = Double(value), number.isFinite, number >= 0, number <= 1 else {
                throw invalid(
                    "\(key) must be a fraction in [0, 1] or 'default'",
                    "\(key) doit être une fraction dans [0, 1] ou « default »")
            }
            return number
        }
        func flag() throws -> Bool {
            switch value.lowercased() {
            case "on", "true", "yes", "1": return true
            case "off", "false", "no", "0": return false
            default: throw invalid("\(key) must be on or off", "\(key) doit valoir on ou off")
            }
        }
        /// A PEM file setting: `none` (or empty) clears it; a path must name a readable file, made absolute so that
        /// the setting still works from another directory.
        func pemFile() throws -> String? {
            if value.isEmpty || value == "none" { return nil }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: value, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isReadableFile(atPath: value)
            else {
                throw CLIError(
                    code: .missingInput,
                    strings.language == .fr
                        ? "\(key) : aucun fichier lisible à \(value) (ou « none » pour l'effacer)"
                        : "\(key): no readable file at \(value) (or 'none' to clear it)")
            }
            return URL(fileURLWithPath: value).standardizedFileURL.path
        }
        switch key {
        case "server": server = value
        // The key has the name of the option (--cert); "certificate" stays accepted.
        case "cert", "certificate": certificate = try pemFile()
        case "locate-url": locateURL = value.isEmpty || value == "default" ? nil : value
        case "locate-ca": locateCA = try pemFile()
        case "site": site = value.isEmpty || value == "nearest" ? nil : value
        case "user-id":
            guard value.utf8.count >= 2, value.utf8.count <= 64,
                value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "@") })
            else {
                throw invalid(
                    "user-id must be 2-64 letters or digits (optionally '@')",
                    "user-id doit compter de 2 à 64 lettres ou chiffres (et éventuellement « @ »)")
            }
            userID = value
        case "area-threshold": areaThreshold = try fraction()
        case "p-threshold": ksPValueThreshold = try fraction()
        case "rules":
            guard value == "android" || value == "ios" else {
                throw invalid("rules must be android or ios", "rules doit valoir android ou ios")
            }
            ruleSet = value
        case "confirmation": confirmation = try flag()
        case "language":
            guard value == "en" || value == "fr" || value == "auto" else {
                throw invalid("language must be en, fr or auto", "language doit valoir en, fr ou auto")
            }
            language = value == "auto" ? nil : value
        case "consent": consentAccepted = try flag()
        case "asn-prefixes": asnPrefixes = try pemFile()
        case "asn-names": asnNames = try pemFile()
        case "provider":
            let name = value.trimmingCharacters(in: .whitespaces)
            guard name.count <= 120, !name.contains(where: { $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true })
            else {
                throw invalid(
                    "provider must be one line of at most 120 characters ('none' clears it)",
                    "provider doit tenir sur une ligne de 120 caractères au plus (« none » l'efface)")
            }
            provider = name.isEmpty || name == "none" ? nil : name
        case "allowance", "per-run":
            let bytes: Int?
            do {
                bytes = value == "default" ? nil : try ByteSize.parse(value)
            } catch {
                throw invalid("\(key): \(error)", "\(key) : une taille comme 1GB, 500MB ou 250kB, ou « default »")
            }
            if key == "allowance" { monitorAllowance = bytes } else { monitorPerRun = bytes }
        case "quiet-hours":
            do {
                monitorQuietHours = try QuietHours.parse(value)?.description
            } catch {
                throw invalid("\(error)", "quiet-hours : deux heures de 0 à 23 comme 23-7, ou « none »")
            }
        case "allow-metered": monitorAllowMetered = try flag()
        case "monitor-tests":
            let ids = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            monitorTests = ids.isEmpty || value == "default" ? nil : ids
        case "on-change":
            monitorOnChange = value.isEmpty || value == "none" ? nil : value
        default:
            let guess = Suggestions.closest(to: key, among: Self.keys, limit: 1).first
            let known = Self.keys.joined(separator: ", ")
            throw CLIError(
                code: .invalidInput,
                strings.language == .fr
                    ? "réglage inconnu « \(key) »" + (guess.map { " ; vouliez-vous dire « \($0) » ?" } ?? "")
                        + " (réglages : \(known))"
                    : "unknown setting '\(key)'" + (guess.map { "; did you mean '\($0)'?" } ?? "")
                        + " (known: \(known))")
        }
    }
}

extension WeheSettings {
    /// Reads a settings file in which any key may be missing (one written by an earlier version, or by hand): a
    /// missing key has its default, so that a setting added later never makes an older file unreadable.
    init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        server = try container.decodeIfPresent(String.self, forKey: .server) ?? server
        certificate = try container.decodeIfPresent(String.self, forKey: .certificate)
        locateURL = try container.decodeIfPresent(String.self, forKey: .locateURL)
        locateCA = try container.decodeIfPresent(String.self, forKey: .locateCA)
        site = try container.decodeIfPresent(String.self, forKey: .site)
        userID = try container.decodeIfPresent(String.self, forKey: .userID) ?? userID
        lastHistoryCount = try container.decodeIfPresent(Int.self, forKey: .lastHistoryCount) ?? lastHistoryCount
        areaThreshold = try container.decodeIfPresent(Double.self, forKey: .areaThreshold)
        ksPValueThreshold = try container.decodeIfPresent(Double.self, forKey: .ksPValueThreshold)
        ruleSet = try container.decodeIfPresent(String.self, forKey: .ruleSet) ?? ruleSet
        confirmation = try container.decodeIfPresent(Bool.self, forKey: .confirmation) ?? confirmation
        language = try container.decodeIfPresent(String.self, forKey: .language)
        consentAccepted = try container.decodeIfPresent(Bool.self, forKey: .consentAccepted) ?? consentAccepted
        asnPrefixes = try container.decodeIfPresent(String.self, forKey: .asnPrefixes)
        asnNames = try container.decodeIfPresent(String.self, forKey: .asnNames)
        provider = try container.decodeIfPresent(String.self, forKey: .provider)
        monitorAllowance = try container.decodeIfPresent(Int.self, forKey: .monitorAllowance)
        monitorPerRun = try container.decodeIfPresent(Int.self, forKey: .monitorPerRun)
        monitorQuietHours = try container.decodeIfPresent(String.self, forKey: .monitorQuietHours)
        monitorAllowMetered = try container.decodeIfPresent(Bool.self, forKey: .monitorAllowMetered)
        monitorTests = try container.decodeIfPresent([String].self, forKey: .monitorTests)
        monitorOnChange = try container.decodeIfPresent(String.self, forKey: .monitorOnChange)
    }
}
