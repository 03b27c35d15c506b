import Synchronization
import WeheClient
import WeheCore
import WeheReplay

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Shows test progress: on a terminal, one live bar per replay (bytes, elapsed, current throughput) redrawn in
/// place; otherwise plain lines (start, about one progress line per second, end of each replay). Writes to stderr
/// when `--json` keeps stdout for the results, else to stdout.
final class ProgressRenderer: Sendable {
    private let strings: Strings
    private let live: Bool
    private let descriptor: Int32
    private let state = Mutex(State())
    /// The progress in plain words (names, data moved and left, time left).
    private let words: ProgressWords

    /// Progress of the replay in flight: recent (elapsed seconds, bytes) points and the time of the last plain line.
    private struct State {
        var points: [(seconds: Double, bytes: Int)] = []
        var lastPlainLine = 0.0

        /// Records a point and returns the throughput over about the last second, Mbit/s.
        mutating func rate(seconds: Double, bytes: Int) -> Double {
            points.append((seconds, bytes))
            while points.count > 2, points[1].seconds <= seconds - ProgressRenderer.rateWindow { points.removeFirst() }
            guard let first = points.first, seconds > first.seconds else { return 0 }
            return Double(bytes - first.bytes) * 8 / 1e6 / (seconds - first.seconds)
        }
    }

    /// The current throughput is measured over this many seconds.
    static let rateWindow = 1.0

    init(strings: Strings, json: Bool, tests: [ReplayClient.Test] = []) {
        self.strings = strings
        words = ProgressWords(strings: strings, tests: tests)
        descriptor = json ? STDERR_FILENO : STDOUT_FILENO
        live = isatty(descriptor) == 1
    }

    func handle(_ event: ReplayClientEvent) {
        switch event {
        case .testStarted(let test, let historyCount, let isConfirmation):
            emit(words.started(test, isConfirmation: isConfirmation) + " [#\(historyCount)]")
        case .replayStarted(let test, let role, _, _):
            state.withLock { $0 = State() }
            emit("  " + words.replayStarted(test, role: role))
        case .replayProgress(let test, _, let progress):
            render(progress, test: test)
        case .replayFinished(_, _, let outcome):
            words.replayFinished(outcome)
            let line =
                "    " + strings.replayDone(Terminal.bytes(outcome.bytesReceived), outcome.duration.inSeconds)
            if live { overwrite(line + "\n") } else { emit(line) }
        case .portBlocked(_, let port):
            emit("  \(strings.blockedPort): \(port)")
        case .analysisRequested:
            emit("  \(strings.analysing)…")
        case .confirmationScheduled(_, _, let first):
            emit("  " + strings.confirmationLine(first))
        case .testFinished:
            break
        case .roundFinished(_, let round):
            emit("  " + strings.adaptiveRoundLine(round))
        case .roundStarted(let test, let round, let rounds):
            emit(words.roundStarted(test, round: round, of: rounds))
        }
    }

    /// Shows the progress of a WeHeY localization (the simultaneous replays' bar follows server 1).
    func handle(_ event: LocalizationEvent) {
        switch event {
        case .pairEntered(let targets):
            for (index, target) in targets.enumerated() {
                emit(strings.fleetPairServer(index + 1, target.machine, target.place))
            }
        case .pairSelected(let servers, let networks, _):
            emit(strings.localizationPair(servers.first ?? "?", servers.last ?? "?", networks))
        case .replaysStarted(let role, let name):
            state.withLock { $0 = State() }
            emit(strings.simultaneousReplays(role == .original ? strings.original : strings.control, name))
        case .replayProgress(let server, _, let progress):
            if server == 0 { render(progress) }
        case .replayFinished(let server, _, let outcome):
            let line =
                "    #\(server + 1) "
                + strings.replayDone(Terminal.bytes(outcome.bytesReceived), outcome.duration.inSeconds)
            if live { overwrite(line + "\n") } else { emit(line) }
        case .serverVerdicts(let verdicts):
            emit(strings.serverVerdicts(verdicts.map { strings.verdict($0.rawValue) }.joined(separator: " / ")))
        case .localizationRequested:
            emit(strings.localizing + "…")
        case .waitingForResult, .finished:
            break
        }
    }

    /// One line of information among the progress lines.
    func note(_ line: String) {
        emit(line)
    }

    private func render(_ progress: ReplayProgress, test: String? = nil) {
        let seconds = progress.elapsed.inSeconds
        let (mbps, due) = state.withLock { state -> (Double, Bool) in
            let mbps = state.rate(seconds: seconds, bytes: progress.bytesReceived)
            guard seconds - state.lastPlainLine >= 1 else { return (mbps, false) }
            state.lastPlainLine = seconds
            return (mbps, true)
        }
        let speed = "\(Terminal.format(mbps, decimals: 1)) Mbit/s"
        let text =
            test.map { words.progress($0, progress, named: false) + ", " + speed }
            ?? "\(Terminal.bytes(progress.bytesReceived)), \(Terminal.format(seconds, decimals: 1)) s, " + speed
        if live {
            let width = 24
            let filled = Int((progress.fractionDone * Double(width)).rounded())
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            overwrite("    [\(bar)] \(text)")
        } else if due {
            emit("    \(text)")
        }
    }

    /// Redraws the live line; until a newline ends it, an error message first ends it (`Terminal.printError`).
    private func overwrite(_ text: String) {
        Terminal.openLine.withLock { $0 = text.hasSuffix("\n") ? nil : descriptor }
        write("\r\u{1B}[2K" + text)
    }

    /// Writes a line, word-wrapped to 80 columns or the terminal's narrower width (continuation lines indented two
    /// more than the line).
    private func emit(_ line: String) {
        let width = min(80, Terminal.columns(descriptor) ?? 80)
        let indent = String(line.prefix(while: { $0 == " " }))
        let text =
            line.count > width
            ? indent
                + Terminal.wrap(String(line.dropFirst(indent.count)), width: width - indent.count, indent: "  ")
                .replacingOccurrences(of: "\n", with: "\n" + indent) : line
        Terminal.openLine.withLock { $0 = nil }
        write((live ? "\r\u{1B}[2K" : "") + text + "\n")
    }

    private func write(_ text: String) {
        _ = text.withCString { Glibc_write(descriptor, $0, strlen($0)) }
    }
}

@inline(__always)
private func Glibc_write(_ descriptor: Int32, _ pointer: UnsafePointer<CChar>, _ count: Int) -> Int {
    write(descriptor, pointer, count)
}
