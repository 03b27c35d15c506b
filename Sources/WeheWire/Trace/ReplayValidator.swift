public import WeheCore

/// Checks a replay directory or a single file and reports every problem with its file, entry and field.
///
/// Errors make a file invalid (it cannot be replayed). Warnings do not: a catalog entry whose trace file is absent,
/// or a control trace whose structure differs from its original.
public struct ReplayValidator: Sendable {
    /// One finding.
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        /// How serious.
        public enum Severity: String, Sendable, Hashable { case error, warning }
        /// Error or warning.
        public var severity: Severity
        /// The file the finding is about.
        public var file: String
        /// What, where (entry and field when known).
        public var message: String

        /// `error: file: message`.
        public var description: String { "\(severity.rawValue): \(file): \(message)" }
    }

    /// The result of a validation.
    public struct Report: Sendable, Hashable {
        /// Every finding, errors and warnings, in file order.
        public var findings: [Finding] = []
        /// Number of files checked.
        public var filesChecked = 0
        /// Number of traces that loaded and validated.
        public var validTraces = 0
        /// Whether any file is invalid.
        public var hasErrors: Bool { findings.contains { $0.severity == .error } }
        /// Error findings only.
        public var errors: [Finding] { findings.filter { $0.severity == .error } }
        /// Warning findings only.
        public var warnings: [Finding] { findings.filter { $0.severity == .warning } }
    }

    /// Reader for every file.
    public var reader: ReplayFileReader

    /// Creates a validator.
    public init(reader: ReplayFileReader = ReplayFileReader()) {
        self.reader = reader
    }

    /// Validates a directory (every trace and catalog in it) or one file.
    public func validate(path: String) -> Report {
        var report = Report()
        if ReplayLibrary.isDirectory(path) {
            validateDirectory(path, into: &report)
        } else {
            validateFile(path, into: &report)
        }
        return report
    }

    private func validateDirectory(_ directory: String, into report: inout Report) {
        let library = ReplayLibrary(directory: directory, reader: reader)
        let names: [String]
        do {
            names = try ReplayLibrary.listDirectory(directory).sorted()
        } catch {
            report.findings.append(Finding(severity: .error, file: directory, message: error.message))
            return
        }
        var traces: [String: ReplayTrace] = [:]
        for name in names where name.hasSuffix(ReplayLibrary.clientTraceSuffix) {
            if let trace = validateTrace(library.path(of: name), into: &report) { traces[name] = trace }
        }
        for name in names where name.hasSuffix(ReplayLibrary.serverTraceSuffix) {
            validateServerTrace(library.path(of: name), into: &report)
        }
        var foundCatalog = false
        for name in names where ReplayLibrary.catalogNames.contains(name) {
            foundCatalog = true
            let path = library.path(of: name)
            report.filesChecked += 1
            do {
                let catalog = try ReplayLibrary.catalog(at: path, reader: reader)
                checkCatalog(catalog, catalogPath: path, present: Set(names), traces: traces, into: &report)
            } catch {
                report.findings.append(Finding(severity: .error, file: path, message: Self.locationMessage(error)))
            }
        }
        if !foundCatalog {
            report.findings.append(
                Finding(severity: .warning, file: directory, message: "no catalog (apps_list.json or app_list.json)")
            )
        }
    }

    private func validateFile(_ path: String, into report: inout Report) {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        if name.hasSuffix(ReplayLibrary.serverTraceSuffix) {
            validateServerTrace(path, into: &report)
        } else if ReplayLibrary.catalogNames.contains(name) {
            report.filesChecked += 1
            do {
                _ = try ReplayLibrary.catalog(at: path, reader: reader)
            } catch {
                report.findings.append(Finding(severity: .error, file: path, message: Self.locationMessage(error)))
            }
        } else {
            _ = validateTrace(path, into: &report)
        }
    }

    private func validateTrace(_ path: String, into report: inout Report) -> ReplayTrace? {
        report.filesChecked += 1
        let trace: ReplayTrace
        do {
            trace = try ReplayLibrary.trace(at: path, reader: reader)
        } catch {
            report.findings.append(Finding(severity: .error, file: path, message: Self.locationMessage(error)))
            return nil
        }
        let problems = trace.problems()
        for problem in problems {
            report.findings.append(Finding(severity: .error, file: path, message: problem.description))
        }
        if problems.isEmpty { report.validTraces += 1 }
        return problems.isEmpty ? trace : nil
    }

    private func validateServerTrace(_ path: String, into report: inout Report) {
        report.filesChecked += 1
        do {
            let bytes = try reader.read(path)
            _ = try ServerTraceCodec().decode(bytes)
        } catch {
            report.findings.append(Finding(severity: .error, file: path, message: Self.locationMessage(error)))
        }
    }

    private func checkCatalog(
        _ catalog: AppCatalog,
        catalogPath: String,
        present: Set<String>,
        traces: [String: ReplayTrace],
        into report: inout Report
    ) {
        for (index, entry) in catalog.entries.enumerated() {
            var files = [("datafile", entry.originalFile)]
            if let control = catalog.controlFile(for: entry) { files.append(("randomdatafile", control)) }
            for (field, file) in files where !present.contains(file) {
                report.findings.append(
                    Finding(
                        severity: .warning,
                        file: catalogPath,
                        message: "entry \(index) (\(entry.id)), field \(field): trace file \(file) is absent"
                    )
                )
            }
            if let original = traces[entry.originalFile], let controlFile = entry.controlFile,
                let control = traces[controlFile]
            {
                for difference in Self.structuralDifferences(original: original, control: control) {
                    report.findings.append(
                        Finding(
                            severity: .warning, file: catalogPath,
                            message: "entry \(index) (\(entry.id)): \(difference)")
                    )
                }
            }
        }
    }

    /// Differences between an original and its control that break the comparison: flows, packet count, timing.
    public static func structuralDifferences(original: ReplayTrace, control: ReplayTrace) -> [String] {
        var differences: [String] = []
        if original.packets.count != control.packets.count {
            differences.append("control has \(control.packets.count) packets, original \(original.packets.count)")
            return differences
        }
        if original.transport != control.transport {
            differences.append("control and original use different transports")
        }
        if let index = original.packets.indices.first(where: {
            original.packets[$0].csPair != control.packets[$0].csPair
        }) {
            differences.append("entry \(index): control flow differs from the original's")
        }
        if let index = original.packets.indices.first(where: {
            original.packets[$0].timestamp != control.packets[$0].timestamp
        }) {
            differences.append("entry \(index): control timestamp differs from the original's")
        }
        return differences
    }

    static func locationMessage(_ error: WeheWireError) -> String {
        var copy = error
        copy.file = nil
        return copy.description
    }
}
