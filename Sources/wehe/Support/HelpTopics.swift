import ArgumentParser

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension CLIError.Code {
    /// Where a command's help sends the reader for the exit codes (the whole table would push the overview and
    /// the options off the screen).
    static let pointer = "Exit codes: 0 success, 64 usage error, others in `wehe help exit-codes`."

    /// The codes of `table`, one (code, meaning) pair each, in the table's order.
    static var entries: [(code: String, meaning: String)] {
        var text = table.replacingOccurrences(of: "\n", with: " ")
        if text.hasPrefix("Exit codes: ") { text.removeFirst("Exit codes: ".count) }
        if text.hasSuffix(".") { text.removeLast() }
        return text.split(separator: ";").compactMap { item in
            let words = item.split(separator: " ", maxSplits: 1)
            guard words.count == 2 else { return nil }
            return (String(words[0]), String(words[1]))
        }
    }

    /// `wehe help exit-codes`: one code a line, the meaning wrapped at word boundaries beside it.
    static func listing(width: Int) -> String {
        let lines = entries.map { entry in
            let code = String(repeating: " ", count: max(0, 5 - entry.code.count)) + entry.code + "  "
            let indent = String(repeating: " ", count: code.count)
            return code
                + Terminal.wrap(entry.meaning, width: width - code.count, indent: "")
                .split(separator: "\n").joined(separator: "\n" + indent)
        }
        return "EXIT CODES of wehe (the same for every command):\n" + lines.joined(separator: "\n")
    }
}

/// Help that the argument parser cannot lay out itself: `wehe --help` with the exit codes after the commands,
/// `wehe help exit-codes`, and "did you mean" for a mistyped command.
enum HelpTopics {
    /// The text to print for `arguments` when they ask for one of our help topics, else `nil`.
    static func answer(_ arguments: [String]) -> String? {
        let width = Terminal.columns(STDOUT_FILENO) ?? 80
        switch arguments {
        case [], ["--help"], ["-h"], ["help"]:
            return Wehe.helpMessage(columns: width).trimmingTrailingNewlines() + "\n\n"
                + Terminal.wrap(
                    "EXIT CODES: 0 success, 1 invalid input, 3 missing file, 4 consent not given, 5 server "
                        + "unreachable, 26 data directory not writable, 64 usage error, 130 interrupted; "
                        + "`wehe help exit-codes` lists every code.", width: width, indent: "  ")
        case ["help", "exit-codes"], ["help", "exit-code"]:
            return CLIError.Code.listing(width: width)
        default:
            return nil
        }
    }

    /// A word where a command of `root` (or of one of its commands) was expected, as a usage error naming the
    /// closest commands. `nil` when the words name commands, or reach options and arguments first; also for a
    /// command that runs a default command, unless the word is close to one of its commands (it may be an argument
    /// of the default).
    static func unknownCommand(_ arguments: [String], root: any ParsableCommand.Type) -> CLIError? {
        var command = root
        var path = [root._commandName]
        for argument in arguments {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !argument.hasPrefix("-"), argument != "help" else { return nil }
            if let next = subcommands.first(where: {
                $0._commandName == argument || $0.configuration.aliases.contains(argument)
            }) {
                command = next
                path.append(argument)
                continue
            }
            let known = subcommands.filter { $0.configuration.shouldDisplay }.map { $0._commandName }
            let suggestions = Suggestions.closest(to: argument, among: known)
            if command.configuration.defaultSubcommand != nil, suggestions.isEmpty { return nil }
            let strings = language(arguments)
            return CLIError(
                code: .usage,
                strings.unknownCommand(
                    argument, path: path.joined(separator: " "), suggestions: suggestions, known: known))
        }
        return nil
    }

    /// The language of `--lang` among the words, else the settings' choice of the environment.
    private static func language(_ arguments: [String]) -> Strings {
        if let index = arguments.firstIndex(of: "--lang"), index + 1 < arguments.count {
            return Strings.select(arguments[index + 1])
        }
        return Strings.select(nil)
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var copy = self
        while copy.last == "\n" { copy.removeLast() }
        return copy
    }
}
