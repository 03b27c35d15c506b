import Foundation

/// Draws one provider and app's timeline: days along the horizontal axis, one lane per verdict (published, and
/// sensitive or adaptive where present). Colour says how much slower the app was; the shape says the same without
/// colour: a full-height cell found a difference (with ▼ or ▲ when wide enough), a short one found none, a hollow
/// one could not judge, a day without runs stays empty.
struct TimelineChart {
    /// The drawing's width in user units (it scales to the page's width, keeping its proportions).
    static let width = 1_000.0
    static let laneHeight = 26.0
    static let laneGap = 6.0

    /// The slowdown bucket of a throttled day (1…4) for its colour class.
    static func bucket(_ slowdown: Double?) -> Int {
        guard let slowdown, slowdown.isFinite else { return 2 }
        switch slowdown {
        case ..<0.10: return 1
        case ..<0.25: return 2
        case ..<0.50: return 3
        default: return 4
        }
    }

    /// The CSS class of a day's cell.
    static func cellClass(_ day: TimelineDay) -> String {
        switch day.mark {
        case .throttled: "tl-cell tl-throttled tl-s\(bucket(day.slowdown))"
        case .differentiation: "tl-cell tl-throttled tl-s\(bucket(day.share))"
        default: "tl-cell tl-\(day.mark.rawValue)"
        }
    }

    /// The words of a day (its tooltip and the text alternative).
    static func describe(_ day: TimelineDay, lane: String, strings: Strings, formatter: Formatter) -> String {
        let date = formatter.parseDay(day.day).map { formatter.date($0) } ?? day.day
        if day.mark == .differentiation || day.share != nil {
            return strings.format(
                "timeline_cell_crowd",
                [
                    "date": date, "tests": String(day.runs),
                    "share": day.share.map { formatter.percent($0) } ?? "–",
                ])
        }
        return strings.format(
            "timeline_cell",
            [
                "date": date, "lane": lane,
                "mark": markText(day.mark, slowdown: day.slowdown, strings: strings, formatter),
                "runs": strings.format(day.runs == 1 ? "timeline_runs_one" : "timeline_runs", ["count": "\(day.runs)"]),
            ])
    }

    /// "Throttled, 35% slower" and its siblings.
    static func markText(_ mark: TimelineMark, slowdown: Double?, strings: Strings, _ formatter: Formatter) -> String {
        switch mark {
        case .throttled:
            guard let slowdown else { return strings["timeline_mark_throttled"] }
            return strings.format("timeline_mark_throttled_by", ["percent": formatter.percent(slowdown)])
        case .prioritized: return strings["timeline_mark_prioritized"]
        case .none: return strings["timeline_mark_none"]
        case .inconclusive: return strings["timeline_mark_inconclusive"]
        case .blocked: return strings["timeline_mark_blocked"]
        case .differentiation: return strings["timeline_mark_differentiation"]
        }
    }

