/// The line chart of a test page: throughput of the original and control replays over time.
package struct ThroughputChart: Sendable {
    /// The series to draw (original first).
    package var series: [ChartSeries]
    /// Title, description and axis labels.
    package var text: ChartText
    /// Formats tick numbers in the page's language.
    package var formatter: Formatter
    /// The words written on the chart when its axis is cut (`{cut}`, `{count}`, `{max}` replaced); `nil` draws
    /// every point to scale whatever its spikes.
    package var clipNote: String?
    /// Vertical lines with a label where something starts (a confirmation run on the live chart).
    package var markers: [Marker] = []

    /// A vertical line across the plot at `x`, with `label` written beside its top.
    package struct Marker: Sendable, Hashable {
        /// Where, in the units of the x axis.
        package var x: Double
        /// What starts there.
        package var label: String

        /// Creates a marker.
        package init(x: Double, label: String) {
            self.x = x
            self.label = label
        }
    }

    /// Creates a chart.
    package init(
        series: [ChartSeries], text: ChartText, formatter: Formatter, clipNote: String? = nil, markers: [Marker] = []
    ) {
        self.series = series
        self.text = text
        self.formatter = formatter
        self.clipNote = clipNote
        self.markers = markers
    }

    /// Where the vertical axis is cut so that one series' rare spikes cannot flatten the other lines: the values
    /// above `cut` (`above` of them, the largest `maximum`) are drawn on the top edge.
    package struct Clip: Sendable, Hashable {
        /// The top of the axis, Mbit/s.
        package var cut: Double
        /// How many values lie above it.
        package var above: Int
        /// The largest value.
        package var maximum: Double
    }

    /// The cut of the axis, when one is needed: the axis ends at 1.5 × the largest 95th percentile of the series,
    /// if the largest value is more than twice that. A series that is high all along (a throttled app against a
    /// fast control) sets the axis itself and is never cut; only rare spikes are (at most 5 % of each series).
    package var clip: Clip? {
        guard clipNote != nil else { return nil }
        let all = series.map { $0.y.filter(\.isFinite).sorted() }.filter { !$0.isEmpty }
        guard let maximum = all.compactMap(\.last).max(), maximum > 0 else { return nil }
        let typical = all.map { $0[min($0.count - 1, Int((Double($0.count - 1) * 0.95).rounded()))] }.max() ?? 0
        guard typical > 0 else { return nil }
        let cut = AxisScale(maximum: typical * 1.5, count: 5).upper
        guard maximum > 2 * cut else { return nil }
        let above = all.reduce(0) { $0 + $1.filter { $0 > cut }.count }
        return Clip(cut: cut, above: above, maximum: maximum)
    }

    /// Most points drawn per series; longer series are reduced to the minimum and maximum of each pixel column.
    static let maximumPoints = 1_400

    /// The SVG markup.
    package func render(id: String) -> String {
        let frame = PlotFrame.standard
        let maxX = series.flatMap(\.x).filter(\.isFinite).max() ?? 1
        let clip = self.clip
        let maxY = clip?.cut ?? series.flatMap(\.y).filter(\.isFinite).max() ?? 1
        let xScale = AxisScale(maximum: maxX, count: 8)
        let yScale = AxisScale(maximum: maxY, count: 5)
        var svg = SVG()
        svg.openChart(id: id, frame: frame, text: text, cssClass: "line-chart")
        svg.axes(
            x: xScale, y: yScale, frame: frame, text: text,
            xTick: { formatter.number($0, digits: xScale.decimals) },
            yTick: { formatter.number($0, digits: yScale.decimals) })
        for item in series where !item.x.isEmpty {
            let points = Self.reduced(item, scale: xScale, columns: Int(frame.plotRight - frame.plotLeft))
            var path = ""
            path.reserveCapacity(points.count * 14)
            for (index, point) in points.enumerated() {
                path += index == 0 ? "M" : "L"
                path += SVG.coordinate(xScale.position(point.0, from: frame.plotLeft, to: frame.plotRight))
                path += " "
                path += SVG.coordinate(yScale.position(point.1, from: frame.plotBottom, to: frame.plotTop))
            }
            svg.empty("path", ["d": path, "class": "series series-\(item.style)", "data-series": item.label])
        }
        for (index, marker) in markers.enumerated() where marker.x.isFinite {
            let x = xScale.position(marker.x, from: frame.plotLeft, to: frame.plotRight)
            svg.empty(
                "line",
                [
                    "x1": SVG.coordinate(x), "x2": SVG.coordinate(x), "y1": SVG.coordinate(frame.plotTop),
                    "y2": SVG.coordinate(frame.plotBottom), "class": "run-break",
                ])
            svg.element(
                "text",
                [
                    "x": SVG.coordinate(x + 6), "y": SVG.coordinate(frame.plotTop + 18), "class": "run-break-label",
                    "id": "\(id)-break-\(index + 1)",
                ],
                text: marker.label)
        }
        if let clip, let clipNote {
            // The cut is drawn (a zig-zag on the axis) and said in words inside the plot.
            let top = frame.plotTop
            let left = frame.plotLeft
            svg.empty(
                "path",
                [
                    "d": "M\(SVG.coordinate(left - 6)) \(SVG.coordinate(top + 10))l6 -4l-6 -4l6 -4",
                    "class": "axis-cut",
                ])
            svg.element(
                "text",
                [
                    "x": SVG.coordinate(frame.plotRight - 6), "y": SVG.coordinate(top + 18), "class": "clip-note",
                    "id": "\(id)-clip",
                ],
                text: clipNote.replacingOccurrences(
                    of: "{cut}", with: formatter.number(clip.cut, digits: yScale.decimals)
                )
                .replacingOccurrences(of: "{count}", with: formatter.integer(clip.above))
                .replacingOccurrences(of: "{max}", with: formatter.number(clip.maximum)))
        }
        svg.legend(series, frame: frame)
        svg.close("svg")
        return svg.rendered
    }

    /// The points of a series, reduced to min/max per pixel column when there are too many.
    static func reduced(_ series: ChartSeries, scale: AxisScale, columns: Int) -> [(Double, Double)] {
        let all = zip(series.x, series.y).filter { $0.0.isFinite && $0.1.isFinite }
        guard all.count > maximumPoints, columns > 0 else { return all }
        var buckets: [Int: (first: (Double, Double), low: (Double, Double), high: (Double, Double))] = [:]
        var order: [Int] = []
        for point in all {
            let column = Int(scale.position(point.0, from: 0, to: Double(columns)))
            if var bucket = buckets[column] {
                if point.1 < bucket.low.1 { bucket.low = point }
                if point.1 > bucket.high.1 { bucket.high = point }
                buckets[column] = bucket
            } else {
                buckets[column] = (point, point, point)
                order.append(column)
            }
        }
        var result: [(Double, Double)] = []
        for column in order {
            guard let bucket = buckets[column] else { continue }
            let pair = bucket.low.0 <= bucket.high.0 ? [bucket.low, bucket.high] : [bucket.high, bucket.low]
            result.append(contentsOf: pair)
        }
        return result
    }
}
