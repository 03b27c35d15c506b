import Logging
import WeheStore
import WeheStoreSQL

/// The person's result history: the SQLite `SQLResultStore` at `<data directory>/history.sqlite`.
///
/// The client writes one finished test per transaction (a failed or interrupted test writes nothing), so the file
/// never holds half a test. Every command opens the store, uses it and closes it before returning.
enum History {
    /// Opens (creating when missing) the history of a data directory and migrates its schema.
    /// - Throws: `CLIError` `.storeFailed` naming the file and the cause (locked, corrupt, not writable, newer schema).
    static func open(_ directory: DataDirectory) async throws -> SQLResultStore {
        let configuration = SQLStoreConfiguration(
            backend: .sqlite(SQLiteOptions(path: directory.historyPath, createIfMissing: true)))
        do {
            return try await SQLResultStore.open(configuration: configuration, logger: Logger(label: "wehe.history"))
        } catch {
            throw CLIError(code: .storeFailed, "cannot open the result history: \(error.description)")
        }
    }

    /// Opens the history, runs `body` with it and closes it on every path.
    static func with<T>(_ directory: DataDirectory, _ body: (SQLResultStore) async throws -> T) async throws -> T {
        let store = try await open(directory)
        do {
            let value = try await body(store)
            await store.close()
            return value
        } catch {
            await store.close()
            throw error
        }
    }
}
