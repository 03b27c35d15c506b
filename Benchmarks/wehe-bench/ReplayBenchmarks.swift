import WeheCore
import WeheWire

/// Times loading and validating a whole replay directory and its largest trace.
func runReplayBenchmarks(directory: String) {
    let library = ReplayLibrary(directory: directory)
    guard let files = try? library.clientTraceFiles(), !files.isEmpty else {
        print("no traces in \(directory)")
        return
    }
    var totalBytes = 0
    var largest = (file: "", size: 0)
    for file in files {
        let size = (try? library.reader.read(library.path(of: file)).count) ?? 0
        totalBytes += size
        if size > largest.size { largest = (file, size) }
    }
    var packets = 0
    let whole = measure(repetitions: 10) {
        let report = ReplayValidator().validate(path: directory)
        packets = report.validTraces
    }
    var largestPackets = 0
    let single = measure(repetitions: 20) {
        if let trace = try? library.trace(file: largest.file) {
            largestPackets = trace.packets.count
            _ = trace.problems()
        }
    }
    let control = ControlTraceGenerator()
    let generate = measure(repetitions: 20) {
        if let trace = try? library.trace(file: largest.file) { _ = control.control(of: trace) }
    }
    print("replay directory: \(directory)")
    print("  files: \(files.count) traces, \(fixed(Double(totalBytes) / 1_048_576, 2)) MiB")
    print(
        "  load + validate whole directory (catalog, every trace, control checks): median \(fixed(whole.median * 1000, 1)) ms, min \(fixed(whole.min * 1000, 1)) ms (\(packets) valid traces)"
    )
    print(
        "  largest trace \(largest.file) (\(fixed(Double(largest.size) / 1_048_576, 2)) MiB, \(largestPackets) packets): load + validate median \(fixed(single.median * 1000, 2)) ms"
    )
    print("  largest trace load + control generation: median \(fixed(generate.median * 1000, 2)) ms")
    print(
        "  throughput: \(fixed(Double(totalBytes) / whole.median / 1_048_576, 1)) MiB/s; peak RSS \(fixed(peakResidentMiB(), 1)) MiB"
    )
}
