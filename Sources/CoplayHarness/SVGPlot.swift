import Foundation

/// Benchmark figures as plain SVG text (no packages, no scripts, no fonts beyond the viewer's
/// sans-serif): a line chart of series against time or a count, and the cumulative distribution
/// of samples. Axes get round tick values; a logarithmic axis spans decades. Values that are not
/// finite (or not positive, on a log axis) are left out.
public enum SVGPlot {
    public struct Series: Sendable {
        public var name: String
        public var points: [(x: Double, y: Double)]
        public init(name: String, points: [(x: Double, y: Double)]) {
            self.name = name
            self.points = points
        }
    }

    /// Colours for up to six series (the Okabe–Ito palette, readable by colour-blind readers).
    static let colours = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]
    static let (width, height) = (720.0, 400.0)
    static let (left, right, top, bottom) = (72.0, 24.0, 44.0, 56.0)

    /// Each series as a line (with a dot per point when there are few).
    public static func lines(
        title: String, xLabel: String, yLabel: String, series: [Series], logY: Bool = false, logX: Bool = false
    ) -> String {
        let usable = series.map { entry in
            Series(
                name: entry.name,
                points: entry.points.filter {
                    $0.x.isFinite && $0.y.isFinite && (!logY || $0.y > 0) && (!logX || $0.x > 0)
                })
        }
        let xs = usable.flatMap { $0.points.map(\.x) }
        let ys = usable.flatMap { $0.points.map(\.y) }
        let xAxis = Axis(values: xs, log: logX, from: logX ? nil : 0)
        let yAxis = Axis(values: ys, log: logY, from: logY ? nil : 0)
        var body = frame(title: title, xLabel: xLabel, yLabel: yLabel, xAxis: xAxis, yAxis: yAxis)
        for (index, entry) in usable.enumerated() where !entry.points.isEmpty {
            let colour = colours[index % colours.count]
            let path = entry.points.map {
                "\(format(xAxis.position($0.x, plotLeft: left, plotRight: width - right))),\(format(yAxis.position($0.y, plotBottom: height - bottom, plotTop: top, inverted: true)))"
            }
            body +=
                "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.5\" points=\"\(path.joined(separator: " "))\"/>\n"
            if entry.points.count <= 24 {
                for point in path {
                    let parts = point.split(separator: ",")
                    body += "<circle cx=\"\(parts[0])\" cy=\"\(parts[1])\" r=\"3\" fill=\"\(colour)\"/>\n"
                }
            }
        }
        body += legend(usable.map(\.name))
        return document(body)
    }

    /// The cumulative distribution of each sample set: the share of samples at or below x.
    public static func distribution(
        title: String, xLabel: String, samples: [(name: String, values: [Double])], logX: Bool
    )
        -> String
    {
        let series = samples.map { entry -> Series in
            let sorted = entry.values.filter { $0.isFinite && (!logX || $0 > 0) }.sorted()
            let count = Double(sorted.count)
            var points: [(x: Double, y: Double)] = []
            for (index, value) in sorted.enumerated() {
                points.append((value, Double(index) / count * 100))
                points.append((value, Double(index + 1) / count * 100))
            }
            return Series(name: "\(entry.name) (n=\(sorted.count))", points: points)
        }
        return lines(title: title, xLabel: xLabel, yLabel: "% of samples at or below", series: series, logX: logX)
    }

    /// An axis: its range and round tick values.
    struct Axis {
        var low: Double
        var high: Double
        var log: Bool
        var ticks: [Double]

        init(values: [Double], log: Bool, from minimum: Double?) {
            self.log = log
            var low = values.min() ?? 0
            var high = values.max() ?? 1
            if let minimum { low = Swift.min(low, minimum) }
            if log {
                if values.isEmpty || low <= 0 || !low.isFinite || !high.isFinite { (low, high) = (1, 10) }
                low = pow(10, floor(log10(low)))
                high = pow(10, ceil(log10(high)))
                if high <= low { high = low * 10 }
                var ticks: [Double] = []
                var tick = low
                while tick <= high * 1.000_001 {
                    ticks.append(tick)
                    tick *= 10
                }
                self.ticks = ticks
            } else {
                if high <= low { high = low + 1 }
                let step = Axis.niceStep((high - low) / 5)
                low = (low / step).rounded(.down) * step
                high = (high / step).rounded(.up) * step
                self.ticks = stride(from: low, through: high + step / 2, by: step).map { $0 }
            }
            self.low = low
            self.high = high
        }

        /// 1, 2 or 5 times a power of ten, at least `raw`.
        static func niceStep(_ raw: Double) -> Double {
            let power = pow(10, floor(log10(raw)))
            for factor in [1.0, 2, 5, 10] where power * factor >= raw { return power * factor }
            return power * 10
        }

        func fraction(_ value: Double) -> Double {
            if log { return (log10(value) - log10(low)) / (log10(high) - log10(low)) }
            return (value - low) / (high - low)
        }

        func position(_ value: Double, plotLeft: Double, plotRight: Double) -> Double {
            plotLeft + fraction(value) * (plotRight - plotLeft)
        }

        func position(_ value: Double, plotBottom: Double, plotTop: Double, inverted: Bool) -> Double {
            plotBottom - fraction(value) * (plotBottom - plotTop)
        }
    }

    private static func frame(title: String, xLabel: String, yLabel: String, xAxis: Axis, yAxis: Axis) -> String {
        let (plotLeft, plotRight, plotTop, plotBottom) = (left, width - right, top, height - bottom)
        var body = "<rect width=\"\(format(width))\" height=\"\(format(height))\" fill=\"white\"/>\n"
        body += text(title, x: width / 2, y: 24, anchor: "middle", size: 16, weight: "bold")
        for tick in yAxis.ticks {
            let y = yAxis.position(tick, plotBottom: plotBottom, plotTop: plotTop, inverted: true)
            body +=
                "<line x1=\"\(format(plotLeft))\" y1=\"\(format(y))\" x2=\"\(format(plotRight))\" y2=\"\(format(y))\" stroke=\"#ddd\"/>\n"
            body += text(label(tick), x: plotLeft - 6, y: y + 4, anchor: "end", size: 11)
        }
        for tick in xAxis.ticks {
            let x = xAxis.position(tick, plotLeft: plotLeft, plotRight: plotRight)
            body +=
                "<line x1=\"\(format(x))\" y1=\"\(format(plotTop))\" x2=\"\(format(x))\" y2=\"\(format(plotBottom))\" stroke=\"#eee\"/>\n"
            body += text(label(tick), x: x, y: plotBottom + 16, anchor: "middle", size: 11)
        }
        body +=
            "<rect x=\"\(format(plotLeft))\" y=\"\(format(plotTop))\" width=\"\(format(plotRight - plotLeft))\" height=\"\(format(plotBottom - plotTop))\" fill=\"none\" stroke=\"#444\"/>\n"
        body += text(xLabel, x: (plotLeft + plotRight) / 2, y: height - 14, anchor: "middle", size: 12)
        body +=
            "<text transform=\"translate(18 \(format((plotTop + plotBottom) / 2))) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">\(escaped(yLabel))</text>\n"
        return body
    }

    private static func legend(_ names: [String]) -> String {
        var body = ""
        for (index, name) in names.enumerated() {
            let y = top + 16 + Double(index) * 18
            let x = left + 14
            body +=
                "<rect x=\"\(format(x))\" y=\"\(format(y - 9))\" width=\"14\" height=\"4\" fill=\"\(colours[index % colours.count])\"/>\n"
            body += text(name, x: x + 20, y: y - 3, anchor: "start", size: 12)
        }
        return body
    }

    private static func document(_ body: String) -> String {
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(format(width))\" height=\"\(format(height))\" viewBox=\"0 0 \(format(width)) \(format(height))\" font-family=\"sans-serif\">\n"
            + body + "</svg>\n"
    }

    private static func text(
        _ content: String, x: Double, y: Double, anchor: String, size: Int, weight: String = "normal"
    ) -> String {
        "<text x=\"\(format(x))\" y=\"\(format(y))\" text-anchor=\"\(anchor)\" font-size=\"\(size)\" font-weight=\"\(weight)\">\(escaped(content))</text>\n"
    }

    static func escaped(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
            .replacing("\"", with: "&quot;")
    }

    /// A coordinate with at most two decimals.
    static func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    /// A tick label: as few digits as the value needs (0.001, 0.5, 20, 1000).
    static func label(_ value: Double) -> String {
        let value = (value * 1e6).rounded() / 1e6  // 0.30000000000000004 → 0.3
        if value == value.rounded(), abs(value) < 1e9 { return String(Int(value)) }
        var text = String(value)
        if text.contains("e") { return text }
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }
}
