package import Foundation

/// The bar chart of the operator page: tests per day over the selected range (days without tests drawn as gaps).
package struct DailyBarChart: Sendable {
    /// One bar.
    package struct Bar: Sendable, Hashable {
        /// Start of the day.
        package var day: Date
        /// Tests that day.
        package var count: Int

        /// Creates a bar.
        package init(day: Date, count: Int) {
            self.day = day
            self.count = count
        }
    }

    /// The bars, in day order.
    package var bars: [Bar]
    /// Title, description and axis labels.
    package var text: ChartText
    /// Tooltip of a bar: `{day}` and `{count}` are replaced.
    package var barLabel: String
    /// Formats dates and numbers.
    package var formatter: Formatter

    /// Creates a chart.
    package init(bars: [Bar], text: ChartText, barLabel: String, formatter: Formatter) {
        self.bars = bars
        self.text = text
        self.barLabel = barLabel
        self.formatter = formatter
    }

    /// The SVG markup.
    package func render(id: String) -> String {
        // Room under the plot for the day labels below the "0" of the count axis (on a phone the labels are drawn
        // twice as large, and the first day's label would otherwise overlap that "0"), then the axis title.
        let frame = PlotFrame(width: 720, height: 284, left: 72, right: 20, top: 16, bottom: 76)
        let yScale = AxisScale(maximum: Double(bars.map(\.count).max() ?? 1), count: 4, integers: true)
        var svg = SVG()
        svg.openChart(id: id, frame: frame, text: text, cssClass: "bar-chart")
        let width = frame.plotRight - frame.plotLeft
        let slot = width / Double(max(1, bars.count))
        svg.open("g", ["class": "grid", "aria-hidden": "true"])
        for tick in yScale.ticks {
            let position = SVG.coordinate(yScale.position(tick, from: frame.plotBottom, to: frame.plotTop))
            svg.empty(
                "line",
                [
                    "x1": SVG.coordinate(frame.plotLeft), "x2": SVG.coordinate(frame.plotRight), "y1": position,
                    "y2": position,
                ])
            svg.element(
                "text", ["x": SVG.coordinate(frame.plotLeft - 8), "y": position, "class": "tick tick-y"],
                text: formatter.number(tick, digits: yScale.decimals))
        }
        let labelEvery = max(1, Int((Double(bars.count) / 8).rounded(.up)))
        for (index, bar) in bars.enumerated() where index % labelEvery == 0 {
            svg.element(
                "text",
                [
                    "x": SVG.coordinate(frame.plotLeft + slot * (Double(index) + 0.5)),
                    // Every other label is left out on a phone, where the words are larger ("10 nov." in French).
                    "y": SVG.coordinate(frame.plotBottom + 38),
                    "class": (index / labelEvery) % 2 == 1 ? "tick tick-x odd" : "tick tick-x",
                ], text: formatter.shortDate(bar.day))
        }
        svg.close("g")
        svg.open("g", ["class": "bars"])
        let gap = slot > 6 ? max(1, slot * 0.15) : 0
        for (index, bar) in bars.enumerated() where bar.count > 0 {
            let top = yScale.position(Double(bar.count), from: frame.plotBottom, to: frame.plotTop)
            svg.open(
                "rect",
                [
                    "x": SVG.coordinate(frame.plotLeft + slot * Double(index) + gap / 2),
                    "y": SVG.coordinate(top), "width": SVG.coordinate(max(0.5, slot - gap)),
                    "height": SVG.coordinate(max(0.5, frame.plotBottom - top)), "class": "bar",
                ])
            svg.element(
                "title", [:],
                text: barLabel.replacingOccurrences(of: "{day}", with: formatter.date(bar.day))
                    .replacingOccurrences(of: "{count}", with: formatter.integer(bar.count)))
            svg.close("rect")
        }
        svg.close("g")
        svg.element(
            "text",
            [
                "x": SVG.coordinate((frame.plotLeft + frame.plotRight) / 2), "y": SVG.coordinate(frame.height - 8),
                "class": "axis-label",
            ], text: text.xLabel)
        svg.close("svg")
        return svg.rendered
    }
}
