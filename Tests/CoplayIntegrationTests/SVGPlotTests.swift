import CoplayHarness
import Foundation
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The benchmark plots are well-formed SVG whatever the figures: each series drawn and named,
/// round ticks, log axes by decades, and nothing drawn for values a log axis cannot show.
@Suite struct SVGPlotTests {
    /// Parses `svg` as XML; the elements by name.
    private func elements(_ svg: String) throws -> [String: Int] {
        final class Counter: NSObject, XMLParserDelegate {
            var counts: [String: Int] = [:]
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) { counts[name, default: 0] += 1 }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let counter = Counter()
        parser.delegate = counter
        #expect(parser.parse(), "well-formed XML: \(parser.parserError.map { "\($0)" } ?? "")")
        return counter.counts
    }

    @Test func aLineChartOfTwoSeries_onALogAxis() throws {
        var steady: [(x: Double, y: Double)] = []
        for step in 0..<50 { steady.append((x: Double(step) / 10, y: 0.2 + Double(step % 5) / 10)) }
        let other: [(x: Double, y: Double)] = [(0, 120), (2, 80), (4, 0), (5, .nan)]
        let series = [SVGPlot.Series(name: "coplay", points: steady), SVGPlot.Series(name: "Syncplay", points: other)]
        let svg = SVGPlot.lines(
            title: "sync <error> & more", xLabel: "seconds", yLabel: "ms", series: series, logY: true)
        let counts = try elements(svg)
        #expect(counts["svg"] == 1 && counts["polyline"] == 2)
        #expect(svg.contains("sync &lt;error&gt; &amp; more") && svg.contains(">coplay<") && svg.contains(">Syncplay<"))
        for decade in ["0.1", "1", "10", "100", "1000"] { #expect(svg.contains(">\(decade)</text>"), "\(decade)") }
        #expect(counts["circle"] == 2, "dots only for the short series, without its 0 and NaN")
    }

    @Test func aDistribution_andEmptyOrDegenerateInput() throws {
        let svg = SVGPlot.distribution(
            title: "pause", xLabel: "ms", samples: [("a", [0.3, 0.5, 0.5, 2]), ("b", [])], logX: true)
        #expect(try elements(svg)["polyline"] == 1)
        #expect(svg.contains(">a (n=4)<") && svg.contains(">b (n=0)<") && svg.contains(">100</text>"))
        for degenerate in [[Double](), [5, 5, 5], [-1, 0], [.infinity]] {
            let points: [(x: Double, y: Double)] = degenerate.map { (x: 1, y: $0) }
            let plot = SVGPlot.lines(
                title: "t", xLabel: "x", yLabel: "y", series: [SVGPlot.Series(name: "s", points: points)], logY: true)
            _ = try elements(plot)
            #expect(!plot.contains("nan") && !plot.contains("inf"), "\(degenerate)")
        }
    }
}
