import Foundation

/// Inline SVG charts rendered on the server (no script): a sparkline of daily counts and a
/// stacked bar chart of crashes per day per version. Colours come from the style sheet's classes
/// (`s0`…`s5`), so both themes apply and the strict CSP needs no inline style.
enum ConsoleChart {
    /// Escapes text for HTML and SVG content and attribute values.
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "&": result += "&amp;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    /// A polyline of `values` (oldest first), with the total as its accessible name.
    static func sparkline(_ values: [Int], width: Int = 120, height: Int = 24) -> String {
        let total = values.reduce(0, +)
        let top = max(values.max() ?? 0, 1)
        let step = values.count > 1 ? Double(width - 2) / Double(values.count - 1) : 0
        let points = values.enumerated().map { index, value in
            let x = 1 + Double(index) * step
            let y = Double(height - 2) - Double(value) / Double(top) * Double(height - 4) + 1
            return String(format: "%.1f,%.1f", x, y)
        }.joined(separator: " ")
        return """
            <svg class="sparkline" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" role="img" \
            aria-label="\(total) crashes in the last \(values.count) days"><title>\(total) crashes in the last \(values.count) days</title>\
            <polyline class="spark" points="\(points)"/></svg>
            """
    }

    /// Stacked bars: one bar per UTC day from `firstDay` for `days` days, one colour per version
    /// (the five versions with most crashes, the rest as "other"), with a legend.
    static func dailyByVersion(_ counts: [(day: Int64, version: String, count: Int)], firstDay: Int64, days: Int) -> String {
        var totals: [String: Int] = [:]
        for entry in counts { totals[entry.version, default: 0] += entry.count }
        let ranked = totals.sorted { $0.value != $1.value ? $0.value > $1.value : VersionOrder.ascending($1.key, $0.key) }
        var series = ranked.prefix(5).map(\.key)
        let hasOther = ranked.count > 5
        if hasOther { series.append("other") }
        var grid = [[Int]](repeating: [Int](repeating: 0, count: series.count), count: days)
        for entry in counts {
            let index = Int(entry.day - firstDay)
            guard index >= 0 && index < days else { continue }
            let column = series.firstIndex(of: entry.version) ?? (hasOther ? series.count - 1 : -1)
            if column >= 0 { grid[index][column] += entry.count }
        }
        let dayTotals = grid.map { $0.reduce(0, +) }
        let top = max(dayTotals.max() ?? 0, 1)
        let width = 720, height = 160, left = 36, bottom = 20, topPad = 8
        let plotWidth = width - left - 4, plotHeight = height - bottom - topPad
        let barSlot = Double(plotWidth) / Double(days)
        let barWidth = max(barSlot * 0.8, 1)
        var svg = """
            <svg class="chart" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" role="img" \
            aria-label="Crashes per day and version: \(dayTotals.reduce(0, +)) in \(days) days">\
            <title>Crashes per day and version</title>
            """
        svg += "<line class=\"axis\" x1=\"\(left)\" y1=\"\(topPad + plotHeight)\" x2=\"\(width - 4)\" y2=\"\(topPad + plotHeight)\"/>"
        svg += "<text x=\"\(left - 4)\" y=\"\(topPad + 10)\" text-anchor=\"end\">\(top)</text>"
        svg += "<text x=\"\(left - 4)\" y=\"\(topPad + plotHeight)\" text-anchor=\"end\">0</text>"
        for (index, row) in grid.enumerated() {
            let x = Double(left) + Double(index) * barSlot + (barSlot - barWidth) / 2
            var y = Double(topPad + plotHeight)
            let date = dayLabel(firstDay + Int64(index))
            for (column, value) in row.enumerated() where value > 0 {
                let h = Double(value) / Double(top) * Double(plotHeight)
                y -= h
                svg += String(format: "<rect class=\"s%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">", column, x, y, barWidth, h)
                svg += "<title>\(date) \(escape(series[column])): \(value)</title></rect>"
            }
            let labelStep = max(days / 7, 1)
            if (index % labelStep == 0 && days - 1 - index >= labelStep / 2 + 1) || index == days - 1 {
                svg += String(format: "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", x + barWidth / 2, height - 5)
                    + date.dropFirst(5) + "</text>"
            }
        }
        svg += "</svg>"
        if !series.isEmpty {
            svg += "<ul class=\"legend\">"
            for (column, name) in series.enumerated() {
                svg += "<li><svg width=\"10\" height=\"10\" aria-hidden=\"true\"><rect class=\"s\(column)\" width=\"10\" height=\"10\"/></svg>"
                svg += escape(name) + "</li>"
            }
            svg += "</ul>"
        }
        return svg
    }

    /// `YYYY-MM-DD` of a day number since 1970 (UTC).
    static func dayLabel(_ day: Int64) -> String {
        String(formatMilliseconds(day * 86_400_000).prefix(10))
    }
}
