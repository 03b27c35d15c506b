public import WeheStatistics

extension CrowdAnalyzer {
    /// Processes `records` in order, with exactly the results of calling `add(_:)` on each of them (same reports,
    /// same use of the generator), spreading the per-test work over up to `parallelism` child tasks.
    ///
    /// Three phases per call, each merged in record order so that nothing depends on scheduling:
    /// 1. in parallel, means, differences and the KS tests that can matter (`CrowdTestEvaluation.measure`);
    /// 2. sequentially, in record order, the jackknife subset draws of the tests that need one: the only use of
    ///    the generator, which therefore advances exactly as with `add(_:)`;
    /// 3. in parallel, the subset KS tests of those draws. Draws are made and evaluated in slices of at most
    ///    `drawBudget` stored positions to bound memory.
    ///
    /// Only the per-test scalars are kept afterwards; pass a large stream in batches of a few thousand records.
    /// - Returns: the number of records accepted.
    @discardableResult
    public mutating func add(contentsOf records: [CrowdTestRecord], parallelism: Int) async -> Int {
        let workers = max(1, parallelism)
        let configuration = configuration
        let measurements = await Self.parallelMap(count: records.count, workers: workers) { range in
            records[range].map { CrowdTestEvaluation.measure($0, configuration: configuration) }
        }
        var eligible = measurements.map { $0.map { $0.candidatePValue != nil && !$0.needsJackknife } ?? false }
        let pending = measurements.indices.filter { measurements[$0]?.needsJackknife == true }
        var next = 0
        while next < pending.count {
            var slice: [(index: Int, draws: CrowdTestEvaluation.JackknifeDraws?)] = []
            var stored = 0
            while next < pending.count, slice.isEmpty || stored < Self.drawBudget {
                let index = pending[next]
                next += 1
                guard case .samples(let original, let control) = records[index].measurement else { continue }
                let draws = drawJackknife(original: original, control: control)
                stored += draws?.positions.count ?? 0
                slice.append((index, draws))
            }
            let drawn = slice
            let decisions = await Self.parallelMap(count: drawn.count, workers: workers) { range in
                var workspace = CrowdTestEvaluation.Workspace()
                return drawn[range].map { item in
                    guard let draws = item.draws, let pValue = measurements[item.index]?.candidatePValue,
                        case .samples(let original, let control) = records[item.index].measurement
                    else { return false }
                    return CrowdTestEvaluation.jackknifeAgrees(
                        original: original, control: control, draws: draws, fullPValue: pValue,
                        configuration: configuration, workspace: &workspace)
                }
            }
            for (item, decision) in zip(drawn, decisions) { eligible[item.index] = decision }
        }
        var accepted = 0
        for (index, record) in records.enumerated() {
            if let measurement = measurements[index] {
                store(accepted: record, measurement, eligible: eligible[index])
                accepted += 1
            } else {
                store(rejected: record)
            }
        }
        return accepted
    }

    /// Most subset positions drawn ahead of their evaluation (8 MiB of `Int`s).
    static var drawBudget: Int { 1 << 20 }

    /// `transform` over consecutive ranges covering 0..<count, at most `workers` at a time, results concatenated in
    /// range order.
    static func parallelMap<T: Sendable>(
        count: Int, workers: Int, _ transform: @escaping @Sendable (Range<Int>) -> [T]
    ) async -> [T] {
        let chunkCount = min(count, workers * 4)
        guard workers > 1, chunkCount > 1 else { return transform(0..<count) }
        let chunkSize = (count + chunkCount - 1) / chunkCount
        let chunks = (count + chunkSize - 1) / chunkSize
        func range(_ chunk: Int) -> Range<Int> { (chunk * chunkSize)..<min(count, (chunk + 1) * chunkSize) }
        return await withTaskGroup(of: (Int, [T]).self) { group in
            var results = [[T]](repeating: [], count: chunks)
            var started = 0
            while started < min(workers, chunks) {
                let chunk = started
                let bounds = range(chunk)
                group.addTask { (chunk, transform(bounds)) }
                started += 1
            }
            while let (chunk, result) = await group.next() {
                results[chunk] = result
                if started < chunks {
                    let nextChunk = started
                    let bounds = range(nextChunk)
                    group.addTask { (nextChunk, transform(bounds)) }
                    started += 1
                }
            }
            return results.flatMap { $0 }
        }
    }
}

extension CrowdAnalyzer where Generator == SeededGenerator {
    /// Analyses a sequence of records with the per-test work spread over up to `parallelism` child tasks, reading
    /// it in batches of `batchSize` records. Same reports as `analyze(_:configuration:seed:)`.
    /// - Throws: `WeheAnalysisError` for an invalid configuration or a failing statistics routine.
    public static func analyze<Records: Sequence<CrowdTestRecord>>(
        _ records: Records,
        configuration: CrowdConfiguration = CrowdConfiguration(),
        seed: UInt64,
        parallelism: Int,
        batchSize: Int = 8192
    ) async throws(WeheAnalysisError) -> [CrowdGroupReport] {
        var analyzer = try CrowdAnalyzer(configuration: configuration, seed: seed)
        var batch: [CrowdTestRecord] = []
        let size = max(1, batchSize)
        batch.reserveCapacity(size)
        for record in records {
            batch.append(record)
            if batch.count == size {
                await analyzer.add(contentsOf: batch, parallelism: parallelism)
                batch.removeAll(keepingCapacity: true)
            }
        }
        await analyzer.add(contentsOf: batch, parallelism: parallelism)
        return try analyzer.finish()
    }
}
