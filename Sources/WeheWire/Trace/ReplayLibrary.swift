public import WeheCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A directory of replay traces and its catalog: the `../shared/replays` layout of the published clients (client
/// trace files next to `apps_list.json` or `app_list.json`), plus optional server traces of our own format.
public struct ReplayLibrary: Sendable {
    /// File name suffix of client traces.
    public static let clientTraceSuffix = ".pcap_client_all.json"
    /// File name suffix of our server traces.
    public static let serverTraceSuffix = ".wehe_server.json"
    /// Catalog file names, in order of preference.
    public static let catalogNames = ["apps_list.json", "app_list.json"]

    /// The directory.
    public let directory: String
    /// Directories whose tests join the directory's own: the user's recordings (`wehe record`), so that a recorded
    /// test runs beside the installed catalog without copying either. A test id the directory's catalog already has
    /// keeps the directory's entry.
    public let additionalDirectories: [String]
    /// Reader used for every file (holds the size limit).
    public var reader: ReplayFileReader

    /// Opens a directory (nothing is read until asked).
    /// - Parameters:
    ///   - directory: the replay directory.
    ///   - additionalDirectories: directories whose catalogs and traces join it (missing ones are skipped).
    ///   - reader: the reader for every file.
    public init(
        directory: String, additionalDirectories: [String] = [], reader: ReplayFileReader = ReplayFileReader()
    ) {
        self.directory = directory
        self.additionalDirectories = additionalDirectories.filter { $0 != directory && Self.isDirectory($0) }
        self.reader = reader
    }

    /// Full path of a file in the library: in the directory, else in the first additional directory holding it
    /// (a name no directory holds gets the directory's path, which errors then name).
    public func path(of file: String) -> String {
        let own = Self.join(directory, file)
        if additionalDirectories.isEmpty || access(own, F_OK) == 0 { return own }
        for other in additionalDirectories where access(Self.join(other, file), F_OK) == 0 {
            return Self.join(other, file)
        }
        return own
    }

    static func join(_ directory: String, _ file: String) -> String {
        directory.hasSuffix("/") ? directory + file : directory + "/" + file
    }

    /// The catalog file present in the directory, if any.
    public func catalogFileName() -> String? {
        Self.catalogNames.first { access(Self.join(directory, $0), F_OK) == 0 }
    }

    /// Loads the catalog: the directory's, followed by the entries of the additional directories' catalogs whose
    /// ids it does not have.
    /// - Throws: `WeheWireError` naming the file; `.unreadable` when no directory has a catalog.
    public func catalog() throws(WeheWireError) -> AppCatalog {
        var merged: AppCatalog?
        if let name = catalogFileName() {
            merged = try Self.catalog(at: Self.join(directory, name), reader: reader)
        }
        for other in additionalDirectories {
            guard let name = Self.catalogNames.first(where: { access(Self.join(other, $0), F_OK) == 0 }) else {
                continue
            }
            let extra = try Self.catalog(at: Self.join(other, name), reader: reader)
            guard var catalog = merged else {
                merged = extra
                continue
            }
            let known = Set(catalog.entries.map { $0.id.lowercased() })
            catalog.entries += extra.entries.filter { !known.contains($0.id.lowercased()) }
            merged = catalog
        }
        guard let merged else {
            throw WeheWireError(
                .unreadable,
                "no catalog (\(Self.catalogNames.joined(separator: " or "))) in this directory",
                file: directory
            )
        }
        return merged
    }

    /// Loads a catalog file.
    public static func catalog(at path: String, reader: ReplayFileReader = ReplayFileReader()) throws(WeheWireError)
        -> AppCatalog
    {
        let bytes = try reader.read(path)
        do {
            return try CatalogDecoder().decode(bytes)
        } catch {
            throw error.inFile(path)
        }
    }

    /// Loads a client trace by file name.
    public func trace(file: String) throws(WeheWireError) -> ReplayTrace {
        try Self.trace(at: path(of: file), reader: reader)
    }

    /// Loads a client trace file.
    public static func trace(at path: String, reader: ReplayFileReader = ReplayFileReader()) throws(WeheWireError)
        -> ReplayTrace
    {
        let bytes = try reader.read(path)
        do {
            return try ClientTraceDecoder().decode(bytes)
        } catch {
            throw error.inFile(path)
        }
    }

    /// Loads the server side for a client trace: our server trace file when one exists beside it
    /// (`<stem>.wehe_server.json`), otherwise derived from the client trace.
    public func serverTrace(for clientFile: String, client: ReplayTrace) throws(WeheWireError) -> ServerTrace {
        let stem =
            clientFile.hasSuffix(Self.clientTraceSuffix)
            ? String(clientFile.dropLast(Self.clientTraceSuffix.count)) : clientFile
        let serverPath = path(of: stem + Self.serverTraceSuffix)
        guard access(serverPath, F_OK) == 0 else { return ServerTrace(derivingFrom: client) }
        let bytes = try reader.read(serverPath)
        do {
            return try ServerTraceCodec().decode(bytes)
        } catch {
            throw error.inFile(serverPath)
        }
    }

    /// File names of every client trace in the directory and the additional ones, sorted.
    public func clientTraceFiles() throws(WeheWireError) -> [String] {
        var names = Set(try Self.listDirectory(directory).filter { $0.hasSuffix(Self.clientTraceSuffix) })
        for other in additionalDirectories {
            names.formUnion(((try? Self.listDirectory(other)) ?? []).filter { $0.hasSuffix(Self.clientTraceSuffix) })
        }
        return names.sorted()
    }

    /// Lists a directory's entries.
    static func listDirectory(_ directory: String) throws(WeheWireError) -> [String] {
        guard let handle = opendir(directory) else {
            throw WeheWireError(
                .unreadable, "cannot list directory: \(ReplayFileReader.describeErrno(errno))", file: directory)
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Whether `path` is a directory.
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}
