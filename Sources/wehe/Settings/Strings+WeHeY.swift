/// Words of WeHeY localization: its verdicts and reasons, server pairs, and the progress of a run of many tests.
extension Strings {
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
}
