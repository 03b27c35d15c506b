import WeheCore

/// A row of the history table.
struct HistoryRow {
    var href: String
    var date: String
    var isoDate: String
    var app: String
    var initial: String
    var hue: Int
    var provider: String
    var providerKnown: Bool
    var verdict: VerdictText
    var original: String
    var control: String
    var bars: String
    /// The sensitive verdict of an interleaved test in a few words, under the published badge.
    var sensitive: String? = nil

    /// "Sensitive verdict: slowed by 18 %" and its siblings; `nil` for a test without a sensitive verdict.
    static func sensitiveText(_ sensitive: SensitiveSummary?, strings: Strings) -> String? {
        guard let sensitive else { return nil }
        let percent = String(Int((abs(sensitive.slowdown) * 100).rounded()))
        switch (sensitive.verdict, sensitive.direction) {
        case (.differentiation, .prioritized?): return strings.format("history_sensitive_faster", ["percent": percent])
        case (.differentiation, _): return strings.format("history_sensitive_slowed", ["percent": percent])
        case (.noDifferentiation, _): return strings["history_sensitive_none"]
        case (.inconclusive, _), (.blocked, _): return strings["history_sensitive_inconclusive"]
        }
    }
}

/// The history page.
struct HistoryContent {
    var hasUser: Bool
    var rows: [HistoryRow]
    var isEmpty: Bool
    var olderHref: String?
    var newestHref: String?
    var runHref: String
}

/// One line of a statistics list.
struct StatRow {
    var label: String
    var value: String
}

/// The test page.
struct TestContent {
    var title: String
    var ranOn: String
    var app: String
    var initial: String
    var hue: Int
    var verdict: VerdictText
    var explanation: String
    var hasSamples: Bool
    var lineChart: String
    var cdfChart: String
    /// Said under the line chart when its axis is cut.
    var clipCaption: String?
    /// The two average speeds as bars (HTML built by `AverageBars`), empty without any.
    var averages: String
    var hasAverages: Bool
    /// Under the bars: what they show and what the verdict read in them (it follows the verdict).
    var barsCaption: String
    var stats: [StatRow]
    var backHref: String
    var jsonHref: String
    /// Finished DPI searches started from this test, newest first.
    var dpi: [DPISearchView] = []
    var hasDPI = false
}

/// An option of the "new test" form.
struct RunOption {
    var id: String
    var name: String
    var initial: String
    var hue: Int
    var checked: Bool
    /// About how long and how much data (`about 40 s · about 20 MB`), empty when unknown.
    var cost: String
    var hasCost: Bool
}

/// A category of options.
struct RunGroup {
    var name: String
    var options: [RunOption]
}

/// A recent run in the list under the form.
struct RunListItem {
    var href: String
    var name: String
    var state: String
    var date: String
}

/// The "new test" page.
struct RunContent {
    var available: Bool
    var actionHref: String
    var groups: [RunGroup]
    var recent: [RunListItem]
    var hasRecent: Bool
    var lang: String
    /// The consent still to give, if any.
    var consent: ConsentView?
}

/// The consent text shown on the "new test" page.
struct ConsentView {
    var title: String
    var paragraphs: [String]
}

/// A finished test of a run, with what it found.
struct RunResultItem {
    var href: String
    var headline: String
    var verdict: VerdictText
    var explanation: String
}

/// A phase in the run page's step list.
struct PhaseItem {
    var name: String
    var label: String
    var state: String
}

/// The run progress page.
struct RunProgressContent {
    var id: String
    var heading: String
    var stateName: String
    var stateText: String
    var percent: Int
    var fraction: String
    var phases: [PhaseItem]
    var messages: [String]
    var resultHref: String?
    var eventsHref: String
    var chartHref: String
    var finished: Bool
    var liveChart: String
    var lang: String
    /// The verdicts of the tests finished so far.
    var results: [RunResultItem]
    var hasResults: Bool
    /// The "see the result" button, when the results are not listed on the page.
    var showResultLink: Bool
    /// "Test 2 of 3: YouTube" for a run of several tests.
    var step: String?
}
