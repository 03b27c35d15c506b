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
}
