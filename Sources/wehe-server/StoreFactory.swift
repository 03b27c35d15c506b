import ArgumentParser
import Logging
import WeheStore
import WeheStoreSQL

/// Opens the result store chosen for `serve`: SQLite in the data directory (default), PostgreSQL by URL, or memory.
enum StoreFactory {
    static func open(kind: String, dataDirectory: String, postgresURL: String?, logger: Logger) async throws
        -> any ResultStore
    {
        let backend: SQLStoreConfiguration.Backend
        switch kind {
        case "memory":
            logger.warning("results are kept in memory only and lost at exit")
            return InMemoryResultStore()
        case "sqlite":
            backend = .sqlite(SQLiteOptions(path: dataDirectory + "/results.sqlite"))
        case "postgres":
            guard let url = postgresURL else { throw ValidationError("--store postgres needs --postgres-url") }
            backend = .postgres(PostgresOptions(url: url))
        default:
            throw ValidationError("--store must be sqlite, postgres or memory (got \(kind))")
        }
        do {
            return try await SQLResultStore.open(configuration: SQLStoreConfiguration(backend: backend), logger: logger)
        } catch {
            ServeCommand.printError("wehe-server: \(error)")
            throw ExitCode(3)
        }
    }
}
