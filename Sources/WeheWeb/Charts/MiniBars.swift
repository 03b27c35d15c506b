/// Small decorative bars inside table cells (hidden from screen readers: the numbers beside them say the same).
package enum MiniBars {
    /// Two horizontal bars comparing original and control throughput, scaled to the larger one. The drawing has
    /// its own size (96 × 14 px): a table cell sized by its content cannot shrink it to nothing, as it did to a
    /// drawing only sized in percent.
    package static func comparison(original: Double?, control: Double?) -> String {
        let values = [original ?? 0, control ?? 0].map { $0.isFinite ? max(0, $0) : 0 }
        let top = max(values[0], values[1])
        guard top > 0 else { return "" }
        var svg = SVG()
        svg.open(
            "svg",
            [
                "viewBox": "0 0 100 14", "width": "96", "height": "14", "class": "mini-bars", "aria-hidden": "true",
                "focusable": "false", "preserveAspectRatio": "none",
            ])
        for (index, value) in values.enumerated() {
            svg.empty(
                "rect",
                [
                    "x": "0", "y": index == 0 ? "1" : "8", "height": "5",
                    "width": SVG.coordinate(max(1, value / top * 100)),
                    "class": index == 0 ? "mini-original" : "mini-control",
                ])
        }
        svg.close("svg")
        return svg.rendered
    }

    /// One horizontal bar split into verdict segments (`counts` in the order of `styles`).
    package static func stacked(_ counts: [Int], styles: [String]) -> String {
        let total = counts.reduce(0, +)
        guard total > 0 else { return "" }
        var svg = SVG()
        svg.open(
            "svg",
            [
                "viewBox": "0 0 100 10", "class": "stack-bar", "aria-hidden": "true", "focusable": "false",
                "preserveAspectRatio": "none",
            ])
        var x = 0.0
        for (count, style) in zip(counts, styles) where count > 0 {
            let width = Double(count) / Double(total) * 100
            svg.empty(
                "rect",
                [
                    "x": SVG.coordinate(x), "y": "0", "height": "10", "width": SVG.coordinate(width),
                    "class": "seg-\(style)",
                ])
            x += width
        }
        svg.close("svg")
        return svg.rendered
    }
}