    /// The SVG of a row (`id` must be unique in the page).
    static func render(row: TimelineRow, days: [String], strings: Strings, formatter: Formatter) -> String {
        let lanes: [(name: String, days: [TimelineDay])] =
            [(strings["timeline_lane_published"], row.published)]
            + (row.sensitive.isEmpty ? [] : [(strings["timeline_lane_sensitive"], row.sensitive)])
        let height = Double(lanes.count) * laneHeight + Double(lanes.count - 1) * laneGap
        let index = Dictionary(days.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { a, _ in a })
        let cell = width / Double(max(1, days.count))
        let gap = cell >= 4 ? min(2, cell * 0.15) : 0
        var svg = SVG()
        let label = strings.format("timeline_chart_label", ["app": row.app, "provider": row.provider])
        svg.open(
            "svg",
            [
                "viewBox": "0 0 \(SVG.coordinate(width)) \(SVG.coordinate(height))",
                "class": "timeline-chart lanes-\(lanes.count)",
                "role": "img", "aria-label": label, "preserveAspectRatio": "none",
            ])
        for (number, lane) in lanes.enumerated() {
            let top = Double(number) * (laneHeight + laneGap)
            svg.empty(
                "rect",
                [
                    "x": "0", "y": SVG.coordinate(top), "width": SVG.coordinate(width),
                    "height": SVG.coordinate(laneHeight), "class": "tl-lane",
                ])
            for day in lane.days {
                guard let position = index[day.day] else { continue }
                let x = Double(position) * cell + gap / 2
                let w = max(1, cell - gap)
                svg.open("g", ["class": "tl-day"])
                svg.element(
                    "title", [:], text: describe(day, lane: lane.name, strings: strings, formatter: formatter))
                switch day.mark {
                case .none:
                    // Short: nothing found.
                    let h = laneHeight * 0.4
                    svg.empty(
                        "rect",
                        [
                            "x": SVG.coordinate(x), "y": SVG.coordinate(top + laneHeight - h),
                            "width": SVG.coordinate(w),
                            "height": SVG.coordinate(h), "class": cellClass(day),
                        ])
                case .inconclusive:
                    // Hollow: could not judge.
                    let inset = min(1, w / 4)
                    svg.empty(
                        "rect",
                        [
                            "x": SVG.coordinate(x + inset), "y": SVG.coordinate(top + 1),
                            "width": SVG.coordinate(max(0.5, w - 2 * inset)), "height": SVG.coordinate(laneHeight - 2),
                            "class": cellClass(day),
                        ])
                default:
                    svg.empty(
                        "rect",
                        [
                            "x": SVG.coordinate(x), "y": SVG.coordinate(top), "width": SVG.coordinate(w),
                            "height": SVG.coordinate(laneHeight), "class": cellClass(day),
                        ])
                    if w >= 8, day.mark == .throttled || day.mark == .prioritized {
                        let cx = x + w / 2
                        let half = min(w * 0.3, 5)
                        let cy = top + laneHeight / 2
                        let points =
                            day.mark == .throttled
                            ? [(cx - half, cy - half * 0.8), (cx + half, cy - half * 0.8), (cx, cy + half * 0.9)]
                            : [(cx - half, cy + half * 0.8), (cx + half, cy + half * 0.8), (cx, cy - half * 0.9)]
                        svg.empty(
                            "polygon",
                            [
                                "points": points.map { SVG.coordinate($0.0) + "," + SVG.coordinate($0.1) }
                                    .joined(separator: " "),
                                "class": "tl-glyph",
                            ])
                    }
                }
                svg.close("g")
            }
        }
        svg.close("svg")
        return svg.rendered
    }

    /// A legend swatch: the same shape and class as the cells it explains.
    static func swatch(_ mark: TimelineMark, bucket: Int = 0) -> String {
        var svg = SVG()
        svg.open(
            "svg",
            ["viewBox": "0 0 16 20", "width": "16", "height": "20", "class": "tl-swatch", "aria-hidden": "true"])
        switch mark {
        case .none:
            svg.empty(
                "rect", ["x": "1", "y": "12", "width": "14", "height": "8", "class": "tl-cell tl-no-differentiation"])
        case .inconclusive:
            svg.empty(
                "rect", ["x": "2", "y": "1", "width": "12", "height": "18", "class": "tl-cell tl-inconclusive"])
        case .throttled:
            svg.empty(
                "rect",
                ["x": "1", "y": "0", "width": "14", "height": "20", "class": "tl-cell tl-throttled tl-s\(bucket)"])
            svg.empty("polygon", ["points": "4,6 12,6 8,13", "class": "tl-glyph"])
        case .prioritized:
            svg.empty("rect", ["x": "1", "y": "0", "width": "14", "height": "20", "class": "tl-cell tl-prioritized"])
            svg.empty("polygon", ["points": "4,13 12,13 8,6", "class": "tl-glyph"])
        case .blocked:
            svg.empty("rect", ["x": "1", "y": "0", "width": "14", "height": "20", "class": "tl-cell tl-blocked"])
        case .differentiation:
            svg.empty(
                "rect",
                ["x": "1", "y": "0", "width": "14", "height": "20", "class": "tl-cell tl-throttled tl-s\(bucket)"])
        }
        svg.close("svg")
        return svg.rendered
    }
}
