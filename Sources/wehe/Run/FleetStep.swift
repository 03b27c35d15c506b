import Foundation
import WeheClient
import WeheCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The certificate the fleet's servers are checked against, and how to name it in messages.
struct FleetTrust: Sendable {
    /// The PEM file.
    var path: String
    /// "the Wehe CA (path)" or the `--cert` path.
    var label: String

    /// The file name of the Wehe CA the published clients ship.
    static let fileName = "wehe-ca.pem"

    /// The Wehe CA, found like the replays: `$WEHE_FLEET_CA`, `~/.local/share/wehe/wehe-ca.pem`, `wehe-fleet/` next
    /// to the replay directory, `./wehe-fleet/`, `../shared/wehe-fleet/`, then the installed one
    /// (`/usr/share/wehe/wehe-ca.pem`, or `share/wehe/` beside the executable's `bin/`).
    static func weheCA(replayDirectory: String?) throws -> FleetTrust {
        if let path = getenv("WEHE_FLEET_CA").map({ String(cString: $0) }), !path.isEmpty {
            return FleetTrust(path: path, label: "the Wehe CA (\(path))")
        }
        var candidates: [String] = []
        if let home = getenv("HOME").map({ String(cString: $0) }) {
            candidates.append(home + "/.local/share/wehe/" + fileName)
        }
        if let replayDirectory {
            var parent = replayDirectory
            while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }
            parent = (parent as NSString).deletingLastPathComponent
            candidates.append((parent.isEmpty ? "." : parent) + "/wehe-fleet/" + fileName)
        }
        candidates += ["wehe-fleet/" + fileName, "../shared/wehe-fleet/" + fileName] + InstalledData.certificateFiles
        if let found = candidates.first(where: { access($0, R_OK) == 0 }) {
            return FleetTrust(path: found, label: "the Wehe CA (\(found))")
        }
        throw CLIError(
            code: .missingInput,
            "the Wehe CA (\(fileName)) that the fleet's servers are signed by was not found (tried "
                + candidates.joined(separator: ", ") + "); pass it with --cert <pem> or set WEHE_FLEET_CA")
    }
}

/// How to reach the fleet for this command.
struct FleetPlan: Sendable {
    var configuration: FleetConfiguration
    var trust: FleetTrust
}

/// Locate, then the access envelope, around a command's tests (protocol.md section 10).
enum FleetStep {
    /// Runs `body` with the client configuration pointed at a fleet server whose envelope is open, then closes the
    /// envelope (also when `body` throws). Without a plan, `body` gets the configuration as it is.
    static func withAccess<T: Sendable>(
        _ plan: FleetPlan?,
        configuration: ReplayClientConfiguration,
        directory: DataDirectory,
        json: Bool,
        _ body: (ReplayClientConfiguration, AccessEnvelope?) async throws -> T
    ) async throws -> T {
        guard let plan else { return try await body(configuration, nil) }
        let answer = try await locate(plan.configuration, directory: directory, json: json)
        let access: FleetAccess
        do {
            access = try await FleetAccess.open(answer, configuration: plan.configuration) { attempt in
                say("access envelope of \(attempt.machine) did not open: \(attempt.reason)", json: json)
            }
        } catch {
            throw CLIError(error)
        }
        var configured = configuration
        configured.server = access.server
        configured.extraString = String(access.attempts)
        do {
            configured.trustedCertificatesPEM = try RunCommand.readCertificate(plan.trust.path)
        } catch {
            await access.close()
            throw error
        }
        let place = access.target.place.isEmpty ? "" : " (\(access.target.place))"
        say(
            "server: \(access.target.sideChannelHost)\(place), access envelope open"
                + (access.attempts > 1 ? " (server \(access.attempts) of \(answer.targets.count))" : ""),
            json: json)
        do {
            let value = try await body(configured, access.envelope)
            await access.close()
            return value
        } catch {
            await access.close()
            throw error
        }
    }

    /// The route of a command's steps: on the fleet, a session that opens one access envelope per step (M-Lab's
    /// envelope holds access for 10 minutes at most, its tokens are valid for 1 minute); else `configuration` as
    /// it is.
    static func route(
        _ plan: FleetPlan?,
        configuration: ReplayClientConfiguration,
        directory: DataDirectory,
        json: Bool
    ) throws -> FleetRoute {
        guard let plan else { return FleetRoute(session: nil, base: configuration, trustPEM: nil, json: json) }
        let trustPEM = try RunCommand.readCertificate(plan.trust.path)
        let session = FleetSession(configuration: plan.configuration, previous: loadCache(directory)) { event in
            switch event {
            case .located(let answer): report(answer, directory: directory, json: json)
            case .attemptFailed(let attempt):
                say("access envelope of \(attempt.machine) did not open: \(attempt.reason)", json: json)
            case .waiting(let until):
                say(
                    "locate: the kept answer's tokens have expired; waiting until "
                        + "\(ISO8601DateFormatter().string(from: until)) (its next_request) to ask again", json: json)
            }
        }
        return FleetRoute(session: session, base: configuration, trustPEM: trustPEM, json: json)
    }

