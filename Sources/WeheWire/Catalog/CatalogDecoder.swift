public import WeheCore

/// Reads app catalogs in both published formats into one `AppCatalog` (protocol.md section 1.4):
/// `apps_list.json` (Java/Android: `apps` with `image`, `datafile`, `randomdatafile`, `category`, plus
/// `port443small` / `port443large`) and `app_list.json` (iOS/WeHeY: `apps` with `icon`, `replayFile`,
/// `randomReplayFile` without `.json`, `portTest`, `largeTest`, `appType`).
public struct CatalogDecoder: Sendable {
    /// Creates a decoder.
    public init() {}

    /// Decodes a catalog, detecting the format from its keys.
    /// - Throws: `WeheWireError` naming the app index and field.
    public func decode(_ bytes: [UInt8]) throws(WeheWireError) -> AppCatalog {
        let root = try JSONValue.parse(bytes)
        guard case .object = root else {
            throw WeheWireError(.unexpectedStructure, "the catalog must be a JSON object with an 'apps' array")
        }
        guard case .array(let apps)? = root["apps"] else {
            throw WeheWireError(.unexpectedStructure, "the catalog has no 'apps' array", field: "apps")
        }
        let isIOS = apps.contains { $0["replayFile"] != nil }
        var entries: [CatalogEntry] = []
        for (index, app) in apps.enumerated() {
            guard case .object = app else {
                throw WeheWireError(.unexpectedStructure, "an app must be an object", entry: index)
            }
            entries.append(isIOS ? try iosEntry(app, index: index) : try javaEntry(app, index: index))
        }
        var seen: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            if let first = seen[entry.id] {
                throw WeheWireError(
                    .invalidValue,
                    "test id '\(entry.id)' is used by apps \(first) and \(index)",
                    entry: index,
                    field: "image"
                )
            }
            seen[entry.id] = index
        }
        if isIOS {
            return AppCatalog(
                entries: entries,
                port443Small: "port_443.pcap_client_all.json",
                port443Large: "port_443_large.pcap_client_all.json"
            )
        }
        return AppCatalog(
            entries: entries,
            port443Small: try optionalString(root, "port443small", index: nil),
            port443Large: try optionalString(root, "port443large", index: nil)
        )
    }

    private func javaEntry(_ app: JSONValue, index: Int) throws(WeheWireError) -> CatalogEntry {
        let name = try requiredString(app, "name", index: index)
        let image = try requiredString(app, "image", index: index)
        let categoryText = try requiredString(app, "category", index: index)
        let category = AppCategory(rawValue: categoryText.uppercased()) ?? .other
        let isPort = category == .smallPort || category == .largePort
        let id = isPort ? image + (category == .largePort ? "l" : "s") : image
        let control = try optionalString(app, "randomdatafile", index: index)
        if !isPort, control == nil {
            throw WeheWireError(
                .unexpectedStructure, "app test has no 'randomdatafile'", entry: index, field: "randomdatafile")
        }
        let sizeMB = try optionalNumber(app, "size", index: index)
        let originalFile = try requiredString(app, "datafile", index: index)
        var entry = CatalogEntry(
            id: id,
            // A port test is named with its size: the small and the large one share the catalog's name.
            name: isPort
                ? CatalogEntry.portTestName(
                    catalogName: name, port: Self.portNumber(inReplayFile: originalFile),
                    large: category == .largePort, sizeMB: sizeMB)
                : name,
            image: image,
            category: category,
            durationSeconds: try requiredNumber(app, "time", index: index),
            sizeMB: sizeMB,
            originalFile: originalFile,
            controlFile: control,
            frenchOnly: try flag(app, "frenchOnly", index: index),
            englishOnly: try flag(app, "englishOnly", index: index)
        )
        entry.recorded = try flag(app, "recorded", index: index)
        return entry
    }

    private func iosEntry(_ app: JSONValue, index: Int) throws(WeheWireError) -> CatalogEntry {
        let name = try requiredString(app, "name", index: index)
        let icon = try optionalString(app, "icon", index: index) ?? name.lowercased()
        let replayFile = try requiredString(app, "replayFile", index: index)
        let isPort = try flag(app, "portTest", index: index)
        let isLarge = try flag(app, "largeTest", index: index)
        let appType = try optionalString(app, "appType", index: index)?.lowercased() ?? ""
        let category: AppCategory =
            if isPort { isLarge ? .largePort : .smallPort } else {
                switch appType {
                case "video": .video
                case "music": .music
                case "conferencing", "videocall", "call": .conferencing
                default: .other
                }
            }
        let image = isPort ? "port" + Self.portNumber(inReplayFile: replayFile) : icon
        let id = isPort ? image + (isLarge ? "l" : "s") : image
        let control = try optionalString(app, "randomReplayFile", index: index)
        if !isPort, control == nil {
            throw WeheWireError(
                .unexpectedStructure, "app test has no 'randomReplayFile'", entry: index, field: "randomReplayFile")
        }
        let sizeMB = try optionalNumber(app, "size", index: index)
        return CatalogEntry(
            id: id,
            // A port test is named with its size: the small and the large one share the catalog's name.
            name: isPort
                ? CatalogEntry.portTestName(
                    catalogName: name, port: Self.portNumber(inReplayFile: replayFile), large: isLarge, sizeMB: sizeMB)
                : name,
            image: image,
            category: category,
            durationSeconds: try requiredNumber(app, "time", index: index),
            sizeMB: sizeMB,
            originalFile: Self.withJSONExtension(replayFile),
            controlFile: isPort ? nil : control.map(Self.withJSONExtension),
            frenchOnly: try flag(app, "frenchOnly", index: index),
            englishOnly: try flag(app, "englishOnly", index: index),
            hidden: try flag(app, "hidden", index: index)
        )
    }

    /// `port_8081.pcap_client_all` → `8081`; `port_853_large` → `853`.
    static func portNumber(inReplayFile file: String) -> String {
        let stem = file.split(separator: ".").first.map(String.init) ?? file
        let parts = stem.split(separator: "_")
        return parts.first { !$0.isEmpty && $0.allSatisfy(\.isNumber) }.map(String.init) ?? stem
    }

    static func withJSONExtension(_ name: String) -> String {
        name.hasSuffix(".json") ? name : name + ".json"
    }

    private func requiredString(_ app: JSONValue, _ key: String, index: Int) throws(WeheWireError) -> String {
        guard let value = try optionalString(app, key, index: index) else {
            throw WeheWireError(.unexpectedStructure, "required key '\(key)' is missing", entry: index, field: key)
        }
        guard !value.isEmpty else {
            throw WeheWireError(.invalidValue, "'\(key)' is empty", entry: index, field: key)
        }
        return value
    }

    private func optionalString(_ object: JSONValue, _ key: String, index: Int?) throws(WeheWireError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case let other?:
            throw WeheWireError(
                .invalidValue, "'\(key)' must be a string, found \(other.typeName)", entry: index, field: key)
        }
    }

    private func requiredNumber(_ app: JSONValue, _ key: String, index: Int) throws(WeheWireError) -> Double {
        guard let value = try optionalNumber(app, key, index: index) else {
            throw WeheWireError(.unexpectedStructure, "required key '\(key)' is missing", entry: index, field: key)
        }
        guard value.isFinite, value > 0 else {
            throw WeheWireError(
                .invalidValue, "'\(key)' must be a positive number, found \(value)", entry: index, field: key)
        }
        return value
    }

    /// Numbers may be JSON numbers or numeric strings (the iOS catalog writes `size` as a string).
    private func optionalNumber(_ app: JSONValue, _ key: String, index: Int) throws(WeheWireError) -> Double? {
        switch app[key] {
        case nil, .null?: return nil
        case .number(let value, _)?: return value
        case .string(let text)?:
            let trimmed = text.filter { !$0.isWhitespace && $0 != "M" && $0 != "B" }
            guard let value = Double(trimmed) else {
                throw WeheWireError(
                    .invalidValue, "'\(key)' is not a number: '\(text.prefix(20))'", entry: index, field: key)
            }
            return value
        case let other?:
            throw WeheWireError(
                .invalidValue, "'\(key)' must be a number, found \(other.typeName)", entry: index, field: key)
        }
    }

    private func flag(_ app: JSONValue, _ key: String, index: Int) throws(WeheWireError) -> Bool {
        switch app[key] {
        case nil, .null?: return false
        case .bool(let value)?: return value
        case let other?:
            throw WeheWireError(
                .invalidValue, "'\(key)' must be true or false, found \(other.typeName)", entry: index, field: key)
        }
    }
}
