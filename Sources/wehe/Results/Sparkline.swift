/// A text sparkline: values resampled to `width` columns, drawn with eight block heights.
enum Sparkline {
    static let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    /// Several series drawn on one scale (the largest column of any of them is the full block), so that a slow
    /// series looks low beside a fast one.
    static func render(series: [[Double]], width: Int) -> [String] {
        let top = series.map { resample($0, width: width).max() ?? 0 }.max() ?? 0
        return series.map { render($0, width: width, top: top) }
    }

    /// One series; `top` is the value drawn as a full block (the series' own largest column when `nil`).
    static func render(_ values: [Double], width: Int, top: Double? = nil) -> String {
        let resampled = resample(values, width: width)
        guard !resampled.isEmpty else { return "" }
        let top = top ?? resampled.max() ?? 0
        guard top > 0 else { return String(repeating: blocks[0], count: resampled.count) }
        return String(
            resampled.map { blocks[max(0, min(blocks.count - 1, Int($0 / top * Double(blocks.count - 1) + 0.5)))] })
    }

    /// The values averaged into at most `width` columns.
    static func resample(_ values: [Double], width: Int) -> [Double] {
        guard !values.isEmpty, width > 0 else { return [] }
        let columns = min(width, values.count)
        var resampled: [Double] = []
        for column in 0..<columns {
            let start = column * values.count / columns
            let end = max(start + 1, (column + 1) * values.count / columns)
            let slice = values[start..<end]
            resampled.append(slice.reduce(0, +) / Double(slice.count))
        }
        return resampled
    }
}
