import Foundation

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

    /// `@` and 9 characters of `[0-9a-z]`, like the command-line client.
    static func makeUserID() -> String {
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyz")
        return "@" + String((0..<9).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }

    /// Keys accepted by `wehe settings set`.
    static let keys = [
        "server", "cert", "locate-url", "locate-ca", "site", "user-id", "area-threshold", "p-threshold", "rules",
        "confirmation", "language",
        "consent",
    ]

    /// Changes one setting from text.
    mutating func set(_ key: String, _ value: String) throws {
        func fraction() throws -> Double? {
            if value == "default" { return nil }
            guard let number = Double(value), number.isFinite, number >= 0, number <= 1 else {
                throw CLIError(code: .invalidInput, "\(key) must be a fraction in [0, 1] or 'default'")
            }
            return number
        }
        func flag() throws -> Bool {
            switch value.lowercased() {
            case "on", "true", "yes", "1": return true
            case "off", "false", "no", "0": return false
            default: throw CLIError(code: .invalidInput, "\(key) must be on or off")
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
                throw CLIError(code: .missingInput, "\(key): no readable file at \(value) (or 'none' to clear it)")
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
            else { throw CLIError(code: .invalidInput, "user-id must be 2-64 letters or digits (optionally '@')") }
            userID = value
        case "area-threshold": areaThreshold = try fraction()
        case "p-threshold": ksPValueThreshold = try fraction()
        case "rules":
            guard value == "android" || value == "ios" else {
                throw CLIError(code: .invalidInput, "rules must be android or ios")
            }
            ruleSet = value
        case "confirmation": confirmation = try flag()
        case "language":
            guard value == "en" || value == "fr" || value == "auto" else {
                throw CLIError(code: .invalidInput, "language must be en, fr or auto")
            }
            language = value == "auto" ? nil : value
        case "consent": consentAccepted = try flag()
        default:
            throw CLIError(code: .invalidInput, "unknown setting '\(key)'; known: \(Self.keys.joined(separator: ", "))")
        }
    }
}
