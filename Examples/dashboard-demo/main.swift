// Dashboard demo: serves the person and operator dashboards over an in-memory store seeded with a realistic
// history, on 127.0.0.1. `dashboard-demo [--port N] [--tests N]` (port 0 picks a free port; the chosen one is
// printed). Tests started from the browser are simulated by `DemoLauncher`.
import Foundation
import Hummingbird
import Logging
import WeheCore
import WeheStore
import WeheWeb

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .info
    return handler
}

var port = 8080
var crowdCount = 3_000
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--port":
        guard let value = arguments.popFirst().flatMap(Int.init), (0...65_535).contains(value) else {
            FileHandle.standardError.write(Data("dashboard-demo: --port needs a number from 0 to 65535\n".utf8))
            exit(2)
        }
        port = value
    case "--tests":
        guard let value = arguments.popFirst().flatMap(Int.init), (0...1_000_000).contains(value) else {
            FileHandle.standardError.write(Data("dashboard-demo: --tests needs a number from 0 to 1000000\n".utf8))
            exit(2)
        }
        crowdCount = value
    case "-h", "--help":
        print("usage: dashboard-demo [--port N] [--tests N]")
        exit(0)
    default:
        FileHandle.standardError.write(Data("dashboard-demo: unknown argument \(argument)\n".utf8))
        exit(2)
    }
}

let requestedPort = port
let logger = Logger(label: "dashboard-demo")
let now = Date()
let store = InMemoryResultStore()
var history = DemoHistory(seed: 7)
do {
    var personTests = history.personTests(count: 36, now: now)
    // A month of daily tests for the timeline: a throttle that goes on and one that stopped.
    personTests += history.timelineTests(firstHistoryCount: personTests.count + 1, now: now)
    // A control with spikes (the line chart cuts its axis) and a test with too few measurements.
    personTests += history.edgeCaseTests(firstHistoryCount: personTests.count + 1, now: now)
    try await store.save(tests: personTests)
    // The crowd's verdicts use the quick rule on the means (the full analyzer on thousands of tests is slow in
    // debug builds); the person's tests above are analysed for real.
    var crowd = DemoHistory(seed: 11, samplesPerReplay: 60, analyse: false)
    var remaining = crowdCount
    var firstUser = 0
    while remaining > 0 {
        let batch = min(remaining, 1_000)
        try await store.save(tests: crowd.crowdTests(count: batch, now: now, firstUser: firstUser))
        firstUser += batch
        remaining -= batch
    }
    try await store.append(events: DemoHistory.sessionEvents(now: now))
    for search in DemoHistory.dpiResults(now: now) { try await store.finish(dpiSearch: search) }
    let launcher = DemoLauncher(store: store, nextHistoryCount: personTests.count + 1)
    let dashboard = try Dashboard(
        configuration: DashboardConfiguration(
            store: store, userID: DemoHistory.personUserID, launcher: launcher, catalog: DemoHistory.catalog,
            health: DemoHealth(startedAt: now),
            localizations: DemoLocalizations(runs: DemoHistory.localizationRuns(now: now)),
            logger: logger, settingsEditor: DemoSettings()))
    let router = Router()
    dashboard.addPersonRoutes(to: router)
    dashboard.addOperatorRoutes(to: router)
    let app = Application(
        router: router,
        configuration: ApplicationConfiguration(
            address: .hostname("127.0.0.1", port: requestedPort), serverName: "wehe-dashboard-demo"),
        services: [dashboard.runner],
        onServerRunning: { channel in
            let chosen = channel.localAddress?.port ?? requestedPort
            let lines = """
                dashboard-demo: person pages   http://127.0.0.1:\(chosen)/
                dashboard-demo: a test page    http://127.0.0.1:\(chosen)/tests/\(DemoHistory.personUserID)/2
                dashboard-demo: operator pages http://127.0.0.1:\(chosen)/operator/

                """
            // Written unbuffered so that scripts reading a redirected stdout see the address at once.
            FileHandle.standardOutput.write(Data(lines.utf8))
        },
        logger: logger)
    try await app.runService()
} catch {
    FileHandle.standardError.write(Data("dashboard-demo: \(error)\n".utf8))
    exit(1)
}
