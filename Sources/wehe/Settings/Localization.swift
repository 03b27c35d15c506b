import Synchronization
import WeheClient
import WeheCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// User-facing messages in English and French (the published apps ship both), chosen by `--lang`, else the
/// settings, else `LC_ALL` / `LC_MESSAGES` / `LANG`.
struct Strings: Sendable {
    /// The language in use.
    enum Language: String, Sendable, CaseIterable {
        case en
        case fr
    }

    let language: Language

    /// The language the command chose last (`select`), for messages printed where no `Strings` is at hand (the
    /// one-line error of `CLIError.exit()`).
    static let current = Mutex<Language?>(nil)

    /// Picks the language (and remembers it as `current`): an explicit choice, else the locale, else English.
    static func select(_ explicit: String?) -> Strings {
        let strings = choose(explicit)
        current.withLock { $0 = strings.language }
        return strings
    }

    /// The language the command chose (`select`), else the locale's.
    static var active: Strings {
        Strings(language: current.withLock { $0 } ?? choose(nil).language)
    }

    private static func choose(_ explicit: String?) -> Strings {
        if let explicit, let language = Language(rawValue: String(explicit.lowercased().prefix(2))) {
            return Strings(language: language)
        }
        for variable in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = getenv(variable).map({ String(cString: $0) }), !value.isEmpty {
                return Strings(language: value.lowercased().hasPrefix("fr") ? .fr : .en)
            }
        }
        return Strings(language: .en)
    }

    private func pick(_ english: String, _ french: String) -> String { language == .fr ? french : english }

    var consentTitle: String { pick("Before you run a test", "Avant de lancer un test") }
    /// The consent text; `data` says what the tests at hand cost (`costSentence`), from the same estimate as the
    /// command line's and the dashboard's.
    func consentText(data: String) -> String {
        pick(
            """
            Wehe replays recorded traffic of apps (video, music, calls) and of some ports between this computer and \
            a Wehe server, and compares it with a disguised copy to detect whether your network treats the apps \
            differently. A test uses data: \(data) Check your data plan. The server records the throughput of each replay, your network address in anonymised form, the \
            test counter and a random user id; no personal content is sent. Results may be published in aggregated \
            form for research.
            """,
            """
            Wehe rejoue le trafic enregistré d'applications (vidéo, musique, appels) et de certains ports entre cet \
            ordinateur et un serveur Wehe, et le compare à une copie déguisée pour détecter si votre réseau traite \
            ces applications différemment. Un test consomme des données : \(data) Vérifiez votre forfait. Le serveur enregistre le débit de chaque rejeu, votre adresse \
            réseau anonymisée, le compteur de tests et un identifiant aléatoire ; aucun contenu personnel n'est \
            envoyé. Les résultats peuvent être publiés sous forme agrégée à des fins de recherche.
            """)
    }
    /// "The tests you chose move about 109 MB and take about 1 min (up to 218 MB and 2 min with confirmation
    /// runs)."; with `name`, the largest test of a list: "The largest test here, Netflix, moves …".
    func costSentence(_ cost: TestCost, largest name: String? = nil) -> String {
        let bytes = Terminal.bytes(cost.bytes)
        let most = Terminal.bytes(cost.mostBytes)
        let time = RunPlan.duration(cost.seconds)
        let mostTime = RunPlan.duration(cost.mostSeconds)
        let upTo =
            cost.mostBytes > cost.bytes
            ? pick(" (up to \(most) and \(mostTime) at most)", " (jusqu'à \(most) et \(mostTime) au plus)") : ""
        if let name {
            return pick(
                "the largest test here, \(name), moves about \(bytes) and takes about \(time)\(upTo).",
                "le plus gros test ici, \(name), échange environ \(bytes) en environ \(time)\(upTo).")
        }
        return pick(
            "the tests you chose move about \(bytes) and take about \(time)\(upTo).",
            "les tests choisis échangent environ \(bytes) en environ \(time)\(upTo).")
    }
    /// Asked before a run that moves more than `RunCommand.askAboveBytes` or lasts more than
    /// `RunCommand.askAboveSeconds`.
    func costQuestion(_ cost: TestCost, tests: Int) -> String {
        pick("\(tests) test\(tests == 1 ? "" : "s"): ", "\(tests) test\(tests == 1 ? "" : "s") : ")
            + costSentence(cost) + pick(" Continue? [y/N] ", " Continuer ? [o/N] ")
    }
    func costNotConfirmed(_ cost: TestCost) -> String {
        pick(
            "not started: \(costSentence(cost)) Run it in a terminal to answer, or pass --yes",
            "non lancé : \(costSentence(cost)) Lancez la commande dans un terminal pour répondre, ou passez --yes")
    }
    var costDeclined: String { pick("not started; no test was run", "non lancé ; aucun test lancé") }
    var consentPrompt: String { pick("Type 'yes' to accept: ", "Tapez « oui » pour accepter : ") }
    var consentAcceptedWords: Set<String> { ["yes", "y", "oui", "o"] }
    var consentRequired: String {
        pick(
            "consent is required before running tests: run interactively, or pass --accept-consent",
            "le consentement est nécessaire avant de lancer des tests : lancez la commande dans un terminal, ou passez --accept-consent"
        )
    }
    var consentDeclined: String { pick("consent declined; no test was run", "consentement refusé ; aucun test lancé") }

    func verdict(_ verdict: String) -> String {
        switch verdict {
        case "differentiation": pick("differentiation", "différenciation")
        case "no-differentiation": pick("no differentiation", "pas de différenciation")
        case "inconclusive": pick("inconclusive", "non concluant")
        case "blocked": pick("blocked", "bloqué")
        default: verdict
        }
    }
    func direction(_ direction: String) -> String {
        direction == "throttled" ? pick("throttled", "bridé") : pick("prioritized", "priorisé")
    }

    var original: String { pick("original", "original") }
    var control: String { pick("control", "contrôle") }
    var testHeader: String { pick("TEST", "TEST") }
    var verdictHeader: String { pick("VERDICT", "VERDICT") }
    var originalHeader: String { pick("APP", "APPLI") }
    var controlHeader: String { pick("CTRL", "CTRL") }
    var dateHeader: String { "DATE" }
    var pValueHeader: String { pick("KS p", "KS p") }
    var areaHeader: String { pick("AREA", "AIRE") }
    var timeHeader: String { pick("TIME", "DURÉE") }
    var noResults: String {
        pick("No results yet. Run `wehe run <test>`.", "Aucun résultat. Lancez `wehe run <test>`.")
    }
    var analysing: String { pick("waiting for the analysis", "attente de l'analyse") }
    var confirming: String { pick("confirmation run", "test de confirmation") }
    /// Before a test's replays: "Testing Netflix: about 54 MB and 40 s" (a confirmation run says it runs again).
    func testStartedWords(_ name: String, bytes: String?, time: String?, confirmation: Bool) -> String {
        let cost = bytes.flatMap { bytes in time.map { (bytes, $0) } }
        if confirmation {
            return pick("Running \(name) again to confirm the first result", "Nouveau test de \(name) pour confirmer")
                + (cost.map { pick(": about \($0.0) and \($0.1)", " : environ \($0.0) et \($0.1)") } ?? "")
        }
        return pick("Testing \(name)", "Test de \(name)")
            + (cost.map { pick(": about \($0.0) and \($0.1)", " : environ \($0.0) et \($0.1)") } ?? "")
    }
    /// "Replaying Netflix (original)", with what has moved and what is left when known: "…: 12 MB of 54 MB, about
    /// 40 s left".
    func replayingWords(_ name: String, role: ReplayRole, progress: (done: String, total: String?, left: String?)?)
        -> String
    {
        let what =
            role == .original
            ? pick("original, the app's recorded traffic", "original, le trafic enregistré de l'appli")
            : pick("control, the same bytes disguised", "contrôle, les mêmes octets déguisés")
        let text = pick("Replaying \(name) (\(what))", "Rejeu de \(name) (\(what))")
        guard let progress else { return text }
        return text + pick(": ", " : ") + movedWords(progress.done, total: progress.total, left: progress.left)
    }
    /// What a setting is and what it accepts, on the dashboard's settings page.
    func settingHelp(_ key: String) -> String {
        switch key {
        case "server":
            pick(
                "Replay server: a host name or address (the default name means the public fleet).",
                "Serveur de rejeu : nom ou adresse (le nom par défaut désigne la flotte publique).")
        case "cert":
            pick(
                "PEM file of the CA that signs the server's certificate, or none.",
                "Fichier PEM de l'autorité qui signe le certificat du serveur, ou none.")
        case "locate-url":
            pick("Locate service URL, or default (M-Lab's).", "URL du service locate, ou default (M-Lab).")
        case "locate-ca":
            pick(
                "PEM file of a CA for the locate service, or none.", "Fichier PEM d'une autorité pour locate, ou none.")
        case "site": pick("Fleet site to use, or nearest.", "Site de la flotte à utiliser, ou nearest.")
        case "user-id":
            pick(
                "Your anonymous id: 2 to 64 letters or digits (the dashboard keeps showing the history of the id it "
                    + "started with).",
                "Votre identifiant anonyme : 2 à 64 lettres ou chiffres (le tableau de bord montre l'historique de "
                    + "l'identifiant de son démarrage).")
        case "area-threshold":
            pick(
                "Area threshold: a fraction in [0, 1], or default.", "Seuil d'aire : fraction dans [0, 1], ou default.")
        case "p-threshold":
            pick(
                "KS p-value threshold: a fraction in [0, 1], or default.",
                "Seuil de p-valeur KS : fraction dans [0, 1], ou default.")
        case "rules": pick("Verdict rules: android or ios.", "Règles du verdict : android ou ios.")
        case "confirmation":
            pick(
                "on: a differentiation or an unclear result is run again to confirm it; off.",
                "on : une différenciation ou un résultat incertain est retesté pour confirmation ; off.")
        case "language": pick("Language: en, fr or auto.", "Langue : en, fr ou auto.")
        case "consent": pick("Consent to run tests: on or off.", "Consentement aux tests : on ou off.")
        case "asn-prefixes":
            pick(
                "Your own IP-to-AS prefix file (RouteViews), or none.",
                "Votre fichier de préfixes IP vers AS (RouteViews), ou none.")
        case "asn-names": pick("AS names file, or none.", "Fichier des noms d'AS, ou none.")
        case "provider":
            pick(
                "Provider name shown instead of the AS name, or none.",
                "Nom du fournisseur affiché au lieu du nom d'AS, ou none.")
        default: ""
        }
    }
    /// The dashboard's first log line of a test.
    func connectingWords(_ server: String) -> String {
        pick("Connecting to the Wehe server \(server)", "Connexion au serveur Wehe \(server)")
    }
    /// A port test whose port could not be reached.
    func portBlockedWords(_ name: String, port: Int) -> String {
        pick(
            "\(name): port \(port) could not be reached (it may be blocked)",
            "\(name) : le port \(port) est injoignable (il est peut-être bloqué)")
    }
    /// Before an interleaved run's further round: "Round 3 of 10 of Deezer: about 12 MB and 2 s; 98 MB and 16 s
    /// left with this round and the later ones".
    func roundStartedWords(
        _ name: String, round: Int, of rounds: Int, cost: (String, String)?, left: (String, String)?
    ) -> String {
        var text = pick("Round \(round) of \(rounds) of \(name)", "Manche \(round) sur \(rounds) de \(name)")
        if let cost { text += pick(": about \(cost.0) and \(cost.1)", " : environ \(cost.0) et \(cost.1)") }
        if let left {
            text += pick(
                "; \(left.0) and \(left.1) left with this round and the later ones",
                "; reste \(left.0) et \(left.1) avec cette manche et les suivantes")
        }
        return text
    }
    /// "12 MB of 54 MB, about 40 s left".
    func movedWords(_ done: String, total: String?, left: String?) -> String {
        var text = done
        if let total { text += pick(" of \(total)", " sur \(total)") }
        if let left { text += pick(", about \(left) left", ", environ \(left) restant") }
        return text
    }
    /// After an adaptive verdict's round: "round 3 (long round): 4.2 MB of at most 20 MB so far, app 12 % slower;
    /// another round".
    func adaptiveRoundLine(_ round: AdaptiveRoundProgress) -> String {
        let slowdown = Int((abs(round.slowdown) * 100).rounded())
        let effect =
            round.slowdown >= 0
            ? pick("app \(slowdown) % slower", "appli \(slowdown) % plus lente")
            : pick("app \(slowdown) % faster", "appli \(slowdown) % plus rapide")
        let long = round.isFloorRound ? pick(" (long round)", " (manche longue)") : ""
        return pick("round", "manche") + " \(round.round)\(long): "
            + pick(
                "\(Terminal.bytes(round.bytesMoved)) of at most \(Terminal.bytes(round.maximumBytes)) so far, ",
                "\(Terminal.bytes(round.bytesMoved)) sur \(Terminal.bytes(round.maximumBytes)) au plus, ")
            + "\(effect); \(round.status)"
    }

    /// What the first run found, and why the test runs once more (a differentiation or blocked port is always
    /// confirmed, as every Wehe client does; an inconclusive result is retried).
    func confirmationLine(_ first: AnalysisSummary) -> String {
        let app = Terminal.format(first.originalMeanMbps, decimals: 1, language: language)
        let control = Terminal.format(first.controlMeanMbps, decimals: 1, language: language)
        let speeds = pick("app \(app) vs control \(control) Mbit/s", "appli \(app) contre contrôle \(control) Mbit/s")
        let area = Terminal.format(abs(first.areaTest), decimals: 2, language: language)
        let p = Terminal.pValue(first.ksPValue, language: language)
        switch first.verdict {
        case .differentiation:
            let found =
                first.direction == .prioritized
                ? pick("the app looks prioritized", "l'appli semble priorisée")
                : pick("the app looks throttled", "l'appli semble bridée")
            return pick(
                "\(found) (\(speeds), area \(area), KS p \(p)); running the whole test once more to confirm it "
                    + "(Wehe always confirms a differentiation; the second run's verdict is kept)",
                "\(found) (\(speeds), aire \(area), KS p \(p)) ; le test complet est relancé une fois pour le "
                    + "confirmer (Wehe confirme toujours une différenciation ; le verdict du second test est gardé)")
        case .blocked:
            return pick(
                "the tested port could not be reached; running the whole test once more to confirm it",
                "le port testé est injoignable ; le test complet est relancé une fois pour le confirmer")
        case .inconclusive, .noDifferentiation:
            let why: String
            if let reason = first.insufficientDataReason {
                why = pick(reason, "trop peu de mesures")
            } else {
                why = pick(
                    "the average speeds differ (\(speeds), area \(area)) but the KS test does not confirm it (p \(p))",
                    "les débits moyens diffèrent (\(speeds), aire \(area)) mais le test KS ne le confirme pas (p \(p))")
            }
            return pick(
                "inconclusive: \(why); running the whole test once more (the second run's verdict is kept)",
                "non concluant : \(why) ; le test complet est relancé une fois (le verdict du second test est gardé)")
        }
    }
    var blockedPort: String { pick("port blocked", "port bloqué") }
    var failed: String { pick("failed", "échec") }
    var interrupted: String {
        pick("interrupted; the server connection was closed", "interrompu ; connexion au serveur fermée")
    }
    func demoNote(_ replays: String) -> String {
        pick(
            "Demo: a Wehe server runs inside this process on 127.0.0.1 with the traces of \(replays). No traffic "
                + "leaves this computer, so no consent is asked; `wehe run` asks before testing your real network. "
                + "Demo results are not added to your history.",
            "Démo : un serveur Wehe tourne dans ce processus sur 127.0.0.1 avec les traces de \(replays). Aucun "
                + "trafic ne quitte cet ordinateur, le consentement n'est donc pas demandé ; `wehe run` le demande "
                + "avant de tester votre vrai réseau. Les résultats de la démo ne sont pas ajoutés à l'historique.")
    }
    func demoThrottleNote(_ test: String, _ bitsPerSecond: Int) -> String {
        let rate = Terminal.format(Double(bitsPerSecond) / 1e6, decimals: 2)
        return pick(
            "A throttling middlebox on 127.0.0.2 recognises \(test) by its first bytes and slows it to \(rate) Mbit/s.",
            "Un boîtier de bridage sur 127.0.0.2 reconnaît \(test) à ses premiers octets et le limite à \(rate) Mbit/s."
        )
    }
    func demoThrottleTooHigh(_ test: String, averageBitsPerSecond: Double) -> String {
        let average = Terminal.format(averageBitsPerSecond / 1e6, decimals: 2)
        let half = Terminal.format(averageBitsPerSecond / 2e6, decimals: 2)
        return pick(
            "Note: \(test)'s trace needs only \(average) Mbit/s on average, so this cap reshapes its bursts without "
                + "lowering its average much; the area test will probably not report differentiation. A rate below "
                + "\(half) Mbit/s (or molotovtv:20mbit) shows it.",
            "Remarque : la trace de \(test) ne demande que \(average) Mbit/s en moyenne ; ce plafond remodèle ses "
                + "rafales sans beaucoup baisser sa moyenne, et le test d'aire ne signalera probablement pas de "
                + "différenciation. Un débit sous \(half) Mbit/s (ou molotovtv:20mbit) la montre."
        )
    }
    func replayDone(_ bytes: String, _ seconds: Double) -> String {
        let time = Terminal.format(seconds, decimals: 1)
        return pick("\(bytes) in \(time) s", "\(bytes) en \(time) s")
    }
    func replayLine(_ position: Int, _ role: String, _ name: String) -> String {
        pick("replay \(position)/2 (\(role)): \(name)", "rejeu \(position)/2 (\(role)) : \(name)")
    }

    // WeHeY localization.

    /// The localization verdict in plain words.
    func localizationVerdict(_ verdict: String) -> String {
        switch verdict {
        case "access-network":
            pick("the throttling is in your access network", "le bridage se situe dans votre réseau d'accès")
        case "no-evidence":
            pick(
                "no evidence that it is in your access network",
                "aucun indice qu'il se situe dans votre réseau d'accès")
        default: pick("inconclusive", "non concluant")
        }
    }
    /// A short form for tables.
    func localizationShort(_ verdict: String) -> String {
        switch verdict {
        case "access-network": pick("access network", "réseau d'accès")
        case "no-evidence": pick("no evidence", "aucun indice")
        default: pick("inconclusive", "non concluant")
        }
    }
    /// Why a localization is inconclusive (or ended as "no evidence" early), by reason code.
    func localizationReason(_ code: String) -> String {
        switch code {
        case "no-server-pair":
            pick(
                "no pair of servers is known for your network",
                "aucune paire de serveurs n'est connue pour votre réseau")
        case "server-unreachable": pick("a server could not be reached", "un serveur est injoignable")
        case "replay-failed": pick("a replay of the pair failed", "un rejeu de la paire a échoué")
        case "analysis-failed": pick("a server could not analyse its test", "un serveur n'a pas pu analyser son test")
        case "not-differentiated-on-both":
            pick(
                "differentiation did not occur with both servers",
                "la différenciation n'est pas apparue avec les deux serveurs")
        case "localize-refused":
            pick("the server could not compute the localization", "le serveur n'a pas pu calculer la localisation")
        case "result-not-ready": pick("the server had no result in time", "le serveur n'a pas répondu à temps")
        case "result-mismatch": pick("the server answered for another test", "le serveur a répondu pour un autre test")
        case "no-test-results":
            pick("too little data for the statistics", "trop peu de données pour les statistiques")
        case "site-not-located":
            pick(
                "the locate service found no server for a site of the pair",
                "le service de localisation n'a trouvé aucun serveur pour un site de la paire")
        case "envelope-failed":
            pick(
                "the access envelope of a server of the pair did not open or closed",
                "l'enveloppe d'accès d'un serveur de la paire ne s'est pas ouverte ou s'est fermée")
        default: code
        }
    }
    /// `Localization: <verdict>` (with the reason for inconclusive).
    func localizationLine(_ verdict: String, reason: String?) -> String {
        var text = localizationVerdict(verdict)
        if verdict == "inconclusive", let reason { text += " (\(localizationReason(reason)))" }
        return pick("Localization: ", "Localisation : ") + text
    }
    var localizationHeader: String { pick("LOCALIZATION", "LOCALISATION") }
    var serversHeader: String { pick("SERVERS", "SERVEURS") }
    func localizationSkipped(_ test: String) -> String {
        pick(
            "\(test): no differentiation found, localization skipped (--force runs it anyway)",
            "\(test) : pas de différenciation, localisation non lancée (--force la lance quand même)")
    }
    func localizationPair(_ first: String, _ second: String, _ networks: String) -> String {
        let shared = networks.isEmpty ? "" : pick(", shared: \(networks)", ", commun : \(networks)")
        return pick(
            "localization with servers \(first) and \(second)", "localisation avec les serveurs \(first) et \(second)")
            + shared
    }
    /// One located machine of a fleet pair, its envelope open.
    func fleetPairServer(_ number: Int, _ machine: String, _ place: String) -> String {
        let at = place.isEmpty ? "" : " (\(place))"
        return pick(
            "WeHeY server \(number): \(machine)\(at), access envelope open",
            "serveur WeHeY \(number) : \(machine)\(at), enveloppe d'accès ouverte")
    }
    func simultaneousReplays(_ role: String, _ name: String) -> String {
        pick(
            "  \(role) replay on both servers at once: \(name)",
            "  rejeu \(role) sur les deux serveurs à la fois : \(name)")
    }
    func serverVerdicts(_ verdicts: String) -> String {
        pick("  each server: \(verdicts)", "  chaque serveur : \(verdicts)")
    }
    /// Before each test of several: where we are and what is left.
    func testOfTests(_ k: Int, _ n: Int, _ name: String, minutes: String, data: String, testsLeft: Int) -> String {
        pick(
            "test \(k) of \(n): \(name) (about \(minutes) and \(data) for the \(testsLeft) test"
                + "\(testsLeft == 1 ? "" : "s") left, confirmation runs not counted)",
            "test \(k) sur \(n) : \(name) (environ \(minutes) et \(data) pour \(testsLeft == 1 ? "le" : "les") "
                + "\(testsLeft) test\(testsLeft == 1 ? "" : "s") restant\(testsLeft == 1 ? "" : "s"), hors "
                + "tests de confirmation)")
    }
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
    /// The French lead of a one-line error (the detail that follows stays as the library wrote it); `nil` in
    /// English, where the message speaks for itself.
    func errorLead(_ code: CLIError.Code) -> String? {
        guard language == .fr else { return nil }
        switch code {
        case .invalidInput: return "entrée invalide"
        case .missingInput: return "fichier ou répertoire introuvable"
        case .consentRequired: return "consentement nécessaire"
        case .unreachable: return "serveur injoignable"
        case .tlsFailed: return "échec TLS (certificat du serveur non reconnu)"
        case .portMapMissing: return "le serveur ne connaît pas ce port"
        case .noEnvelope: return "aucun serveur de la flotte n'a ouvert son accès"
        case .replayUnknownOnServer: return "le serveur n'a pas ce rejeu"
        case .addressBusy: return "un autre test est en cours"
        case .serverBusy: return "serveur surchargé, réessayez plus tard"
        case .refused: return "refusé par le serveur"
        case .protocolViolation: return "le serveur a rompu l'échange ou fermé la connexion"
        case .analyzerFailed: return "l'analyse du serveur a échoué"
        case .serverStoppedAnswering: return "le serveur ne répond plus"
        case .replayFailed: return "le rejeu a échoué"
        case .resultMismatch: return "le serveur a répondu pour un autre test"
        case .storeFailed: return "impossible d'écrire l'historique ou les réglages"
        case .localizationInconclusive: return "localisation non concluante"
        case .locateUnreachable: return "service de localisation injoignable"
        case .locateTimedOut: return "le service de localisation n'a pas répondu à temps"
        case .locateRefused: return "le service de localisation a refusé"
        case .locateEmpty: return "le service de localisation n'a proposé aucun serveur"
        case .locateMalformed: return "réponse illisible du service de localisation"
        case .envelopeClosed: return "l'accès au serveur s'est fermé pendant le test"
        case .locateRateLimited: return "trop de demandes au service de localisation (M-Lab), réessayez plus tard"
        case .allowanceExhausted: return "forfait de données de la surveillance insuffisant"
        case .clientTracesRefused: return "le serveur n'exécute pas ce test enregistré"
        case .usage: return "commande incorrecte"
        case .interrupted: return "interrompu"
        }
    }
    /// A second test while one runs (one test per user id at a time on the server).
    func anotherTestRunning(_ holder: String?) -> String {
        let parts = holder?.split(separator: " ").map(String.init) ?? []
        let who =
            parts.count >= 2
            ? pick(" (process \(parts[0]), started at \(parts[1]))", " (processus \(parts[0]), lancé à \(parts[1]))")
            : ""
        return pick(
            "another wehe test is running with this data directory\(who); the server runs one test per user at a "
                + "time and starting one now would end it: wait until it finishes",
            "un autre test wehe tourne avec ce répertoire de données\(who) ; le serveur ne fait qu'un test à la fois "
                + "par utilisateur et en lancer un maintenant l'interromprait : attendez qu'il se termine")
    }
    /// A data directory that cannot be created or written.
    func cannotCreateDirectory(_ path: String, _ error: any Error) -> String {
        pick("cannot write the data directory \(path): ", "impossible d'écrire le répertoire de données \(path) : ")
            + FileErrors.describe(error, language: language) + anotherDirectory
    }
    private var anotherDirectory: String {
        pick(" (choose another with --data-dir)", " (choisissez-en un autre avec --data-dir)")
    }
    func cannotWrite(_ path: String, _ error: any Error) -> String {
        pick("cannot write \(path): ", "impossible d'écrire \(path) : ")
            + FileErrors.describe(error, language: language)
    }
    func settingsUnreadable(_ path: String, _ reason: String) -> String {
        pick(
            "the settings file \(path) is unreadable: \(reason)",
            "le fichier de réglages \(path) est illisible : \(reason)")
    }
    func dataDirectoryNotDirectory(_ path: String) -> String {
        pick(
            "cannot use the data directory \(path): not a directory",
            "impossible d'utiliser le répertoire de données \(path) : ce n'est pas un répertoire") + anotherDirectory
    }
    func dataDirectoryAncestorNotDirectory(_ path: String, _ ancestor: String) -> String {
        pick(
            "cannot create the data directory \(path): \(ancestor) is not a directory",
            "impossible de créer le répertoire de données \(path) : \(ancestor) n'est pas un répertoire")
            + anotherDirectory
    }
    func dataDirectoryAncestorDenied(_ path: String, _ ancestor: String) -> String {
        pick(
            "cannot create the data directory \(path): permission denied in \(ancestor)",
            "impossible de créer le répertoire de données \(path) : permission refusée dans \(ancestor)")
            + anotherDirectory
    }
    /// A test name the catalog does not know, with the closest known ones.
    func unknownTest(_ name: String, suggestions: [(id: String, name: String?)]) -> String {
        // The id is what to type, so it alone is quoted: 'tinyweb' (Tiny Web).
        let quoted = suggestions.map { suggestion in
            (language == .fr ? "« \(suggestion.id) »" : "'\(suggestion.id)'")
                + (suggestion.name.map { " (\($0))" } ?? "")
        }
        let alternatives = quoted.joined(separator: pick(" or ", " ou "))
        let guess =
            quoted.isEmpty ? "" : pick("; did you mean \(alternatives)?", " ; vouliez-vous dire \(alternatives) ?")
        return pick(
            "no test named '\(name)' in the catalog\(guess) (`wehe replays` lists the tests)",
            "aucun test nommé « \(name) » dans le catalogue\(guess) (`wehe replays` liste les tests)")
    }
    /// A word where a command was expected, with the closest commands.
    func unknownCommand(_ word: String, path: String, suggestions: [String], known: [String]) -> String {
        let quoted = suggestions.map { language == .fr ? "« \(path) \($0) »" : "'\(path) \($0)'" }
        if !quoted.isEmpty {
            let alternatives = quoted.joined(separator: pick(" or ", " ou "))
            return pick(
                "'\(word)' is not a command of \(path); did you mean \(alternatives)?",
                "« \(word) » n'est pas une commande de \(path) ; vouliez-vous dire \(alternatives) ?")
        }
        return pick(
            "'\(word)' is not a command of \(path); its commands: \(known.joined(separator: ", "))",
            "« \(word) » n'est pas une commande de \(path) ; ses commandes : \(known.joined(separator: ", "))")
    }
    var localizing: String { pick("  waiting for the localization", "  attente de la localisation") }
    var detail: String { pick("detail", "détail") }
}
