import Foundation

/// Foundation APIs that have crashed this package's test process on Linux, and what to use instead. One crash ends
/// every suite of the process at once, so the check keeps them out of the sources and the tests.
enum RuntimeHazards {
    /// A forbidden use: the text that marks it, and the replacement to name.
    struct Hazard {
        let marker: String
        let instead: String
    }

    static let hazards = [
        // A libdispatch read source whose teardown races the descriptor's close: SIGSEGV in
        // `_dispatch_event_loop_drain`.
        Hazard(marker: "readabilityHandler", instead: "WeheTestKit.PipeCollector (blocking reads on a thread)"),
        // libcurl's sockets in libdispatch sources: the same crash family.
        Hazard(marker: "URLSession", instead: "WeheTestKit.LoopbackHTTP (SwiftNIO)"),
        // `Process.run()` reads past glibc's directory buffer while closing descriptors: SIGSEGV in `memcpy`.
        Hazard(marker: "= Process()", instead: "WeheTestKit.TestProcess (posix_spawn)"),
    ]

    /// One forbidden use found.
    struct Finding: Hashable, CustomStringConvertible {
        let file: String
        let line: Int
        let marker: String
        let instead: String
        var description: String { "\(file):\(line): \(marker); use \(instead)" }
    }

    /// The forbidden uses in one file's text, comment lines left out (the replacements' comments name what they
    /// replace).
    static func findings(in text: String, file: String) -> [Finding] {
        var found: [Finding] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("//") { continue }
            let code = line.components(separatedBy: "//").first ?? line
            for hazard in hazards where code.contains(hazard.marker) {
                found.append(Finding(file: file, line: index + 1, marker: hazard.marker, instead: hazard.instead))
            }
        }
        return found
    }

    /// The forbidden uses in every Swift file under `Sources/` and `Tests/` of the package, but for this check's
    /// own folder (its examples name every marker).
    static func findings(packageRoot: String) throws -> [Finding] {
        var found: [Finding] = []
        for folder in ["Sources", "Tests"] {
            let root = packageRoot + "/" + folder
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            while let relative = walker.nextObject() as? String {
                guard relative.hasSuffix(".swift"), !(folder + "/" + relative).hasPrefix("Tests/ArchitectureTests/")
                else { continue }
                let text = try String(contentsOfFile: root + "/" + relative, encoding: .utf8)
                found += findings(in: text, file: folder + "/" + relative)
            }
        }
        return found
    }
}
