/// Percentiles of measured samples (nearest rank), for benchmark reports.
public struct Distribution: Sendable {
    public private(set) var sorted: [Double]
    public init(_ values: [Double]) { sorted = values.sorted() }

    public var count: Int { sorted.count }
    public func percentile(_ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((Double(sorted.count) * fraction).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
    }
    public var maximum: Double { sorted.last ?? .nan }
    /// How many samples are above `threshold`.
    public func count(above threshold: Double) -> Int {
        sorted.count - (sorted.lastIndex { $0 <= threshold }.map { $0 + 1 } ?? 0)
    }

    /// "p95 12.3 ms; above 20 ms: 6 of 120 (5.0%)": the tail, where a pause on the air met a
    /// frame held by retries (20 ms and more, in the link model).
    public func tail(above threshold: Double, unit: String) -> String {
        let above = count(above: threshold)
        let share = count == 0 ? 0 : Double(above) * 100 / Double(count)
        let p95 = percentile(0.95)
        return
            "p95 \(p95.isFinite ? String((p95 * 1000).rounded() / 1000) : "-") \(unit); above \(Int(threshold)) \(unit): "
            + "\(above) of \(count) (\(String((share * 10).rounded() / 10))%)"
    }

    /// "p50 1.23 p99 4.56 max 7.89 (n=100)" in the given unit.
    public func summary(unit: String, decimals: Int = 3) -> String {
        func format(_ value: Double) -> String {
            guard value.isFinite else { return "-" }
            var scale = 1.0
            for _ in 0..<decimals { scale *= 10 }
            let rounded = (value * scale).rounded() / scale
            return String(rounded)
        }
        return
            "p50 \(format(percentile(0.5))) \(unit), p99 \(format(percentile(0.99))) \(unit), max \(format(maximum)) \(unit) (n=\(count))"
    }
}
