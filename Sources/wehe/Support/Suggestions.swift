/// "Did you mean …": the known words closest to a mistyped one.
enum Suggestions {
    /// The candidates within a few edits of `word` (ignoring case), closest first; a candidate that starts with
    /// `word` (three letters or more) counts as close too. Duplicates are dropped, the order of `candidates` breaks
    /// ties.
    static func closest(to word: String, among candidates: [String], limit: Int = 3) -> [String] {
        let typed = Array(word.lowercased())
        guard !typed.isEmpty else { return [] }
        // One edit for short words, more for longer ones: "yotube" finds "youtube", "xy" does not find "dpi".
        let allowed = max(1, min(3, typed.count / 3))
        var scored: [(candidate: String, distance: Int, index: Int)] = []
        for (index, candidate) in candidates.enumerated() where !scored.contains(where: { $0.candidate == candidate }) {
            let known = Array(candidate.lowercased())
            var distance = editDistance(typed, known)
            if typed.count >= 3, known.starts(with: typed) { distance = min(distance, 1) }
            if distance <= allowed { scored.append((candidate, distance, index)) }
        }
        return scored.sorted { ($0.distance, $0.index) < ($1.distance, $1.index) }.prefix(limit).map(\.candidate)
    }

    /// Edits (insert, delete, replace, swap of two neighbours) that turn `a` into `b`.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], before[j - 2] + 1)
                }
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
