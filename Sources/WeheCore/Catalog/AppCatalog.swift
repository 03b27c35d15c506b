/// The list of tests a client offers: app replays and port tests (protocol.md section 1.4).
///
/// Both published formats load into this one model: `apps_list.json` (Java command-line client and Android) and
/// `app_list.json` (iOS and WeHeY).
public struct AppCatalog: Sendable, Hashable {
    /// Every entry in catalog order.
    public var entries: [CatalogEntry]
    /// Control trace file of small port tests (`port_443.pcap_client_all.json`).
    public var port443Small: String?
    /// Control trace file of large port tests (`port_443_large.pcap_client_all.json`).
    public var port443Large: String?

    /// Creates a catalog.
    public init(entries: [CatalogEntry], port443Small: String?, port443Large: String?) {
        self.entries = entries
        self.port443Small = port443Small
        self.port443Large = port443Large
    }

    /// Finds an entry by its test id (`youtube`, `port853s`, `port853l`), case-insensitively; also accepts the
    /// display name or the replay name of the original trace.
    public func entry(named query: String) -> CatalogEntry? {
        let key = query.lowercased()
        return entries.first { $0.id.lowercased() == key }
            ?? entries.first { $0.name.lowercased() == key }
            ?? entries.first { $0.originalFile.lowercased().hasPrefix(key + "_") }
            ?? entries.first { $0.image.lowercased() == key && !$0.isPortTest }
    }

    /// The control trace file of an entry: its own control for apps, the port-443 file of its size for port tests.
    public func controlFile(for entry: CatalogEntry) -> String? {
        if let control = entry.controlFile { return control }
        guard entry.isPortTest else { return nil }
        return entry.isLargePortTest ? port443Large : port443Small
    }
}

/// One test in the catalog.
public struct CatalogEntry: Sendable, Hashable, Codable {
    /// The id used to select the test: the image name for apps (`youtube`, `max`, `x`), `port<N>s` / `port<N>l`
    /// for small and large port tests, as the command-line client's `-n` option expects.
    public var id: String
    /// Display name (`YouTube`, `Port 853 (small)` …).
    public var name: String
    /// The image / icon name from the catalog.
    public var image: String
    /// Category.
    public var category: AppCategory
    /// Nominal duration of **one** replay, seconds (used for the sampling interval).
    public var durationSeconds: Double
    /// Approximate data volume in MB, when the catalog gives it.
    public var sizeMB: Double?
    /// File name of the original trace (`Youtube_02202024.pcap_client_all.json`).
    public var originalFile: String
    /// File name of the control trace; `nil` for port tests, whose control is the port-443 trace.
    public var controlFile: String?
    /// Only offered to French-speaking users.
    public var frenchOnly: Bool
    /// Only offered to English-speaking users.
    public var englishOnly: Bool
    /// Hidden in the app list (iOS catalogs).
    public var hidden: Bool
    /// Made by the user with `wehe record` (`"recorded": true` in `apps_list.json`), not by the Wehe team: lists
    /// show such tests apart, and a server may not have their traces.
    public var recorded: Bool = false

    /// Creates an entry.
    public init(
        id: String,
        name: String,
        image: String,
        category: AppCategory,
        durationSeconds: Double,
        sizeMB: Double?,
        originalFile: String,
        controlFile: String?,
        frenchOnly: Bool = false,
        englishOnly: Bool = false,
        hidden: Bool = false
    ) {
        self.id = id
        self.name = name
        self.image = image
        self.category = category
        self.durationSeconds = durationSeconds
        self.sizeMB = sizeMB
        self.originalFile = originalFile
        self.controlFile = controlFile
        self.frenchOnly = frenchOnly
        self.englishOnly = englishOnly
        self.hidden = hidden
    }

    /// Whether this is a port test.
    public var isPortTest: Bool { category == .smallPort || category == .largePort }
    /// Whether this is a large port test.
    public var isLargePortTest: Bool { category == .largePort }

    /// The name people read for a port test, which the catalogs name by port and service only (the small and the
    /// large test of a port are both "80 HTTP"): "Port 80 (HTTP), small (10 MB)", "Port 80 (HTTP), large (50 MB)".
    /// - Parameters:
    ///   - catalogName: the catalog's name ("80 HTTP", "465 SMTPS"); its words other than the port are the service.
    ///   - port: the port number.
    ///   - large: whether it is the large test.
    ///   - sizeMB: the catalog's size of the test's trace, if given.
    public static func portTestName(catalogName: String, port: String, large: Bool, sizeMB: Double?) -> String {
        let service = catalogName.split(whereSeparator: { $0 == " " || $0 == "(" || $0 == ")" || $0 == "-" })
            .filter { $0 != Substring(port) && $0.lowercased() != "port" }.joined(separator: " ")
        var name = "Port \(port)" + (service.isEmpty ? "" : " (\(service))") + ", " + (large ? "large" : "small")
        if let sizeMB, sizeMB.isFinite, sizeMB > 0 {
            // A whole size is printed without ".0"; `Int(exactly:)` also keeps a size beyond Int's range (a
            // catalog is input: "1e300 MB" must not trap) printed as the Double it is.
            let whole = sizeMB.rounded() == sizeMB ? Int(exactly: sizeMB) : nil
            name += " (" + (whole.map(String.init) ?? String(sizeMB)) + " MB)"
        }
        return name
    }
}

/// Catalog categories.
public enum AppCategory: String, Sendable, Hashable, Codable, CaseIterable {
    /// Video streaming.
    case video = "VIDEO"
    /// Music streaming.
    case music = "MUSIC"
    /// Video/voice calls.
    case conferencing = "CONFERENCING"
    /// Small port test (~10 MB).
    case smallPort = "SMALL_PORT"
    /// Large port test (~45 MB).
    case largePort = "LARGE_PORT"
    /// Anything else the catalog names.
    case other = "OTHER"
}
