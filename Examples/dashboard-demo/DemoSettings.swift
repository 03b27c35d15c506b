import Foundation
import WeheWeb

/// The demo's settings page: a few settings kept in memory, checked like `wehe settings set` checks them (a fraction
/// in [0, 1] or "default", one of a list), so that the page's refusals and changes can be tried in a browser.
actor DemoSettings: SettingsEditor {
    private var values: [String: String] = [
        "server": "wehe4.meddle.mobi", "p-threshold": "default", "area-threshold": "default", "rules": "android",
        "confirmation": "on", "language": "auto", "provider": "none",
    ]
    private static let order = [
        "server", "area-threshold", "p-threshold", "rules", "confirmation", "language", "provider",
    ]
    nonisolated let formToken = UUID().uuidString

    func fields() async throws -> [SettingField] {
        Self.order.map { SettingField(key: $0, value: values[$0] ?? "", help: Self.help[$0] ?? "") }
    }

    func apply(_ changes: [(key: String, value: String)]) async throws {
        var next = values
        for (key, value) in changes {
            guard next[key] != nil else { throw DemoError(message: "unknown setting '\(key)'") }
            switch key {
            case "area-threshold", "p-threshold":
                guard value == "default" || Double(value).map({ $0 >= 0 && $0 <= 1 }) == true else {
                    throw DemoError(message: "\(key) must be a fraction in [0, 1] or 'default'")
                }
            case "rules":
                guard ["android", "ios"].contains(value) else {
                    throw DemoError(message: "rules must be android or ios")
                }
            case "confirmation":
                guard ["on", "off"].contains(value) else { throw DemoError(message: "confirmation must be on or off") }
            case "language":
                guard ["en", "fr", "auto"].contains(value) else {
                    throw DemoError(message: "language must be en, fr or auto")
                }
            default: break
            }
            next[key] = value
        }
        values = next
    }

    private static let help = [
        "server": "Replay server: a host name or address (the default name means the public fleet).",
        "area-threshold": "Area threshold: a fraction in [0, 1], or default.",
        "p-threshold": "KS p-value threshold: a fraction in [0, 1], or default.",
        "rules": "Verdict rules: android or ios.",
        "confirmation": "on: a differentiation or an unclear result is run again to confirm it; off.",
        "language": "Language: en, fr or auto.",
        "provider": "Provider name shown instead of the AS name, or none.",
    ]
}
