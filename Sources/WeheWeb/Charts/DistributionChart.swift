/// The CDF chart of a test page: the empirical distribution of each replay's throughput, with the largest vertical
/// gap between them (the KS statistic D) and the two means (what the area statistic compares) marked.
package struct DistributionChart: Sendable {
    /// Original and control samples (the chart keeps positive values only, as the KS test does).
    package var original: [Double]
    /// See `original`.
    package var control: [Double]
    /// Legend labels of the two curves.
    package var originalLabel: String
    /// See `originalLabel`.
    package var controlLabel: String
    /// Means to mark (zeros included, as the area statistic uses them); `nil` to omit.
    package var originalMean: Double?
    /// See `originalMean`.
    package var controlMean: Double?
    /// Title, description and axis labels.
    package var text: ChartText
    /// Label template of the D marker: `{d}` is replaced by the value.
    package var gapLabel: String
    /// Formats numbers in the page's language.
    package var formatter: Formatter

    /// Creates a chart.
    package init(
        original: [Double], control: [Double], originalLabel: String, controlLabel: String, originalMean: Double?,
        controlMean: Double?, text: ChartText, gapLabel: String, formatter: Formatter
    ) {
        self.original = original
        self.control = control
        self.originalLabel = originalLabel
        self.controlLabel = controlLabel
        self.originalMean = originalMean
        self.controlMean = controlMean
        self.text = text
        self.gapLabel = gapLabel
        self.formatter = formatter
    }

    /// The largest gap between the two empirical CDFs: where it is and both CDF values there.
    package struct Gap: Sendable, Hashable {
        /// The throughput at which the gap is largest.
        package var at: Double
        /// F_original(at).
        package var originalFraction: Double
        /// F_control(at).
        package var controlFraction: Double
        /// |difference|: the KS statistic D.
        package var distance: Double { abs(originalFraction - controlFraction) }
    }

    /// The KS gap of two sorted samples, or `nil` when one is empty.
    package static func gap(sortedOriginal a: [Double], sortedControl b: [Double]) -> Gap? {
        guard !a.isEmpty, !b.isEmpty else { return nil }
        var i = 0
        var j = 0
        var best = Gap(at: min(a[0], b[0]), originalFraction: 0, controlFraction: 0)
        while i < a.count || j < b.count {
            let value = min(i < a.count ? a[i] : .infinity, j < b.count ? b[j] : .infinity)
            while i < a.count && a[i] <= value { i += 1 }
            while j < b.count && b[j] <= value { j += 1 }
            let candidate = Gap(
                at: value, originalFraction: Double(i) / Double(a.count), controlFraction: Double(j) / Double(b.count))
            if candidate.distance > best.distance { best = candidate }
        }
        return best
    }

    /// The SVG markup and the gap it marked.
    package func render(id: String) -> (svg: String, gap: Gap?) {
        let frame = PlotFrame.standard
        let a = original.filter { $0.isFinite && $0 > 0 }.sorted()
        let b = control.filter { $0.isFinite && $0 > 0 }.sorted()
        let maxX = max(a.last ?? 0, b.last ?? 0, originalMean ?? 0, controlMean ?? 0)
        let xScale = AxisScale(maximum: maxX > 0 ? maxX : 1, count: 8)
        let yScale = AxisScale(maximum: 1, count: 4)
        var svg = SVG()
        svg.openChart(id: id, frame: frame, text: text, cssClass: "cdf-chart")
        svg.axes(
            x: xScale, y: yScale, frame: frame, text: text,
            xTick: { formatter.number($0, digits: xScale.decimals) },
            yTick: { formatter.percent($0) })
        func x(_ value: Double) -> Double { xScale.position(value, from: frame.plotLeft, to: frame.plotRight) }
        func y(_ value: Double) -> Double { yScale.position(value, from: frame.plotBottom, to: frame.plotTop) }
        let meanMarks: [(Double?, String)] = [(originalMean, "original"), (controlMean, "control")]
        for (mean, style) in meanMarks {
            guard let mean, mean.isFinite else { continue }
            svg.empty(
                "line",
                [
                    "x1": SVG.coordinate(x(mean)), "x2": SVG.coordinate(x(mean)), "y1": SVG.coordinate(frame.plotTop),
                    "y2": SVG.coordinate(frame.plotBottom), "class": "mean mean-\(style)",
                ])
        }
        for (values, style) in [(a, "original"), (b, "control")] where !values.isEmpty {
            var path = "M" + SVG.coordinate(x(0)) + " " + SVG.coordinate(y(0))
            let step = max(1, values.count / 1_400)
            var index = 0
            while index < values.count {
                let last = min(values.count - 1, index + step - 1)
                path += "H" + SVG.coordinate(x(values[last]))
                path += "V" + SVG.coordinate(y(Double(last + 1) / Double(values.count)))
                index += step
            }
            path += "H" + SVG.coordinate(frame.plotRight)
            svg.empty("path", ["d": path, "class": "series series-\(style) step"])
        }
        let gap = Self.gap(sortedOriginal: a, sortedControl: b)
        if let gap, gap.distance > 0 {
            let gx = SVG.coordinate(x(gap.at))
            svg.open("g", ["class": "ks-gap"])
            svg.empty(
                "line",
                [
                    "x1": gx, "x2": gx, "y1": SVG.coordinate(y(gap.originalFraction)),
                    "y2": SVG.coordinate(y(gap.controlFraction)),
                ])
            let labelY = (y(gap.originalFraction) + y(gap.controlFraction)) / 2
            let anchorEnd = x(gap.at) > (frame.plotLeft + frame.plotRight) / 2
            svg.element(
                "text",
                [
                    "x": SVG.coordinate(x(gap.at) + (anchorEnd ? -8 : 8)), "y": SVG.coordinate(labelY),
                    "class": anchorEnd ? "ks-label end" : "ks-label",
                ], text: gapLabel.replacingOccurrences(of: "{d}", with: formatter.number(gap.distance, digits: 2)))
            svg.close("g")
        }
        svg.legend(
            [
                ChartSeries(label: originalLabel, style: "original", x: [], y: []),
                ChartSeries(label: controlLabel, style: "control", x: [], y: []),
            ], frame: frame)
        svg.close("svg")
        return (svg.rendered, gap)
    }
}
