import ArgumentParser
import Foundation
import WeheStore
import WeheStoreSQL

/// Where the server keeps its results, shared by every subcommand that opens the store.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .customLong("data"),
        help: ArgumentHelp(
            "Server data directory, as for `serve` (default: $WEHE_SERVER_DATA_DIR, else $XDG_DATA_HOME/wehe-server, "
                + "else ~/.local/share/wehe-server)."
        )
    )
    var data: String?

    /// The former name of `--data`, still accepted.
    @Option(name: .customLong("data-directory"), help: .hidden)
    var legacyDataDirectory: String?

    /// The data directory given on the command line, under either name.
    var dataDirectory: String? { data ?? legacyDataDirectory }

    @Option(name: .customLong("database"), help: "SQLite database file (default: <data>/results.sqlite).")
    var databasePath: String?

    @Option(
        name: .customLong("postgres-url"),
        help: ArgumentHelp(
            "PostgreSQL URL postgres://user:password@host:port/database instead of SQLite "
                + "(or set $WEHE_SERVER_POSTGRES_URL)."
        )
    )
    var postgresURL: String?

    @Option(name: .customLong("ipv4-prefix"), help: "Prefix length kept of IPv4 client addresses.")
    var ipv4Prefix: Int = 24

    @Option(name: .customLong("ipv6-prefix"), help: "Prefix length kept of IPv6 client addresses.")
    var ipv6Prefix: Int = 48

    @Flag(name: .customLong("store-full-client-address"), help: "Store full client addresses instead of prefixes.")
    var storeFullClientAddress = false

    func validate() throws {
        if data != nil, legacyDataDirectory != nil {
            throw ValidationError("--data and --data-directory (its former name) exclude each other")
        }
        if databasePath != nil, resolvedPostgresURL != nil {
            throw ValidationError("--database and --postgres-url (or $WEHE_SERVER_POSTGRES_URL) exclude each other")
        }
    }

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The PostgreSQL URL from the option or the environment.
    var resolvedPostgresURL: String? {
        if let postgresURL, !postgresURL.isEmpty { return postgresURL }
        if let url = environment["WEHE_SERVER_POSTGRES_URL"], !url.isEmpty { return url }
        return nil
    }

    /// The server's data directory.
    var resolvedDataDirectory: String {
        if let dataDirectory { return dataDirectory }
        if let directory = environment["WEHE_SERVER_DATA_DIR"], !directory.isEmpty { return directory }
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return xdg + "/wehe-server" }
        return FileManager.default.homeDirectoryForCurrentUser.path + "/.local/share/wehe-server"
    }

    /// The SQLite file used when no PostgreSQL URL is given.
    var resolvedDatabasePath: String {
        databasePath ?? resolvedDataDirectory + "/results.sqlite"
    }

    /// The store configuration these options describe.
    func configuration(
        schemaMode: SQLStoreConfiguration.SchemaMode,
        readOnly: Bool = false,
        createIfMissing: Bool = true
    ) throws(WeheStoreError) -> SQLStoreConfiguration {
        let policy = try AnonymizationPolicy(
            ipv4PrefixLength: ipv4Prefix,
            ipv6PrefixLength: ipv6Prefix,
            storeFullAddress: storeFullClientAddress
        )
        let backend: SQLStoreConfiguration.Backend
        if let url = resolvedPostgresURL {
            backend = .postgres(PostgresOptions(url: url))
        } else {
            backend = .sqlite(
                SQLiteOptions(path: resolvedDatabasePath, createIfMissing: createIfMissing, readOnly: readOnly)
            )
        }
        return SQLStoreConfiguration(backend: backend, anonymization: policy, schemaMode: schemaMode)
    }
}
