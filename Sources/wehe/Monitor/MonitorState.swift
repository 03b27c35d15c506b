import Foundation
import WeheClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The monitor's ledger in `<data directory>/monitor.json`: what the allowance has counted this month, the next
/// planned run and the last runs. Read and changed under the settings' lock (`settings.lock`) and replaced
/// atomically (temporary file, fsync, rename), so that two monitors, or a monitor and `wehe settings`, never lose
/// each other's changes and a reader never sees half a file.
extension DataDirectory {
    var monitorPath: String { path + "/monitor.json" }

    /// Reads the ledger (an empty one when there is none).
    /// - Throws: `CLIError` `.invalidInput` for an unreadable file (it is left as it is).
    func loadMonitorLedger() throws -> MonitorLedger {
        guard let data = FileManager.default.contents(atPath: monitorPath) else { return MonitorLedger() }
        do {
            return try Self.ledgerDecoder.decode(MonitorLedger.self, from: data)
        } catch {
            throw CLIError(
                code: .invalidInput,
                "the monitor's ledger \(monitorPath) is unreadable (\(error)); move it away to start a new one")
        }
    }

    /// Reads, changes and writes the ledger under the settings' lock.
    @discardableResult
    func updateMonitorLedger<T>(_ change: (inout MonitorLedger) throws -> T) throws -> T {
        try create()
        let lock = try SettingsFileLock(path + "/settings.lock")
        defer { withExtendedLifetime(lock) {} }
        var ledger = try loadMonitorLedger()
        let value = try change(&ledger)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(ledger)
        } catch {
            throw CLIError(code: .storeFailed, "cannot encode the monitor's ledger: \(error)")
        }
        try Self.replaceAtomically(monitorPath, with: Array(data) + [0x0A])
        return value
    }

    private static var ledgerDecoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// Writes `bytes` to a temporary file beside `target`, fsyncs it and renames it over `target`.
    static func replaceAtomically(_ target: String, with bytes: [UInt8]) throws {
        let temporary = target + ".\(getpid()).tmp"
        func failed(_ number: Int32) -> CLIError {
            unlink(temporary)
            return CLIError(code: .storeFailed, Strings.active.cannotWrite(target, POSIXErrorText(number)))
        }
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failed(errno) }
        var rest = bytes[...]
        while !rest.isEmpty {
            let written = rest.withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                let number = errno
                close(descriptor)
                throw failed(number)
            }
            rest = rest.dropFirst(written)
        }
        guard fsync(descriptor) == 0 else {
            let number = errno
            close(descriptor)
            throw failed(number)
        }
        close(descriptor)
        guard rename(temporary, target) == 0 else { throw failed(errno) }
    }
}
