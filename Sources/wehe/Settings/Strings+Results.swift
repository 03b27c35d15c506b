import WeheClient
import WeheCore

/// Words of results: DPI searches, speeds, verdict lines, the history table and the summary paragraph.
extension Strings {
    /// What a DPI search cost, in `results show`.
    func dpiCost(probes: Int, megabytes: String) -> String {
        pick("\(probes) probes, \(megabytes) MB", "\(probes) sondes, \(megabytes) Mo")
    }
    /// A DPI search that found what the classifier matches.
    func dpiFound(date: String, cost: String) -> String {
        pick(
            "DPI search of \(date) (\(cost)): the classifier matches these bytes",
            "recherche DPI du \(date) (\(cost)) : le classificateur reconnaît ces octets")
    }
    /// A DPI search that found no rule, and why (the search's own words).
    func dpiNoRule(date: String, cost: String, why: String) -> String {
        pick(
            "DPI search of \(date) (\(cost)): no rule found (\(why))",
            "recherche DPI du \(date) (\(cost)) : aucune règle trouvée (\(why))")
    }
    /// Where a DPI rule lies: packet and byte range.
    func dpiRule(packet: String, first: Int, last: Int) -> String {
        pick("packet \(packet), bytes \(first) to \(last)", "paquet \(packet), octets \(first) à \(last)")
    }
    /// Said instead of a speed for a replay that has no measurement (not "0.0", which reads as blocked).
    var notMeasured: String { pick("not measured", "non mesuré") }
    /// After the name of a test the user made with `wehe record`.
    var recordedMark: String { pick("(your recording)", "(votre enregistrement)") }
    /// A mean speed in a table cell: "12.3", or "not measured" when the replay has no measurement.
    func speedCell(_ mbps: Double?, decimals: Int = 1) -> String {
        mbps.map { Terminal.format($0, decimals: decimals, language: language) } ?? notMeasured
    }
    /// A mean speed in a sentence: "12.3 Mbit/s", or "not measured".
    func speed(_ mbps: Double?, decimals: Int = 1) -> String {
        mbps.map { Terminal.format($0, decimals: decimals, language: language) + " Mbit/s" } ?? notMeasured
    }
    /// The verdict of one test in one line, printed as soon as it ends.
    func verdictLine(_ result: TestResult) -> String {
        let summary = result.summary
        let app = speed(result.originalMeanMbps)
        let control = speed(result.controlMeanMbps)
        var verdict = verdict(summary.verdict.rawValue)
        if let direction = summary.direction { verdict += " (\(self.direction(direction.rawValue)))" }
        var line =
            "→ \(result.name): \(verdict), "
            + pick("app \(app), control \(control)", "appli \(app), contrôle \(control)")
        if summary.insufficientDataReason != nil { line += pick(" (too few measurements)", " (trop peu de mesures)") }
        line += pick(", on ", ", sur ") + networkText(result.network)
        return line
    }
    /// The network of a result: `Name (AS64500), Wi-Fi`; `unknown provider` when no AS and no name is known.
    func networkText(_ network: NetworkProvider) -> String {
        let provider = network.displayName ?? pick("unknown provider", "fournisseur inconnu")
        return provider + (linkKindText(network.linkKind).map { ", " + $0 } ?? "")
    }
    /// A link kind in words; `nil` when unknown.
    func linkKindText(_ kind: NetworkProvider.LinkKind) -> String? {
        switch kind {
        case .wifi: "Wi-Fi"
        case .wired: pick("wired", "filaire")
        case .cellular: pick("cellular", "cellulaire")
        case .unknown: nil
        }
    }
    /// Short verdict for tables: a differentiation is named by its direction.
    func tableVerdict(_ summary: AnalysisSummary) -> String {
        switch (summary.verdict, summary.direction) {
        case (.differentiation, .prioritized?): pick("prioritized", "priorisé")
        case (.differentiation, _): pick("throttled", "bridé")
        case (.noDifferentiation, _): pick("no differentiation", "non détectée")
        case (.inconclusive, _): pick("inconclusive", "non concluant")
        case (.blocked, _): pick("blocked", "bloqué")
        }
    }
    /// The caption under a verdict table.
    func tableCaption(zone: String?) -> String {
        var text = pick(
            "APP and CTRL (control) in Mbit/s; throttled/prioritized = differentiation found",
            "APPLI et CTRL (contrôle) en Mbit/s ; bridé/priorisé = différenciation détectée")
        if let zone { text += pick("; times in \(zone)", " ; heures en \(zone)") }
        return text
    }
    /// Header of the sensitive-verdict column of `wehe results` (shown when a listed test has one).
    var sensitiveHeader: String { pick("SENS", "SENS") }
    /// The sensitive verdict in a few characters: "-18%" (app slowed by 18 %), "+12%" (faster), "none", "?".
    func sensitiveMark(_ sensitive: SensitiveSummary?) -> String {
        guard let sensitive else { return "-" }
        let percent = Int((abs(sensitive.slowdown) * 100).rounded())
        switch (sensitive.verdict, sensitive.direction) {
        case (.differentiation, .prioritized?): return "+\(percent)%"
        case (.differentiation, _): return "-\(percent)%"
        case (.noDifferentiation, _): return pick("none", "aucune")
        case (.inconclusive, _), (.blocked, _): return "?"
        }
    }
    /// The caption line of the sensitive column.
    var sensitiveCaption: String {
        pick(
            "SENS: sensitive verdict of interleaved tests (-18% = app slowed by 18 %, none = no differentiation, "
                + "? = inconclusive, - = not measured)",
            "SENS : verdict sensible des tests entrelacés (-18% = appli ralentie de 18 %, aucune = pas de "
                + "différenciation, ? = non concluant, - = non mesuré)")
    }
    /// Labels of `results show`.
    var showLabels: (verdict: String, original: String, control: String, thresholds: String, note: String) {
        language == .fr
            ? ("verdict", "débit moyen de l'appli", "débit moyen du contrôle", "seuils", "remarque")
            : ("verdict", "original mean", "control mean", "thresholds", "note")
    }
    /// One replay's line in `results show`.
    func replayLine(_ role: String, _ name: String, samples: Int, mean: String) -> String {
        pick(
            "\(role) \(name): \(samples) samples, mean \(mean) Mbit/s",
            "\(role) \(name) : \(samples) mesures, moyenne \(mean) Mbit/s")
    }
    /// Under the sparklines.
    func sparklineScale(_ peak: String) -> String {
        pick("(one scale for both: █ = \(peak) Mbit/s)", "(même échelle pour les deux : █ = \(peak) Mbit/s)")
    }
    /// `results show --summary`: one paragraph a journalist can paste.
    func summaryParagraph(
        app: String, provider: String?, date: String, zone: String, server: String, summary: AnalysisSummary,
        clientVersion: String?, adaptive: SensitiveSummary? = nil, originalMeasured: Bool = true,
        controlMeasured: Bool = true
    ) -> String {
        let measured = clientVersion.map { " \($0)" } ?? ""
        // "12.3 Mbit/s", or "not measured" for a replay without measurement.
        let appSpeed = speed(originalMeasured ? summary.originalMeanMbps : nil)
        let control = speed(controlMeasured ? summary.controlMeanMbps : nil)
        let network = provider.map { pick(" on \($0)", " sur \($0)") } ?? ""
        let p = Terminal.pValue(summary.ksPValue, language: language)
        let area = Terminal.format(abs(summary.areaTest), decimals: 2, language: language)
        let finding: String
        switch (summary.verdict, summary.direction) {
        case (.differentiation, .prioritized?):
            finding = pick(
                "Wehe detected differentiation: \(app) was prioritized\(network)",
                "Wehe a détecté une différenciation : \(app) était priorisé\(network)")
        case (.differentiation, _):
            finding = pick(
                "Wehe detected differentiation: \(app) was throttled\(network)",
                "Wehe a détecté une différenciation : \(app) était bridé\(network)")
        case (.noDifferentiation, _):
            finding = pick(
                "Wehe detected no differentiation of \(app)\(network)",
                "Wehe n'a pas détecté de différenciation de \(app)\(network)")
        case (.inconclusive, _):
            finding =
                summary.insufficientDataReason != nil
                ? pick(
                    "The Wehe test of \(app)\(network) was inconclusive: too few measurements",
                    "Le test Wehe de \(app)\(network) n'a pas été concluant : trop peu de mesures")
                : pick(
                    "The Wehe test of \(app)\(network) was inconclusive",
                    "Le test Wehe de \(app)\(network) n'a pas été concluant")
        case (.blocked, _):
            finding = pick(
                "Wehe found the port of \(app) blocked\(network)", "Wehe a trouvé le port de \(app) bloqué\(network)")
        }
        if let adaptive, let reason = adaptive.stopReason {
            // The adaptive verdict computes no area or KS test: the rounds, the slowdown and why it stopped.
            let megabytes = Terminal.format(Double(adaptive.bytesMoved ?? 0) / 1e6, decimals: 1, language: language)
            return pick(
                "\(finding). Adaptive test of \(date) (\(zone)) against the Wehe server \(server): in "
                    + "\(adaptive.rounds) short rounds (\(megabytes) MB), each the app's recorded traffic and a "
                    + "bit-inverted copy of it (the control, which a classifier cannot recognise) in random order, the "
                    + "app reached \(appSpeed) on average and the control \(control) over the same bytes: "
                    + "\(adaptive.effectText), stopped for \(reason.rawValue) (false-positive bound "
                    + "\(Terminal.format(adaptive.alpha, decimals: 2, language: language))). "
                    + "Measured with Wehe for Swift\(measured).",
                "\(finding). Test adaptatif du \(date) (\(zone)) avec le serveur Wehe \(server) : en "
                    + "\(adaptive.rounds) manches courtes (\(megabytes) Mo), chacune le trafic enregistré de l'appli et "
                    + "une copie inversée bit à bit (le contrôle, qu'un classificateur ne peut reconnaître) dans un "
                    + "ordre aléatoire, l'appli a atteint \(appSpeed) en moyenne et le contrôle \(control) "
                    + "sur les mêmes octets : \(adaptive.effectText), arrêt : \(reason.rawValue) (taux de faux "
                    + "positifs au plus \(Terminal.format(adaptive.alpha, decimals: 2, language: language))). "
                    + "Mesuré avec Wehe for Swift\(measured).")
        }
        let appReached =
            originalMeasured
            ? pick("reached \(appSpeed) on average", "a atteint \(appSpeed) en moyenne")
            : pick("was not measured", "n'a pas été mesuré")
        let controlReached = controlMeasured ? control : pick("was not measured", "n'a pas été mesuré")
        return pick(
            "\(finding). Test of \(date) (\(zone)) against the Wehe server \(server): the app's recorded traffic "
                + "\(appReached), a bit-inverted copy of it (the control, which a classifier "
                + "cannot recognise) \(controlReached) (area test \(area), KS test p \(p); thresholds: area "
                + "\(summary.thresholds.area), p \(summary.thresholds.ksPValue), \(summary.thresholds.ruleSet) rule). "
                + "Measured with Wehe for Swift\(measured).",
            "\(finding). Test du \(date) (\(zone)) avec le serveur Wehe \(server) : le trafic enregistré de "
                + "l'appli \(appReached), une copie inversée bit à bit (le contrôle, "
                + "qu'un classificateur ne peut reconnaître) \(controlReached) (test d'aire \(area), test KS p \(p) ; "
                + "seuils : aire \(summary.thresholds.area), p \(summary.thresholds.ksPValue), règle "
                + "\(summary.thresholds.ruleSet)). Mesuré avec Wehe for Swift\(measured).")
    }
    /// A stored test without analysis.
    func summaryWithoutAnalysis(app: String, date: String, zone: String, server: String) -> String {
        pick(
            "The Wehe test of \(app) of \(date) (\(zone)) against \(server) has no analysis.",
            "Le test Wehe de \(app) du \(date) (\(zone)) avec \(server) n'a pas d'analyse.")
    }
    /// Why a test is inconclusive for lack of measurements (`tooFewMeasurementsAdvice` says what to do, once for
    /// every test it concerns).
    func tooFewMeasurements(_ reason: String) -> String {
        pick("inconclusive, \(reason)", "non concluant, trop peu de mesures (\(reason))")
    }
    /// What to do about tests with too few measurements, said once under their reasons.
    func tooFewMeasurementsAdvice(tests: Int) -> String {
        tests == 1
            ? pick(
                "The replays were too short to measure on this path: run the test again or try a longer test.",
                "Les rejeux étaient trop courts pour être mesurés sur ce chemin : relancez le test ou essayez un test "
                    + "plus long.")
            : pick(
                "The replays of these \(tests) tests were too short to measure on this path: run them again or try "
                    + "longer tests.",
                "Les rejeux de ces \(tests) tests étaient trop courts pour être mesurés sur ce chemin : relancez-les "
                    + "ou essayez des tests plus longs.")
    }
}
