/// Shows and changes the person's settings for the dashboard's settings page. WeheWeb only drives it; `wehe
/// dashboard` provides it with the settings of `wehe settings` (the same keys, the same validation, the same
/// read-modify-write of the settings file under its lock).
package protocol SettingsEditor: Sendable {
    /// Every setting, in the order the page lists them, with its value as text that `apply` accepts back.
    func fields() async throws -> [SettingField]

    /// Changes the given keys to the given texts at once: all of them or, when one is refused, none. Keys not
    /// given keep what the settings file holds, also when another command changed them since the page was shown.
    /// - Throws: an error whose description says, in a sentence, what was refused and why.
    func apply(_ changes: [(key: String, value: String)]) async throws

    /// A secret the settings form carries and the change must return: a page of another site cannot know it, so it
    /// cannot change the settings through the person's browser (cross-site request forgery).
    var formToken: String { get }
}

/// One setting as the page shows it.
package struct SettingField: Sendable, Hashable {
    /// The key of `wehe settings set` (`server`, `p-threshold`).
    package var key: String
    /// The value as text (`0.01`, `default`, `on`).
    package var value: String
    /// What it is and what it accepts, in a sentence.
    package var help: String

    /// Creates a field.
    package init(key: String, value: String, help: String) {
        self.key = key
        self.value = value
        self.help = help
    }
}
