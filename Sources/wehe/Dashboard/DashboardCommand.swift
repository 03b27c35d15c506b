import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NIOCore
import WeheWeb
import WeheWire

/// `wehe dashboard [--port N]`: the person's result history in the browser, on 127.0.0.1 only, with a page that
/// starts new tests (run exactly as `wehe run` runs them) and shows their progress live.
struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Show your results in the browser (127.0.0.1 only) and start new tests from there.",
        discussion: """
            Serves the history that `wehe results` reads, until Ctrl-C. --port 0 picks a free port; the address is \
            printed on standard output. Tests started from the browser need the consent (give it with \
            `wehe run --accept-consent ...` or pass --accept-consent here) and use the server options below over \
            the settings.
            """)

    @Option(name: .long, help: "Port on 127.0.0.1 (0: any free port; the address is printed).")
    var port: Int = 8765

    @OptionGroup var connection: ServerOptions
    @OptionGroup var replays: ReplayDirectoryOption
    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
    }

    func run() async throws {
        do {
            try await serve()
        } catch let error as CLIError {
            throw error.exit()
        }
    }

    private func serve() async throws {
        let directory = DataDirectory.resolve(options.dataDirectory)
        let strings = Strings.select(try options.language ?? directory.loadSettings().language)
        try directory.ensureUsable(strings)
        var settings = try directory.settingsRecordingUserID()
        if options.acceptConsent {
            try Consent.ensure(&settings, accept: true, strings: strings, directory: directory)
        }
        // The catalog with the user's recordings (`wehe record`), as `wehe run` reads it.
        let library = try? replays.library()
        let replayDirectory = library?.directory
        let catalog = try? library?.catalog()
        let logger = Logger(label: "wehe.dashboard")
        let history = try await History.open(directory)
        var launcher = ClientTestLauncher(
            directory: directory, initialSettings: settings, setup: connection.setup(options),
            replayDirectory: replayDirectory, store: history, strings: strings)
        launcher.additionalDirectories = library?.additionalDirectories ?? []
        do {
            let dashboard = try Dashboard(
                configuration: DashboardConfiguration(
                    store: history, userID: settings.userID, launcher: launcher, catalog: catalog,
                    timeZone: .current, defaultLanguage: strings.language == .fr ? .french : .english,
                    allowedHosts: ["127.0.0.1", "localhost"], logger: logger,
                    settingsEditor: DashboardSettings(directory: directory, strings: strings)))
            let router = Router()
            dashboard.addPersonRoutes(to: router)
            let requested = port
            let app = Application(
                router: router,
                configuration: ApplicationConfiguration(
                    address: .hostname("127.0.0.1", port: requested), serverName: "wehe-dashboard"),
                services: [dashboard.runner],
                onServerRunning: { channel in
                    let chosen = channel.localAddress?.port ?? requested
                    // Unbuffered, so that a script reading a redirected stdout sees the address at once.
                    FileHandle.standardOutput.write(Data("wehe dashboard: http://127.0.0.1:\(chosen)/\n".utf8))
                },
                logger: logger)
            try await app.runService()
        } catch {
            await history.close()
            if let error = error as? CLIError { throw error }
            if "\(error)".contains("Address already in use") || (error as? IOError)?.errnoCode == EADDRINUSE {
                throw CLIError(
                    code: .invalidInput,
                    "port \(port) on 127.0.0.1 is busy (another dashboard?): pass --port 0 for any free port")
            }
            throw CLIError(code: .invalidInput, "the dashboard stopped: \(error)")
        }
        await history.close()
    }
}
