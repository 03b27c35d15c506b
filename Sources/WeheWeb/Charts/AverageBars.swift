/// The two average speeds of a test side by side, the picture the Wehe app shows: one bar per replay on a shared
/// scale, the label and the value written as page text (so they wrap and stay readable on a phone), the bars drawn
/// as small SVGs with their own height.
package struct AverageBars: Sendable {
    /// One bar.
    package struct Row: Sendable, Hashable {
        /// What the bar is (`App traffic (Netflix)`).
        package var label: String
        /// `original` or `control` (colour and pattern).
        package var style: String
        /// The average, Mbit/s; `nil` when unknown (drawn empty, value "–").
        package var mbps: Double?

        /// Creates a row.
        package init(label: String, style: String, mbps: Double?) {
            self.label = label
            self.style = style
            self.mbps = mbps
        }
    }

    /// The bars, in order.
    package var rows: [Row]
    /// The accessible name of the group.
    package var title: String
    /// Formats the values.
    package var formatter: Formatter
    /// Written instead of a value for a bar without one ("not measured").
    package var missing: String

    /// Creates the bars.
    package init(rows: [Row], title: String, formatter: Formatter, missing: String = "–") {
        self.rows = rows
        self.title = title
        self.formatter = formatter
        self.missing = missing
    }

    /// The width of each bar in percent of the longest (0 for an unknown or non-positive value).
    package var widths: [Double] {
        let values = rows.map { $0.mbps.map { $0.isFinite ? max(0, $0) : 0 } ?? 0 }
        let top = values.max() ?? 0
        return values.map { top > 0 ? $0 / top * 100 : 0 }
    }

    /// The markup (HTML with inline SVG bars; every text escaped).
    package func render(id: String) -> String {
        var html = SVG()
        html.open("div", ["class": "avg-bars", "id": id, "role": "group", "aria-label": title])
        for (row, width) in zip(rows, widths) {
            html.open("div", ["class": "avg-row avg-\(row.style)"])
            html.element("span", ["class": "avg-label"], text: row.label)
            html.open("span", ["class": "avg-track", "aria-hidden": "true"])
            html.open(
                "svg",
                [
                    "viewBox": "0 0 100 10", "preserveAspectRatio": "none", "height": "18", "class": "avg-svg",
                    "focusable": "false",
                ])
            if width > 0 {
                html.empty(
                    "rect",
                    [
                        "x": "0", "y": "0", "height": "10", "width": SVG.coordinate(max(0.5, width)),
                        "class": "avg-bar mini-\(row.style)",
                    ])
            }
            html.close("svg")
            html.close("span")
            html.element(
                "span", ["class": "avg-value"], text: row.mbps.map { formatter.number($0) + " Mbit/s" } ?? missing)
            html.close("div")
        }
        html.close("div")
        return html.rendered
    }
}
