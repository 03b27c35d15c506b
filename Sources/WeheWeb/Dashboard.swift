import Foundation
package import Hummingbird
import Logging
import WeheCore
import WeheStore

/// The Wehe dashboard: server-rendered pages over a `ResultStore`, for a person (their own history, a test's
/// charts and explanation, starting a new test with live progress) and for an operator (tests per day, verdicts
/// per app and provider, the provider × app matrix, crowd-sourced fixed-rate findings, WeHeY results, server
/// health, downloads).
///
/// Add its routes to any Hummingbird router: `addPersonRoutes(to:)` (for `wehe dashboard`) and
/// `addOperatorRoutes(to:)` (for `wehe-server`), and run `runner` as a service next to the server so that tests
/// started from the browser run.
package struct Dashboard: Sendable {
    /// The validated configuration.
    package let configuration: DashboardConfiguration
    let renderer: Renderer
    let registry: TestRunRegistry
    let findings: CrowdFindingsCache
    let names: AppNames

    /// Loads the templates and checks the configuration.
    /// - Throws: `WeheWebError` `.invalidConfiguration` or `.resourceMissing`.
    package init(configuration: DashboardConfiguration) throws(WeheWebError) {
        self.configuration = try configuration.validated()
        self.renderer = try Renderer()
        self.registry = TestRunRegistry()
        self.findings = CrowdFindingsCache()
        self.names = AppNames(catalog: configuration.catalog)
    }

    /// The service that runs tests started from the browser (add it to the application's services).
    package var runner: DashboardRunner {
        DashboardRunner(registry: registry, launcher: configuration.launcher, logger: configuration.logger)
    }

    /// Adds the person pages under `configuration.personPath`: `/` (history), `/tests/{user}/{count}`,
    /// `/run`, `/run/{id}`, `/run/{id}/events` (server-sent events), `/run/{id}/chart` (SVG), `/api/history`, `/api/tests/{user}/{count}`,
    /// `/api/runs/{id}` and `/static/{file}`.
    package func addPersonRoutes<Router: RouterMethods>(to router: Router) {
        let base = configuration.personPath
        router.get(RouterPath(base.isEmpty ? "/" : base)) { request, _ in
            await page(request, operatorPage: false) { info in try await historyHTML(info) }
        }
        router.get(RouterPath(base + "/tests/:user/:count")) { request, context in
            let user = context.parameters.get("user")
            let count = context.parameters.get("count")
            return await page(request, operatorPage: false) { info in
                try await testHTML(info, key: try Self.testKey(user: user, count: count))
            }
        }
        router.get(RouterPath(base + "/api/history")) { request, _ in
            await data(request, operatorPage: false) { info in try await historyJSON(info) }
        }
        router.get(RouterPath(base + "/api/tests/:user/:count")) { request, context in
            let user = context.parameters.get("user")
            let count = context.parameters.get("count")
            return await data(request, operatorPage: false) { _ in
                try await testJSON(key: try Self.testKey(user: user, count: count))
            }
        }
        addSettingsRoutes(to: router)
        router.get(RouterPath(base + "/run")) { request, _ in
            await page(request, operatorPage: false) { info in try await runHTML(info) }
        }
        router.post(RouterPath(base + "/run")) { request, _ in
            await startRun(request)
        }
        router.get(RouterPath(base + "/run/:id")) { request, context in
            let id = context.parameters.get("id") ?? ""
            return await page(request, operatorPage: false) { info in try await runProgressHTML(info, id: id) }
        }
        router.get(RouterPath(base + "/run/:id/events")) { request, context in
            await runEvents(request, id: context.parameters.get("id") ?? "")
        }
        router.get(RouterPath(base + "/run/:id/chart")) { request, context in
            let id = context.parameters.get("id") ?? ""
            return await data(request, operatorPage: false) { info in try await liveChartSVG(info, id: id) }
        }
        router.get(RouterPath(base + "/api/runs/:id")) { request, context in
            let id = context.parameters.get("id") ?? ""
            return await data(request, operatorPage: false) { info in try await runJSON(info, id: id) }
        }
        addTimelineRoutes(to: router)
        router.get(RouterPath(base + "/static/:file")) { request, context in
            staticFile(context.parameters.get("file") ?? "")
        }
    }

    /// Adds the operator pages under `configuration.operatorPath`: `/` (overview), `/findings`, `/dpi`, `/data.json`,
    /// `/data.csv?table=…`, `/findings.json`, `/findings.csv` and `/static/{file}`.
    package func addOperatorRoutes<Router: RouterMethods>(to router: Router) {
        let base = configuration.operatorPath
        // Hummingbird matches `/operator` and `/operator/` with one route.
        router.get(RouterPath(base.isEmpty ? "/" : base)) { request, _ in
            await page(request, operatorPage: true) { info in try await operatorHTML(info) }
        }
        router.get(RouterPath(base + "/findings")) { request, _ in
            await page(request, operatorPage: true) { info in try await findingsHTML(info) }
        }
        router.get(RouterPath(base + "/dpi")) { request, _ in
            await page(request, operatorPage: true) { info in try await dpiRulesHTML(info) }
        }
        router.get(RouterPath(base + "/data.json")) { request, _ in
            await data(request, operatorPage: true) { info in try await operatorJSON(info) }
        }
        router.get(RouterPath(base + "/data.csv")) { request, _ in
            await data(request, operatorPage: true) { info in try await operatorCSV(info) }
        }
        router.get(RouterPath(base + "/findings.json")) { request, _ in
            await data(request, operatorPage: true) { info in try await findingsJSON(info) }
        }
        router.get(RouterPath(base + "/findings.csv")) { request, _ in
            await data(request, operatorPage: true) { info in try await findingsCSV(info) }
        }
        addCrowdTimelineRoutes(to: router)
        router.get(RouterPath(base + "/static/:file")) { request, context in
            staticFile(context.parameters.get("file") ?? "")
        }
    }

    /// The key named by path components; malformed ones are a 400.
    static func testKey(user: String?, count: String?) throws(WeheWebError) -> TestKey {
        guard let user = user?.removingPercentEncoding, !user.isEmpty, user.count <= 256,
            user.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        else {
            throw WeheWebError(.invalidParameter, "the user id in the address is not valid")
        }
        guard let count, let historyCount = Int(count), historyCount >= 0 else {
            throw WeheWebError(.invalidParameter, "the test number in the address must be a non-negative integer")
        }
        return TestKey(userID: user, historyCount: historyCount)
    }

    /// The link to a test page.
    func testHref(_ key: TestKey, info: RequestInfo) -> String {
        configuration.personPath + "/tests/" + RequestInfo.escapePath(key.userID) + "/\(key.historyCount)?lang="
            + info.language.rawValue
    }
}
