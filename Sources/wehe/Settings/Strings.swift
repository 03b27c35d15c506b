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

    func pick(_ english: String, _ french: String) -> String { language == .fr ? french : english }

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
}
