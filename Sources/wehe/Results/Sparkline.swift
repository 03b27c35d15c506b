/// A text sparkline: values resampled to `width` columns, drawn with eight block heights.
enum Sparkline {
    static let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    static func render(_ values: [Double], width: Int) -> String {
        guard !values.isEmpty, width > 0 else { return "" }
        let columns = min(width, values.count)
        var resampled: [Double] = []
        for column in 0..<columns {
            let start = column * values.count / columns
            let end = max(start + 1, (column + 1) * values.count / columns)
            let slice = values[start..<end]
            resampled.append(slice.reduce(0, +) / Double(slice.count))
        }
        let top = resampled.max() ?? 0
        guard top > 0 else { return String(repeating: blocks[0], count: columns) }
        return String(resampled.map { blocks[min(blocks.count - 1, Int($0 / top * Double(blocks.count - 1) + 0.5))] })
    }
}
