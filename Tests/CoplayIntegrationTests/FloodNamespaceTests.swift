import CoplayHarness
import Foundation
import Testing

/// Honest traffic first: three agents in a namespace of their own, flooded with junk and hellos
/// of invented peers by `coplay-bench flood`, while one of them pauses and resumes every half
/// second. (1,500 datagrams a second, already more than a debug build of the agent handles: the
/// release benchmark, run by CI after the tests, floods with the 20,000 a second the README
/// gives figures for.)
@Suite(.serialized) struct FloodNamespaceTests {
    @Test(.enabled(if: isRoot, "needs root for a network namespace"))
    func underAFloodEveryHonestPauseArrives_andMemoryStaysBounded() throws {
        let bench = URL(fileURLWithPath: coplay).deletingLastPathComponent().appendingPathComponent("coplay-bench").path
        let (status, output) = try Locations.run(
            bench, ["flood", "--seconds", "6", "--rate", "1500", "--coplay", coplay])
        print(output)
        #expect(status == 0, "\(output.suffix(1500))")
        let pauses = try #require(output.split(separator: "\n").first { $0.contains("honest pause") })
        #expect(pauses.hasSuffix("not arrived within 2 s: 0"), "every honest pause reached both other agents")
        #expect(!pauses.contains("(n=0)"))
        let sent = try #require(output.split(separator: "\n").first { $0.contains("flood-sender:") })
        #expect(Int(sent.split(separator: " ")[1]) ?? 0 >= 7_500, "the flood really ran: \(sent)")
        // Each agent's memory under the flood, against idle: "(×1.10)".
        let ratios = output.split(separator: "\n").compactMap { line -> Double? in
            guard let start = line.range(of: "(×"), let end = line[start.upperBound...].firstIndex(of: ")") else {
                return nil
            }
            return Double(line[start.upperBound..<end])
        }
        #expect(ratios.count == 3)
        #expect(ratios.allSatisfy { $0 <= 2 }, "resident memory within 2× idle: \(ratios)")
    }
}
