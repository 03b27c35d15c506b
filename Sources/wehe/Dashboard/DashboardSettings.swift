import Foundation
import WeheClient
import WeheWeb

/// The settings page of `wehe dashboard`: the keys of `wehe settings`, changed by the same `WeheSettings.set`
/// (same validation, same messages) through the same read-modify-write of the settings file under its lock
/// (`DataDirectory.update`), so that a key the page did not change keeps what the file holds.
struct DashboardSettings: SettingsEditor {
    let directory: DataDirectory
    let strings: Strings
    /// A random secret per dashboard process, carried by the settings form (cross-site request forgery guard).
    let formToken: String

    init(directory: DataDirectory, strings: Strings) {
        self.directory = directory
        self.strings = strings
        var generator = SystemRandomNumberGenerator()
        formToken = (0..<4).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "-")
    }

    func fields() async throws -> [SettingField] {
        let settings = try directory.loadSettings()
        return WeheSettings.keys.map { key in
            SettingField(key: key, value: Self.text(of: key, in: settings), help: strings.settingHelp(key))
        }
    }

    func apply(_ changes: [(key: String, value: String)]) async throws {
        // One update for every change: under the lock, from the file as it is now; nothing is written when one
        // value is refused.
        _ = try directory.update { settings in
            for change in changes { try settings.set(change.key, change.value) }
        }
    }

    /// A setting's value as text that `WeheSettings.set` accepts back unchanged.
    static func text(of key: String, in settings: WeheSettings) -> String {
        func fraction(_ value: Double?) -> String { value.map { "\($0)" } ?? "default" }
        switch key {
        case "server": return settings.server
        case "cert", "certificate": return settings.certificate ?? "none"
        case "locate-url": return settings.locateURL ?? "default"
        case "locate-ca": return settings.locateCA ?? "none"
        case "site": return settings.site ?? "nearest"
        case "user-id": return settings.userID
        case "area-threshold": return fraction(settings.areaThreshold)
        case "p-threshold": return fraction(settings.ksPValueThreshold)
        case "rules": return settings.ruleSet
        case "confirmation": return settings.confirmation ? "on" : "off"
        case "language": return settings.language ?? "auto"
        case "consent": return settings.consentAccepted ? "on" : "off"
        case "asn-prefixes": return settings.asnPrefixes ?? "none"
        case "asn-names": return settings.asnNames ?? "none"
        case "provider": return settings.provider ?? "none"
        default: return ""
        }
    }
}
