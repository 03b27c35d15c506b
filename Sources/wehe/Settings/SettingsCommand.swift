import ArgumentParser

/// `wehe settings` (or `wehe settings show`) shows the settings; `wehe settings set <key> <value>` changes one.
///
/// The parent carries no options of its own: an option declared on both a parent and its subcommand is taken by
/// the parent, so each subcommand owns its `--data-dir`.
struct SettingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings", abstract: "Show or change the settings.",
        subcommands: [ShowSettings.self, SetSetting.self], defaultSubcommand: ShowSettings.self)
}
