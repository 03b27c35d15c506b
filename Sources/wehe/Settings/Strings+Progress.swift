import WeheClient
import WeheCore

/// Words of a test in progress: verdict and direction names, table headers, the lines printed while replays run,
/// and the notes of the demo and the throttle option.
extension Strings {
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
}
