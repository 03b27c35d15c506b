import Foundation
import Testing
import WeheTestKit

/// What a new user meets first: the help, a mistyped command or test name, an unusable data directory, French.
@Suite("wehe help, did you mean, French errors (built binary, no server)")
struct CommandLineUsabilityTests {
    let fixtures = TestResources.fixtureReplays

    @Test("wehe --help starts with the overview and ends with the exit codes, and names no ticket")
    func rootHelp() async throws {
        let help = try await CommandRunner.run("wehe", ["--help"])
        #expect(help.status == 0, "\(help.stderr)")
        let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("OVERVIEW:") == true, "\(help.stdout)")
        // The first screenful is about what wehe does and how to start, not exit codes.
        #expect(!lines.prefix(8).joined().contains("xit code"), "\(help.stdout)")
        #expect(help.stdout.contains("wehe demo"))
        let subcommands = try #require(help.stdout.range(of: "SUBCOMMANDS:"))
        let exitCodes = try #require(help.stdout.range(of: "EXIT CODES"))
        #expect(subcommands.upperBound < exitCodes.lowerBound)
        #expect(help.stdout.contains("wehe help exit-codes"))
        #expect(help.stdout.range(of: #"[Ii]ssues? [0-9]"#, options: .regularExpression) == nil)
        #expect(try await CommandRunner.run("wehe", ["help"]).stdout == help.stdout)
    }

    @Test("every command's help points to the exit codes instead of listing them, and names no ticket")
    func commandHelp() async throws {
        for command in [
            "run", "demo", "servers", "localize", "dpi", "settings", "results", "replays", "dashboard", "record",
            "monitor",
        ] {
            let help = try await CommandRunner.run("wehe", [command, "--help"])
            #expect(help.status == 0, "\(command): \(help.stderr)")
            #expect(!help.stdout.contains("25 result for another user"), "\(command)")
            #expect(help.stdout.range(of: #"[Ii]ssues? [0-9]"#, options: .regularExpression) == nil, "\(command)")
        }
        // Help text is wrapped to the width: compare with the line breaks folded into spaces.
        let runHelp = try await CommandRunner.run("wehe", ["run", "--help"]).stdout
        #expect(runHelp.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains("wehe help exit-codes"))
    }

    @Test("wehe help exit-codes lists one code a line")
    func exitCodes() async throws {
        let output = try await CommandRunner.run("wehe", ["help", "exit-codes"])
        #expect(output.status == 0, "\(output.stderr)")
        let codes = output.stdout.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first.flatMap { Int($0) }
        }
        for code in [0, 1, 3, 4, 5, 16, 26, 33, 64, 130] { #expect(codes.contains(code), "\(output.stdout)") }
        #expect(codes == codes.sorted(), "\(codes)")
        #expect(output.stdout.contains("64  usage error"), "\(output.stdout)")
    }

    @Test("a mistyped test name is a usage error (64) that names the closest test")
    func mistypedTest() async throws {
        let data = TestResources.temporaryDirectory("wehe-usability")
        let common = ["--replays", fixtures, "--data-dir", data, "--accept-consent"]
        let typo = try await CommandRunner.run("wehe", ["run", "tinywbe"] + common)
        #expect(typo.status == 64, "\(typo.stderr)")
        #expect(typo.stderr.contains("did you mean 'tinyweb' (Tiny Web)?"), "\(typo.stderr)")
        #expect(typo.stderr.split(separator: "\n").count == 1, "\(typo.stderr)")
        let name = try await CommandRunner.run("wehe", ["run", "Tiny Wbe"] + common)
        #expect(name.status == 64)
        #expect(name.stderr.contains("'tinyweb' (Tiny Web)"), "\(name.stderr)")
        let unknown = try await CommandRunner.run("wehe", ["run", "nosuchapp"] + common)
        #expect(unknown.status == 64)
        #expect(!unknown.stderr.contains("did you mean"), "\(unknown.stderr)")
        #expect(unknown.stderr.contains("`wehe replays` lists the tests"), "\(unknown.stderr)")
        // Nothing was asked or recorded for a name that was never going to run.
        #expect(!FileManager.default.fileExists(atPath: data + "/settings.json"))
    }

    @Test("a mistyped command is a usage error (64) that names the closest command")
    func mistypedCommand() async throws {
        let run = try await CommandRunner.run("wehe", ["rnu", "youtube"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("did you mean 'wehe run'?"), "\(run.stderr)")
        let show = try await CommandRunner.run("wehe", ["results", "shwo", "3"])
        #expect(show.status == 64)
        #expect(show.stderr.contains("'wehe results show'"), "\(show.stderr)")
        let settings = try await CommandRunner.run("wehe", ["settings", "sett", "server", "x"])
        #expect(settings.status == 64)
        #expect(settings.stderr.contains("'wehe settings set'"), "\(settings.stderr)")
        let nothing = try await CommandRunner.run("wehe", ["frobnicate"])
        #expect(nothing.status == 64)
        #expect(nothing.stderr.contains("run,"), "\(nothing.stderr)")
        // A setting key gets the same help, with the documented invalid-input code.
        let key = try await CommandRunner.run(
            "wehe", ["settings", "set", "p-treshold", "0.1", "--data-dir", TestResources.temporaryDirectory("k")])
        #expect(key.status == 1)
        #expect(key.stderr.contains("did you mean 'p-threshold'?"), "\(key.stderr)")
    }

    @Test("with --lang fr the errors we write are French from start to end")
    func frenchErrors() async throws {
        let data = TestResources.temporaryDirectory("wehe-usability-fr")
        let typo = try await CommandRunner.run(
            "wehe", ["run", "tinywbe", "--replays", fixtures, "--data-dir", data, "--accept-consent", "--lang", "fr"])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("vouliez-vous dire « tinyweb » (Tiny Web) ?"), "\(typo.stderr)")
        #expect(!typo.stderr.contains("did you mean") && !typo.stderr.contains("no test"), "\(typo.stderr)")
        let command = try await CommandRunner.run("wehe", ["rnu", "--lang", "fr"])
        #expect(command.status == 64)
        #expect(command.stderr.contains("n'est pas une commande de wehe"), "\(command.stderr)")
        let setting = try await CommandRunner.run(
            "wehe", ["settings", "set", "area-threshold", "7", "--data-dir", data, "--lang", "fr"])
        #expect(setting.status == 1)
        #expect(setting.stderr.contains("doit être une fraction"), "\(setting.stderr)")
        let blocker = data + "-file"
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
        let directory = try await CommandRunner.run(
            "wehe",
            [
                "run", "tinyweb", "--replays", fixtures, "--data-dir", blocker + "/data", "--accept-consent", "--lang",
                "fr",
            ])
        #expect(directory.status == 26, "\(directory.stderr)")
        #expect(directory.stderr.contains("n'est pas un répertoire"), "\(directory.stderr)")
        #expect(!directory.stderr.contains("cannot") && !directory.stderr.contains("not a directory"))
    }

    @Test("an unusable data directory is reported before consent is asked (26, not 4)")
    func dataDirectoryBeforeConsent() async throws {
        let parent = TestResources.temporaryDirectory("wehe-usability-unusable-data")
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        let blocker = parent + "/file"
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
        // No --accept-consent and no terminal: were consent asked first, this would exit 4.
        let output = try await CommandRunner.run(
            "wehe", ["run", "tinyweb", "--replays", fixtures, "--data-dir", blocker + "/data"])
        #expect(output.status == 26, "\(output.stderr)")
        #expect(output.stderr.contains("not a directory"), "\(output.stderr)")
        #expect(!output.stderr.contains("consent"), "\(output.stderr)")
    }

    @Test("messages are wrapped at word boundaries to COLUMNS, never inside a word")
    func wrapping() async throws {
        let data = TestResources.temporaryDirectory("wehe-usability-wrap")
        let arguments = ["run", "nosuchapp", "--replays", fixtures, "--data-dir", data, "--accept-consent"]
        let flat = try await CommandRunner.run("wehe", arguments)
        let narrow = try await CommandRunner.run("wehe", arguments, environment: ["COLUMNS": "40"])
        #expect(narrow.status == flat.status)
        let lines = narrow.stderr.split(separator: "\n")
        #expect(lines.count > 2, "\(narrow.stderr)")
        #expect(lines.allSatisfy { $0.count <= 40 }, "\(narrow.stderr)")
        // The same words in the same order: no word was cut.
        let words = { (text: String) in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) }
        #expect(words(narrow.stderr) == words(flat.stderr), "\(narrow.stderr)")
    }
}
