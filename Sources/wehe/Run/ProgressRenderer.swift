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
    private let lastPlainLine = Mutex<Double>(-1)

    init(strings: Strings, json: Bool) {
        self.strings = strings
        descriptor = json ? STDERR_FILENO : STDOUT_FILENO
        live = isatty(descriptor) == 1
    }

    func handle(_ event: ReplayClientEvent) {
        switch event {
        case .testStarted(let test, let historyCount, let isConfirmation):
            emit("\(test) #\(historyCount)" + (isConfirmation ? " (\(strings.confirming))" : ""))
        case .replayStarted(_, let role, let name, let position):
            lastPlainLine.withLock { $0 = -1 }
            emit("  " + strings.replayLine(position, role == .original ? strings.original : strings.control, name))
        case .replayProgress(_, _, let progress):
            render(progress)
        case .replayFinished(_, _, let outcome):
            let line =
                "    \(Terminal.bytes(outcome.bytesReceived)) in \(Terminal.format(outcome.duration.inSeconds, decimals: 1)) s"
            if live { overwrite(line + "\n") } else { emit(line) }
        case .portBlocked(_, let port):
            emit("  \(strings.blockedPort): \(port)")
        case .analysisRequested:
            emit("  \(strings.analysing)…")
        case .confirmationScheduled(_, let verdict):
            emit("  \(strings.verdict(verdict.rawValue)): \(strings.confirming)")
        case .testFinished:
            break
        }
    }

    private func render(_ progress: ReplayProgress) {
        let seconds = progress.elapsed.inSeconds
        let text =
            "\(Terminal.bytes(progress.bytesReceived)), \(Terminal.format(seconds, decimals: 1)) s, "
            + "\(Terminal.format(progress.currentMbps, decimals: 1)) Mbit/s"
        if live {
            let width = 24
            let filled = Int((progress.fractionDone * Double(width)).rounded())
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            overwrite("    [\(bar)] \(text)")
        } else {
            let due = lastPlainLine.withLock { last -> Bool in
                guard seconds - last >= 1 else { return false }
                last = seconds
                return true
            }
            if due { emit("    \(text)") }
        }
    }

    private func overwrite(_ text: String) {
        write("\r\u{1B}[2K" + text)
    }

    private func emit(_ line: String) {
        write((live ? "\r\u{1B}[2K" : "") + line + "\n")
    }

    private func write(_ text: String) {
        _ = text.withCString { Glibc_write(descriptor, $0, strlen($0)) }
    }
}

@inline(__always)
private func Glibc_write(_ descriptor: Int32, _ pointer: UnsafePointer<CChar>, _ count: Int) -> Int {
    write(descriptor, pointer, count)
}
