import Foundation
import HTTPTypes
import Hummingbird
import WeheCore
import WeheStore

extension Dashboard {
    /// The tests the launcher offers, or an empty list without a launcher.
    func availableTests() async throws -> [LaunchableTest] {
        guard let launcher = configuration.launcher else { return [] }
        do {
            return try await launcher.availableTests()
        } catch {
            throw WeheWebError(
                .launcherUnavailable, "The list of tests could not be loaded.", underlying: error)
        }
    }

    /// The consent the launcher still needs, or `nil`.
    func pendingConsent() async throws -> ConsentRequest? {
        guard let launcher = configuration.launcher else { return nil }
        do {
            return try await launcher.consentRequest()
        } catch {
            throw WeheWebError(.launcherUnavailable, "The consent settings could not be read.", underlying: error)
        }
    }

    /// What one test costs, as the launcher estimates it for the whole test (both replays): about how long and how
    /// much data; each part left out when unknown.
    func cost(of test: LaunchableTest, info: RequestInfo) -> String {
        var parts: [String] = []
        if let seconds = test.durationSeconds, seconds.isFinite, seconds > 0 {
            parts.append(Self.duration(seconds, info: info))
        }
        if let size = test.sizeMB, size.isFinite, size > 0 {
            parts.append(info.strings.format("run_cost_data", ["mb": info.formatter.number(size, digits: 0)]))
        }
        return parts.joined(separator: " · ")
    }

    /// "about 40 s", "about 3 min".
    static func duration(_ seconds: Double, info: RequestInfo) -> String {
        seconds < 90
            ? info.strings.format("run_cost_seconds", ["s": String(Int(seconds.rounded()))])
            : info.strings.format("run_cost_minutes", ["min": String(Int((seconds / 60).rounded()))])
    }

    /// The "new test" page: the tests grouped by category as a form (several may be ticked, each with its time
    /// and data), the consent text when it was not given yet, and the recent runs.
    func runHTML(_ info: RequestInfo) async throws -> String {
        let strings = info.strings
        let base = configuration.personPath
        let tests = try await availableTests()
        var groups: [RunGroup] = []
        for test in tests {
            let cost = cost(of: test, info: info)
            let option = RunOption(
                id: test.id, name: test.name, initial: AppNames.initial(of: test.name),
                hue: AppNames.hue(of: test.name) / 30, checked: false, cost: cost, hasCost: !cost.isEmpty)
            // The user's own recordings form one group, after the catalog's.
            let group = test.recorded ? strings["run_group_recordings"] : test.category
            if let index = groups.firstIndex(where: { $0.name == group }) {
                groups[index].options.append(option)
            } else {
                groups.append(RunGroup(name: group, options: [option]))
            }
        }
        let recordings = strings["run_group_recordings"]
        groups = groups.filter { $0.name != recordings } + groups.filter { $0.name == recordings }
        if !groups.isEmpty, !groups[0].options.isEmpty { groups[0].options[0].checked = true }
        let recent = await registry.allRuns().map { run in
            RunListItem(
                href: base + "/run/" + run.id + "?lang=" + info.language.rawValue,
                name: run.tests.map(\.name).joined(separator: ", "),
                state: stateText(run.state, strings: strings), date: info.formatter.dateTime(run.requestedAt))
        }
        let consent = try await pendingConsent()
        let content = RunContent(
            available: configuration.launcher != nil && !tests.isEmpty, actionHref: base + "/run", groups: groups,
            recent: recent, hasRecent: !recent.isEmpty, lang: info.language.rawValue,
            consent: consent.map {
                ConsentView(
                    title: $0.title,
                    paragraphs: $0.text.components(separatedBy: "\n\n").map {
                        $0.trimmingCharacters(in: .whitespacesAndNewlines)
                    }.filter { !$0.isEmpty })
            })
        let context = PageContext(
            chrome: Chrome(
                info: info, title: strings["run_title"], basePath: base, operatorLinks: false, section: .run),
            t: strings.table, page: content)
        return try renderer.render("run", context)
    }

