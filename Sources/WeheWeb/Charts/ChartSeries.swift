/// One line of a chart: a label, a style (`original` or `control`) and points.
package struct ChartSeries: Sendable, Hashable {
    /// Legend label (escaped when drawn).
    package var label: String
    /// CSS class suffix: `original` (solid) or `control` (dashed), so colour is never the only difference.
    package var style: String
    /// Points as (x, y).
    package var x: [Double]
    /// See `x`.
    package var y: [Double]

    /// Creates a series; extra values of the longer array are ignored.
    package init(label: String, style: String, x: [Double], y: [Double]) {
        let count = min(x.count, y.count)
        self.label = label
        self.style = style
        self.x = Array(x.prefix(count))
        self.y = Array(y.prefix(count))
    }
}

/// The words around a chart: accessible title and description, axis labels.
package struct ChartText: Sendable, Hashable {
    /// Short title (`<title>`).
    package var title: String
    /// One-sentence description (`<desc>`).
    package var description: String
    /// Label of the horizontal axis.
    package var xLabel: String
    /// Label of the vertical axis.
    package var yLabel: String

    /// Creates the texts.
    package init(title: String, description: String, xLabel: String, yLabel: String) {
        self.title = title
        self.description = description
        self.xLabel = xLabel
        self.yLabel = yLabel
    }
}

/// Plot area geometry shared by the charts.
struct PlotFrame {
    let width: Double
    let height: Double
    let left: Double
    let right: Double
    let top: Double
    let bottom: Double

    var plotLeft: Double { left }
    var plotRight: Double { width - right }
    var plotTop: Double { top }
    var plotBottom: Double { height - bottom }

    /// Margins leave room for the larger words a phone gets (the stylesheet draws chart text at about 24 units
    /// there, twice the desktop size, so that it stays about 11 px high once the 720-unit drawing is scaled down).
    static let standard = PlotFrame(width: 720, height: 340, left: 96, right: 20, top: 44, bottom: 60)
}

extension SVG {
    /// Opens an accessible `<svg>` with a title and description, and returns the id prefix used.
    mutating func openChart(id: String, frame: PlotFrame, text: ChartText, cssClass: String) {
        open(
            "svg",
            [
                "xmlns": "http://www.w3.org/2000/svg", "viewBox": "0 0 \(Int(frame.width)) \(Int(frame.height))",
                "role": "img", "aria-labelledby": "\(id)-title \(id)-desc", "class": "chart \(cssClass)", "id": id,
                "preserveAspectRatio": "xMidYMid meet",
            ])
        element("title", ["id": "\(id)-title"], text: text.title)
        element("desc", ["id": "\(id)-desc"], text: text.description)
    }

    /// Grid lines, tick labels and axis labels for two linear scales.
    mutating func axes(
        x: AxisScale, y: AxisScale, frame: PlotFrame, text: ChartText, xTick: (Double) -> String,
        yTick: (Double) -> String
    ) {
        open("g", ["class": "grid", "aria-hidden": "true"])
        for tick in y.ticks {
            let position = SVG.coordinate(y.position(tick, from: frame.plotBottom, to: frame.plotTop))
            empty(
                "line",
                [
                    "x1": SVG.coordinate(frame.plotLeft), "x2": SVG.coordinate(frame.plotRight), "y1": position,
                    "y2": position,
                ])
            element(
                "text", ["x": SVG.coordinate(frame.plotLeft - 8), "y": position, "class": "tick tick-y"],
                text: yTick(tick))
        }
        for (index, tick) in x.ticks.enumerated() {
            let position = SVG.coordinate(x.position(tick, from: frame.plotLeft, to: frame.plotRight))
            empty(
                "line",
                [
                    "x1": position, "x2": position, "y1": SVG.coordinate(frame.plotTop),
                    "y2": SVG.coordinate(frame.plotBottom), "class": "vertical",
                ])
            element(
                "text",
                [
                    "x": position, "y": SVG.coordinate(frame.plotBottom + 24),
                    // Every other label is left out on a phone, where the words are larger; there the first
                    // starts at its tick instead of around it, clear of the "0" of the vertical axis.
                    "class": index % 2 == 1 ? "tick tick-x odd" : index == 0 ? "tick tick-x first" : "tick tick-x",
                ], text: xTick(tick))
        }
        close("g")
        element(
            "text",
            [
                "x": SVG.coordinate((frame.plotLeft + frame.plotRight) / 2), "y": SVG.coordinate(frame.height - 8),
                "class": "axis-label",
            ], text: text.xLabel)
        element(
            "text",
            [
                "x": "26", "y": SVG.coordinate((frame.plotTop + frame.plotBottom) / 2), "class": "axis-label",
                "transform": "rotate(-90 26 \(SVG.coordinate((frame.plotTop + frame.plotBottom) / 2)))",
            ], text: text.yLabel)
    }

    /// A legend row at the top of the plot: a line sample drawn in each series' style and its label.
    mutating func legend(_ series: [ChartSeries], frame: PlotFrame) {
        open("g", ["class": "legend"])
        var x = frame.plotLeft
        var shown: Set<String> = []
        // A series drawn in parts (the runs of a live chart) is named once.
        for item in series where shown.insert(item.style + "\u{0}" + item.label).inserted {
            empty(
                "line",
                [
                    "x1": SVG.coordinate(x), "x2": SVG.coordinate(x + 28), "y1": "18", "y2": "18",
                    "class": "series series-\(item.style)",
                ])
            element("text", ["x": SVG.coordinate(x + 36), "y": "22", "class": "legend-label"], text: item.label)
            // Room for the label at the phone's larger size (about 13.5 units a character at 25 units).
            x += 48 + Double(item.label.count) * 13.5
        }
        close("g")
    }
}
