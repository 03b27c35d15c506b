#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One fuzz target: a parser (or a family of parsers) fed with one input per call. `check` runs the parser and
/// asserts the invariants that must hold whatever the bytes are; a violated invariant aborts (libFuzzer keeps the
/// input as a crash).
struct FuzzTarget: Sendable {
    /// The name `WEHE_FUZZ_TARGET` selects and the corpus folder `Fuzz/corpus/<name>` is named after.
    let name: String
    /// Checks one input.
    let check: @Sendable ([UInt8]) -> Void
}

/// Every target of the harness, in the order `scripts/fuzz.sh` runs them.
let allTargets: [FuzzTarget] = [
    FuzzTarget(name: "side-channel-framer", check: FramerTarget.check),
    FuzzTarget(name: "side-channel-messages", check: SideChannelMessagesTarget.check),
    FuzzTarget(name: "analyzer-form", check: AnalyzerFormTarget.check),
    FuzzTarget(name: "udp-loss-report", check: UDPLossReportTarget.check),
    FuzzTarget(name: "client-trace", check: ClientTraceTarget.check),
    FuzzTarget(name: "server-trace", check: ServerTraceTarget.check),
    FuzzTarget(name: "json", check: JSONTarget.check),
    FuzzTarget(name: "capture-frames", check: CaptureFramesTarget.check),
    FuzzTarget(name: "as-table", check: ASTableTarget.check),
]

/// The target named by `WEHE_FUZZ_TARGET`, chosen once; an unknown or missing name ends the process with the list.
let selectedTarget: FuzzTarget = {
    let name = getenv("WEHE_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    if let target = allTargets.first(where: { $0.name == name }) { return target }
    report("WEHE_FUZZ_TARGET must be one of: " + allTargets.map(\.name).joined(separator: ", ") + "\n")
    exit(2)
}()

/// libFuzzer's entry point. The input is copied into an array of exactly its size, so a read past its end lands in
/// the address sanitizer's red zone.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    selectedTarget.check(input)
    return 0
}
