import ArgumentParser
import Foundation
import WeheClient

/// `wehe servers [--json]`: what the locate service offers, the one a test tries first marked.
struct ServersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "servers",
        abstract: "List the fleet servers the locate service offers; * marks the one a test tries first.",
        discussion: """
            A test tries the servers in this order until one's access envelope opens. --site asks for one site; \
            `wehe settings set site <site>` keeps it. With --server <host> (not the published default) locate is \
            not used and that server is listed alone. \(CLIError.Code.pointer)
            """)

    @OptionGroup var connection: ServerOptions

    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?

    @Flag(name: .long, help: "Print one JSON object instead of a table.")
    var json = false

    func run() async throws {
        let directory = DataDirectory.resolve(dataDirectory)
        do {
            let settings = try directory.loadSettings()
            let setup = connection.setup()
            guard try setup.usesFleet(settings) else {
                let server = connection.server ?? settings.server
                if json {
                    print(Self.json(["locate": false, "servers": [["server": server, "selected": true]]]))
                } else {
                    print("* \(server) (set by --server or the settings; locate is not used)")
                }
                return
            }
            let fleet = try setup.fleetConfiguration(settings: settings)
            let answer = try await FleetStep.locate(fleet, directory: directory, json: true)
            if json {
                let servers: [[String: Any]] = answer.targets.enumerated().map { index, target in
                    [
                        "machine": target.machine, "site": target.site ?? "", "city": target.city ?? "",
                        "country": target.country ?? "", "sideChannelHost": target.sideChannelHost,
                        "selected": index == 0,
                    ]
                }
                print(
                    Self.json([
                        "locate": true, "locateURL": answer.requestURL, "reused": answer.reused, "servers": servers,
                    ]))
            } else {
                let rows = answer.targets.enumerated().map { index, target in
                    [index == 0 ? "*" : "", target.machine, target.site ?? "", target.city ?? "", target.country ?? ""]
                }
                print(Terminal.table(header: ["", "MACHINE", "SITE", "CITY", "COUNTRY"], rows: rows))
            }
        } catch let error as CLIError {
            throw error.exit()
        }
    }

    static func json(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
