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
    /// Reader used for every file (holds the size limit).
    public var reader: ReplayFileReader

    /// Opens a directory (nothing is read until asked).
    public init(directory: String, reader: ReplayFileReader = ReplayFileReader()) {
        self.directory = directory
        self.reader = reader
    }

    /// Full path of a file in the library.
    public func path(of file: String) -> String {
        directory.hasSuffix("/") ? directory + file : directory + "/" + file
    }

    /// The catalog file present in the directory, if any.
    public func catalogFileName() -> String? {
        Self.catalogNames.first { access(path(of: $0), F_OK) == 0 }
    }

    /// Loads the catalog.
    /// - Throws: `WeheWireError` naming the file; `.unreadable` when there is none.
    public func catalog() throws(WeheWireError) -> AppCatalog {
        guard let name = catalogFileName() else {
            throw WeheWireError(
                .unreadable,
                "no catalog (\(Self.catalogNames.joined(separator: " or "))) in this directory",
                file: directory
            )
        }
        return try Self.catalog(at: path(of: name), reader: reader)
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

    /// File names of every client trace in the directory, sorted.
    public func clientTraceFiles() throws(WeheWireError) -> [String] {
        try Self.listDirectory(directory).filter { $0.hasSuffix(Self.clientTraceSuffix) }.sorted()
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
