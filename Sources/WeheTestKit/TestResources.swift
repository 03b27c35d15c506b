#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Locations of test data: the published traces in `../shared/replays` (read at run time, never copied into the
/// repository) and the project's own synthetic fixtures in `Fixtures/`.
public enum TestResources {
    /// The package root, derived from this source file's location.
    public static let packageRoot: String = {
        var path = #filePath
        for _ in 0..<3 {  // …/Sources/WeheTestKit/TestResources.swift → package root
            if let slash = path.lastIndex(of: "/") { path = String(path[..<slash]) }
        }
        return path
    }()

    /// `../shared/replays` relative to the package root, or `$WEHE_SHARED_REPLAYS` when set.
    public static var sharedReplays: String {
        if let override = getenv("WEHE_SHARED_REPLAYS").map({ String(cString: $0) }), !override.isEmpty {
            return override
        }
        return packageRoot + "/../shared/replays"
    }

    /// Whether the shared replays are present.
    public static var hasSharedReplays: Bool { access(sharedReplays + "/apps_list.json", R_OK) == 0 }

    /// What the reference server (wehe-py3) wrote for a TCP test, a UDP test and a localization:
    /// `../shared/reference/wehe-py3-archive` (its README describes the layout).
    public static var referenceArchive: String { packageRoot + "/../shared/reference/wehe-py3-archive" }

    /// Whether the reference archive is present.
    public static var hasReferenceArchive: Bool { access(referenceArchive + "/datatypes/replayInfo1.json", R_OK) == 0 }

    /// The synthetic replay fixtures (Java/Android catalog format).
    public static var fixtureReplays: String { packageRoot + "/Fixtures/replays" }

    /// The synthetic iOS-format catalog.
    public static var fixtureIOSCatalog: String { packageRoot + "/Fixtures/ios/app_list.json" }

    /// A fresh temporary directory for one test.
    public static func temporaryDirectory(_ label: String = "wehe-test") -> String {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return mkdtemp(base) != nil
        }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if created { return path }
        let fallback = "/tmp/\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(fallback, 0o700)
        return fallback
    }

    /// Writes bytes to a file (tests only).
    @discardableResult
    public static func write(_ bytes: [UInt8], to path: String) -> Bool {
        guard let file = fopen(path, "wb") else { return false }
        defer { fclose(file) }
        return bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) } == bytes.count
    }

    /// Writes text to a file (tests only).
    @discardableResult
    public static func write(_ text: String, to path: String) -> Bool {
        write(Array(text.utf8), to: path)
    }
}

extension TestResources {
    /// Creates a sparse file of `size` bytes (no disk space used), for size-limit tests.
    public static func makeSparseFile(_ path: String, size: Int) -> Bool {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return ftruncate(descriptor, off_t(size)) == 0
    }
}

extension TestResources {
    /// Path of a product built next to the running test binary (`swift build --build-tests` builds both into the
    /// same directory), e.g. `builtProduct("wehe")`.
    public static func builtProduct(_ name: String) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        var directory = packageRoot + "/.build/debug"
        if count > 0 {
            let exe = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = exe.lastIndex(of: "/") { directory = String(exe[..<slash]) }
            // The test binary may sit inside an .xctest bundle directory.
            if directory.hasSuffix(".xctest"), let slash = directory.lastIndex(of: "/") {
                directory = String(directory[..<slash])
            }
        }
        return directory + "/" + name
    }
}
