import ArgumentParser
import Logging
import WeheStore

/// Opens the result store chosen on the command line.
enum StoreFactory {
    static func open(kind: String, dataDirectory: String, postgresURL: String?, logger: Logger) async throws
        -> any ResultStore
    {
        switch kind {
        case "memory":
            logger.warning("results are kept in memory only and lost at exit")
            return InMemoryResultStore()
        default:
            throw ValidationError("--store must be sqlite, postgres or memory (got \(kind))")
        }
    }
}