    /// Says where a locate answer came from and keeps a new one in `<data dir>/locate.json`.
    static func report(_ answer: LocateAnswer, directory: DataDirectory, json: Bool) {
        if answer.reused {
            let until = answer.nextRequest.map { " before \(ISO8601DateFormatter().string(from: $0.notBefore))" } ?? ""
            say(
                "locate: reusing the answer of \(ISO8601DateFormatter().string(from: answer.receivedAt)) "
                    + "(the service asked not to be called again\(until))", json: json)
        } else {
            saveCache(answer, directory)
            say(
                "locate: \(answer.targets.count) server\(answer.targets.count == 1 ? "" : "s") from \(answer.requestURL)",
                json: json)
        }
    }

    /// Asks the locate service, or reuses the last answer when its `next_request` forbids asking yet; keeps the
    /// answer in `<data dir>/locate.json`.
    static func locate(_ configuration: FleetConfiguration, directory: DataDirectory, json: Bool) async throws
        -> LocateAnswer
    {
        let locator = FleetLocator(configuration: configuration)
        let previous = loadCache(directory)
        let answer: LocateAnswer
        do {
            answer = try await locator.locate(previous: previous)
        } catch {
            throw CLIError(error)
        }
        report(answer, directory: directory, json: json)
        return answer
    }

    static func cachePath(_ directory: DataDirectory) -> String { directory.path + "/locate.json" }

    static func loadCache(_ directory: DataDirectory) -> LocateAnswer? {
        guard let data = FileManager.default.contents(atPath: cachePath(directory)) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(LocateAnswer.self, from: data)
    }

    static func saveCache(_ answer: LocateAnswer, _ directory: DataDirectory) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(answer) else { return }
        try? FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        try? data.write(to: URL(fileURLWithPath: cachePath(directory)), options: .atomic)
    }

    /// A progress line: stdout, or stderr with `--json` (stdout is JSON only then).
    static func say(_ line: String, json: Bool) {
        if json { Terminal.printError(line) } else { print(line) }
    }
}

extension CLIError {
    /// The documented exit code of a fleet error.
    init(_ error: FleetError) {
        let code: Code =
            switch error.code {
            case .locateUnreachable: .locateUnreachable
            case .locateTimedOut: .locateTimedOut
            case .locateRefused: .locateRefused
            case .locateEmpty: .locateEmpty
            case .locateMalformed: .locateMalformed
            case .locateRateLimited: .locateRateLimited
            case .noEnvelope: .noEnvelope
            case .envelopeClosed: .envelopeClosed
            case .invalidConfiguration: .invalidInput
            }
        self.init(code: code, error.message)
    }

    /// A TLS failure says in one line which certificate was expected and how to pass one.
    func explainingTrust(_ expected: String) -> CLIError {
        guard code == .tlsFailed else { return self }
        let what = message.range(of: " failed:").map { String(message[..<$0.lowerBound]) } ?? "TLS"
        let verify = message.contains("CERTIFICATE_VERIFY_FAILED") || message.contains("certificate")
        let problem =
            verify
            ? "the server's certificate does not verify against \(expected)"
            : "the handshake failed (is it a TLS port?) while trusting \(expected)"
        return CLIError(code: code, "\(what) failed: \(problem); pass the certificate to trust with --cert <pem>")
    }
}

/// Where each step of a command runs (a test with its confirmation, a localization, a DPI search): the given server,
/// or on the fleet a server whose access envelope is opened for that step alone and closed after it.
struct FleetRoute: Sendable {
    /// The fleet session; `nil` for a given server.
    let session: FleetSession?
    /// The configuration without the fleet.
    let base: ReplayClientConfiguration
    /// The certificate the fleet's servers are checked against.
    let trustPEM: String?
    /// Progress on stderr (stdout is JSON only).
    let json: Bool

    /// One step's way in.
    struct Entered: Sendable {
        /// The client configuration pointed at the step's server.
        var configuration: ReplayClientConfiguration
        /// The step's open envelope (fleet only).
        var envelope: AccessEnvelope?
        /// The machine (fleet only).
        var machine: String?
        /// When the envelope opened and how long it is held at most (fleet only).
        var envelopeDeadline: (opened: Date, length: Duration)?

        /// Whether `seconds` more fit in this step's envelope (always, off the fleet).
        func fits(_ seconds: Double) -> Bool {
            guard let envelopeDeadline else { return true }
            let left = envelopeDeadline.length.inSeconds - Date().timeIntervalSince(envelopeDeadline.opened)
            return seconds < left
        }
    }

    /// Runs `body` with a server for one step: on the fleet an envelope is opened (on `machine` when given: a
    /// localization or DPI search runs on its test's machine) and closed after `body`, also when it throws.
    func within<T: Sendable>(machine: String? = nil, _ body: (Entered) async throws -> T) async throws -> T {
        guard let session else { return try await body(Entered(configuration: base)) }
        let access: FleetAccess
        do {
            access = try await session.open(machine: machine)
        } catch {
            throw CLIError(error)
        }
        let opened = Date()
        var configured = base
        configured.server = access.server
        configured.extraString = String(access.attempts)
        configured.trustedCertificatesPEM = trustPEM
        let place = access.target.place.isEmpty ? "" : " (\(access.target.place))"
        FleetStep.say(
            "server: \(access.target.sideChannelHost)\(place), access envelope open"
                + (access.attempts > 1 ? " (server \(access.attempts) tried)" : ""),
            json: json)
        do {
            let value = try await body(
                Entered(
                    configuration: configured, envelope: access.envelope, machine: access.target.machine,
                    envelopeDeadline: (opened, session.configuration.envelopeDeadline)))
            await access.close()
            return value
        } catch {
            await access.close()
            throw error
        }
    }
}
