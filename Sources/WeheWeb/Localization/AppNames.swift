package import WeheCore

/// Turns stored replay names (`Youtube-02202024`, `Netflix_06072024`, `port_853`) into what a person reads
/// (`YouTube`, `Netflix`, `Port 853`), using the catalog when it knows the replay.
package struct AppNames: Sendable {
    private let byPrefix: [String: String]
    /// Trace stem (normalised) → catalog test id, for a trace only one test replays.
    private let testIDs: [String: String]

    /// Creates a namer from an optional catalog.
    package init(catalog: AppCatalog?) {
        var map: [String: String] = [:]
        var tests: [String: String] = [:]
        var shared: Set<String> = []
        for entry in catalog?.entries ?? [] {
            let file = entry.originalFile
            let stem = String(file.prefix { $0 != "." })
            if tests[Self.normalize(stem)] != nil { shared.insert(Self.normalize(stem)) }
            tests[Self.normalize(stem)] = entry.id
            map[Self.normalize(stem)] = entry.name
            map[Self.normalize(Self.stripDate(stem))] = map[Self.normalize(Self.stripDate(stem))] ?? entry.name
        }
        self.byPrefix = map
        for stem in shared { tests[stem] = nil }
        self.testIDs = tests
    }

    /// The catalog id of the test that replays `replay`; `nil` when unknown or shared (the small and large port
    /// tests replay the same original trace).
    package func testID(ofReplay replay: String) -> String? { testIDs[Self.normalize(replay)] }

    /// The display name of a replay.
    package func displayName(ofReplay replay: String) -> String {
        if let name = byPrefix[Self.normalize(replay)] ?? byPrefix[Self.normalize(Self.stripDate(replay))] {
            return name
        }
        let stem = Self.stripDate(replay)
        if stem.lowercased().hasPrefix("port"), let number = stem.split(whereSeparator: { !$0.isNumber }).first {
            // Small and large port tests replay different traces (`port_853`, `port_853_large`): keep them apart.
            return "Port \(number) (" + (stem.lowercased().contains("large") ? "large" : "small") + ")"
        }
        return stem.isEmpty ? replay : stem
    }

    /// The first letter or digit of a name, upper-cased, for the app badge (`?` when there is none).
    package static func initial(of name: String) -> String {
        name.first(where: { $0.isLetter || $0.isNumber }).map { String($0).uppercased() } ?? "?"
    }

    /// A hue in [0, 360) derived from the name, so an app keeps its badge colour across pages.
    package static func hue(of name: String) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in name.utf8 {
            hash = (hash ^ UInt32(byte)) &* 16_777_619
        }
        return Int(hash % 360)
    }

    private static func stripDate(_ name: String) -> String {
        var parts = name.split(whereSeparator: { $0 == "-" || $0 == "_" }).map(String.init)
        if let last = parts.last, last.count >= 6, last.allSatisfy(\.isNumber), parts.count > 1 {
            parts.removeLast()
        }
        return parts.joined(separator: " ")
    }

    private static func normalize(_ name: String) -> String {
        name.lowercased().filter { $0.isLetter || $0.isNumber }
    }
}