    /// `POST /run` with one or more form fields `test` (run one after the other) and, while the launcher still
    /// needs it, `consent=yes`: records the consent, queues the run and redirects to its page (303).
    func startRun(_ request: Request) async -> Response {
        let info = RequestInfo(request: request, configuration: configuration)
        do {
            guard let launcher = configuration.launcher else {
                try checkHost(request, operatorPage: false)
                throw WeheWebError(.launcherUnavailable, info.strings["run_unavailable"])
            }
            let fields = try await postedForm(request)
            var ids: [String] = []
            for field in fields where field.name == "test" && !field.value.isEmpty && !ids.contains(field.value) {
                ids.append(field.value)
            }
            guard !ids.isEmpty else {
                throw WeheWebError(.invalidParameter, "choose a test to run")
            }
            let available = try await availableTests()
            var chosen: [LaunchableTest] = []
            for id in ids {
                guard let test = available.first(where: { $0.id == id }) else {
                    throw WeheWebError(.invalidParameter, "there is no test called '\(id)'")
                }
                chosen.append(test)
            }
            let language =
                fields.last(where: { $0.name == "lang" }).flatMap { Language.match($0.value) } ?? info.language
            if try await pendingConsent() != nil {
                guard fields.contains(where: { $0.name == "consent" && $0.value == "yes" }) else {
                    throw WeheWebError(.invalidParameter, Strings(language)["run_consent_missing"])
                }
                do {
                    try await launcher.acceptConsent()
                } catch {
                    throw WeheWebError(
                        .launcherUnavailable, "The consent could not be recorded.", underlying: error)
                }
            }
            let run = try await registry.enqueue(chosen, at: configuration.now())
            let location = configuration.personPath + "/run/" + run.id + "?lang=" + language.rawValue
            var headers = Self.baseHeaders(contentType: "text/plain; charset=utf-8")
            headers[.location] = location
            return Response(
                status: .seeOther, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: location)))
        } catch {
            return errorPage(translate(error, request: request), info: info, operatorPage: false)
        }
    }

    /// The verdicts of a run's finished tests, read back from the store, for its page.
    func runResults(_ run: TestRun, info: RequestInfo) async -> [RunResultItem] {
        var items: [RunResultItem] = []
        for key in run.results {
            let record = try? await configuration.store.test(key)
            let app = record.map { names.displayName(ofReplay: $0.metadata.replayName) } ?? run.test.name
            let provider = record?.metadata.provider ?? info.strings["unknown_provider"]
            let summary = record?.mainAnalysis?.summary
            items.append(
                RunResultItem(
                    href: testHref(key, info: info),
                    headline: VerdictText.headline(of: summary, app: app, provider: provider, strings: info.strings),
                    verdict: VerdictText(summary: summary, strings: info.strings),
                    explanation: VerdictText.explanation(
                        of: summary, app: app, strings: info.strings, formatter: info.formatter)))
        }
        return items
    }

    /// A form posted from this dashboard's own pages (host and `Origin` checked), at most 16 kB, as its fields.
    func postedForm(_ request: Request) async throws -> [(name: String, value: String)] {
        try checkHost(request, operatorPage: false)
        try checkOrigin(request)
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: 16_384)
        } catch {
            throw WeheWebError(.invalidParameter, "the form is too large")
        }
        return RequestInfo.parseQuery(String(buffer: body))
    }

    /// Refuses cross-site form posts: an `Origin` header, when present, must name the host the request went to.
    func checkOrigin(_ request: Request) throws(WeheWebError) {
        guard let origin = request.headers[.origin] else { return }
        let host = request.head.authority ?? HTTPField.Name("host").flatMap { request.headers[$0] } ?? ""
        let stripped = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
        guard let stripped, stripped.lowercased() == host.lowercased() else {
            throw WeheWebError(.forbidden, "Tests can only be started from this dashboard's own page.")
        }
    }

    func stateText(_ state: TestRun.State, strings: Strings) -> String {
        switch state {
        case .queued: strings["run_state_queued"]
        case .running: strings["run_state_running"]
        case .finished: strings["run_state_finished"]
        case .failed(let reason): strings.format("run_state_failed", ["reason": reason])
        }
    }

    func loadRun(_ id: String) async throws(WeheWebError) -> TestRun {
        guard id.count <= 64, let run = await registry.run(id) else { throw WeheWebError(.notFound, "") }
        return run
    }

    /// The run page: state, phases, progress bar, log and a live chart; reloads itself without scripts.
    func runProgressHTML(_ info: RequestInfo, id: String) async throws -> String {
        let run = try await loadRun(id)
        let strings = info.strings
        let base = configuration.personPath
        let currentIndex = run.phase.flatMap { TestPhase.allCases.firstIndex(of: $0) }
        let phases = TestPhase.allCases.enumerated().map { index, phase in
            let state: String
            if case .finished = run.state {
                state = "done"
            } else if let currentIndex {
                state = index < currentIndex ? "done" : (index == currentIndex ? "current" : "todo")
            } else {
                state = "todo"
            }
            return PhaseItem(name: phase.rawValue, label: strings["phase_" + phase.rawValue], state: state)
        }
        var resultHref: String?
        if case .finished(let key) = run.state { resultHref = testHref(key, info: info) }
        let chart = liveChart(run, info: info)
        let heading = strings.format("run_progress_title", ["app": run.tests.map(\.name).joined(separator: ", ")])
        let results = await runResults(run, info: info)
        let totalSeconds = run.tests.compactMap(\.durationSeconds).reduce(0, +) * 2
        let step =
            run.tests.count > 1
            ? strings.format(
                "run_step",
                [
                    "k": String(min(run.current + 1, run.tests.count)), "n": String(run.tests.count),
                    "name": run.tests[min(run.current, run.tests.count - 1)].name,
                    "time": totalSeconds > 0 ? Self.duration(totalSeconds, info: info) : "–",
                ]) : nil
        let content = RunProgressContent(
            id: run.id, heading: heading, stateName: run.state.name, stateText: stateText(run.state, strings: strings),
            percent: Int((run.fraction * 100).rounded()), fraction: String(format: "%.3f", run.fraction),
            phases: phases, messages: run.messages, resultHref: resultHref,
            eventsHref: base + "/run/" + run.id + "/events?lang=" + info.language.rawValue,
            chartHref: base + "/run/" + run.id + "/chart?lang=" + info.language.rawValue,
            finished: run.state.isTerminal, liveChart: chart, lang: info.language.rawValue, results: results,
            hasResults: !results.isEmpty, showResultLink: resultHref != nil && results.isEmpty, step: step)
        let context = PageContext(
            chrome: Chrome(
                info: info, title: heading, basePath: base, operatorLinks: false, section: .run,
                refreshSeconds: run.state.isTerminal ? nil : 3, runScript: !run.state.isTerminal),
            t: strings.table, page: content)
        return try renderer.render("run-progress", context)
    }

    /// The live chart of a run: the samples received so far, drawn like a test page's chart. A confirmation run
    /// (the test again, its replays' time starting from 0 again) is drawn after the first run, past a gap and a
    /// labelled vertical line, as lines of its own: no line joins the end of one run to the start of the next.
    func liveChart(_ run: TestRun, info: RequestInfo) -> String {
        let strings = info.strings
        let roles = [ReplayRole.original, .control]
        let parts = roles.map { role in Self.runsOf(run.samples[role] ?? []) }
        // Where each run starts on the time axis: after the longest replay of the run before, and a gap.
        var offsets: [Double] = [0]
        let runCount = parts.map(\.count).max() ?? 0
        for index in 0..<max(0, runCount - 1) {
            let end = parts.compactMap { $0.indices.contains(index) ? $0[index].last?.seconds : nil }.max() ?? 0
            offsets.append(offsets[index] + end + Self.runGapSeconds)
        }
        var series: [ChartSeries] = []
        for (role, runs) in zip(roles, parts) {
            for (index, part) in runs.enumerated() {
                series.append(
                    ChartSeries(
                        label: role == .original ? strings["series_original"] : strings["series_control"],
                        style: role == .original ? "original" : "control",
                        x: part.map { $0.seconds + offsets[index] }, y: part.map(\.mbps)))
            }
        }
        let markers = offsets.dropFirst().map {
            ThroughputChart.Marker(x: $0 - Self.runGapSeconds / 2, label: strings["run_chart_again"])
        }
        return ThroughputChart(
            series: series.isEmpty
                ? [ChartSeries(label: strings["series_original"], style: "original", x: [], y: [])] : series,
            text: ChartText(
                title: strings["run_live_chart"], description: strings["test_chart_desc"], xLabel: strings["axis_time"],
                yLabel: strings["axis_throughput"]),
            formatter: info.formatter, markers: markers
        ).render(id: "live-chart")
    }

    /// Seconds left empty on the live chart between a run and its confirmation run.
    static let runGapSeconds = 2.0

    /// A replay's samples split into its runs: a run starts again (a confirmation run) where the time since the
    /// replay started goes back.
    static func runsOf(_ samples: [(seconds: Double, mbps: Double)]) -> [[(seconds: Double, mbps: Double)]] {
        var runs: [[(seconds: Double, mbps: Double)]] = []
        for sample in samples {
            if let last = runs.last?.last, sample.seconds >= last.seconds {
                runs[runs.count - 1].append(sample)
            } else {
                runs.append([sample])
            }
        }
        return runs
    }

    /// `GET /run/{id}/chart`: the live chart alone, as SVG (the run page's script swaps it in).
    func liveChartSVG(_ info: RequestInfo, id: String) async throws -> DataBody {
        let run = try await loadRun(id)
        return DataBody(text: liveChart(run, info: info), contentType: "image/svg+xml; charset=utf-8", filename: nil)
    }

    /// A run's state as JSON.
    func runJSON(_ info: RequestInfo, id: String) async throws -> DataBody {
        let run = try await loadRun(id)
        var payload = RunEventPayload(type: "run")
        payload.state = run.state.name
        payload.label = stateText(run.state, strings: info.strings)
        payload.phase = run.phase?.rawValue
        payload.value = run.fraction
        if case .finished(let key) = run.state { payload.href = testHref(key, info: info) }
        payload.text = run.test.name
        return .json(try Self.encode(payload))
    }

    /// `GET /run/{id}/events`: server-sent events, a snapshot then live updates until the run ends.
    func runEvents(_ request: Request, id: String) async -> Response {
        let info = RequestInfo(request: request, configuration: configuration)
        do {
            try checkHost(request, operatorPage: false)
            _ = try await loadRun(id)
            guard let stream = await registry.subscribe(id) else { throw WeheWebError(.notFound, "") }
            var headers = Self.baseHeaders(contentType: "text/event-stream; charset=utf-8")
            headers[.cacheControl] = "no-store"
            let dashboard = self
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
                    for await update in stream {
                        try await writer.write(ByteBuffer(string: dashboard.serverSentEvent(update, info: info)))
                    }
                    try await writer.finish(nil)
                })
        } catch {
            return errorJSON(translate(error, request: request))
        }
    }

    /// One server-sent event: `event: <type>` and a JSON `data:` line (the page's script sets text only).
    func serverSentEvent(_ update: TestRunUpdate, info: RequestInfo) -> String {
        var payload: RunEventPayload
        switch update {
        case .progress(.phase(let phase)):
            payload = RunEventPayload(type: "phase")
            payload.phase = phase.rawValue
            payload.label = info.strings["phase_" + phase.rawValue]
        case .progress(.fraction(let value)):
            payload = RunEventPayload(type: "fraction")
            payload.value = value.isFinite ? min(1, max(0, value)) : 0
        case .progress(.sample(let role, let seconds, let mbps)):
            payload = RunEventPayload(type: "sample")
            payload.role = role == .original ? "original" : "control"
            payload.seconds = seconds
            payload.mbps = mbps
        case .progress(.message(let text)):
            payload = RunEventPayload(type: "message")
            payload.text = text
        case .state(let state):
            payload = RunEventPayload(type: "state")
            payload.state = state.name
            payload.label = stateText(state, strings: info.strings)
            if case .finished(let key) = state {
                payload.href = testHref(key, info: info)
                payload.text = info.strings["run_see_result"]
            }
        }
        let json = (try? Self.compactEncoder.encode(payload)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "event: \(payload.type)\ndata: \(json)\n\n"
    }

    static var compactEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// The JSON of a run event (fields set according to `type`).
struct RunEventPayload: Codable, Sendable {
    var type: String
    var state: String?
    var label: String?
    var phase: String?
    var value: Double?
    var role: String?
    var seconds: Double?
    var mbps: Double?
    var text: String?
    var href: String?

    init(type: String) { self.type = type }
}
