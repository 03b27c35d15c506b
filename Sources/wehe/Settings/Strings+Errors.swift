/// Words of errors: the French lead of one-line errors and the messages about files, directories and commands.
extension Strings {
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
