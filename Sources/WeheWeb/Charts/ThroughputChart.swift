/// The line chart of a test page: throughput of the original and control replays over time.
package struct ThroughputChart: Sendable {
    /// The series to draw (original first).
    package var series: [ChartSeries]
    /// Title, description and axis labels.
    package var text: ChartText
    /// Formats tick numbers in the page's language.
    package var formatter: Formatter

    /// Creates a chart.
    package init(series: [ChartSeries], text: ChartText, formatter: Formatter) {
        self.series = series
        self.text = text
        self.formatter = formatter
    }

    /// Most points drawn per series; longer series are reduced to the minimum and maximum of each pixel column.
    static let maximumPoints = 1_400

    /// The SVG markup.
    package func render(id: String) -> String {
        let frame = PlotFrame.standard
        let maxX = series.flatMap(\.x).filter(\.isFinite).max() ?? 1
        let maxY = series.flatMap(\.y).filter(\.isFinite).max() ?? 1
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
