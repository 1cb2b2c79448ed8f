import Foundation
import Glibc

extension Benchmarks {
    /// A late joiner against the length of the group's history: two resident agents on loopback
    /// build a history of H commands (a share, then play-now and pause in turn, ending paused),
    /// then a third agent joins; measured is the time from its join until its own status shows
    /// the group's state (the item, paused at the group's position), and what it took: commands
    /// delivered, nacks sent. Every wait is bounded: a joiner that does not catch up is reported.
    static func lateJoin(_ options: Options, common: [String], histories: [Int]) throws {
        print("late join: 2 resident agents with a history of H commands, then a third joins (loopback)")
        var points: [(x: Double, y: Double)] = []
        for (index, history) in histories.enumerated() {
            let session = common + ["--session", "latejoin-\(getpid())-\(index)"]
            let alice = try start(options, name: "alice", session)
            let bob = try start(options, name: "bob", session)
            defer {
                for agent in [alice, bob] { agent.closeInput() }
                for agent in [alice, bob] { _ = agent.waitForExit(timeout: .seconds(3)) }
            }
            guard bob.waitForEvent(timeout: .seconds(10), where: { $0.name == "peer-joined" }) != nil else {
                throw BenchError(description: "the residents did not find each other")
            }
            alice.send("share https://example.com/late.mp4 id=late duration=1000000")
            usleep(300_000)
            let issueStart = ContinuousClock.now
            // The share, then play-now and pause in turn, the last a pause: H commands in all.
            for command in 1..<history { alice.send((history - 1 - command) % 2 == 0 ? "pause" : "play-now") }
            // Commands delivered one by one, or stood for by an adopted snapshot.
            func delivered(_ agent: AgentProcess) -> Int {
                let counters = agent.status(timeout: .seconds(5))?["counters"] as? [String: Any]
                return ["commandsDelivered", "commandsCoveredByState"].map {
                    (counters?[$0] as? NSNumber)?.intValue ?? 0
                }.reduce(0, +)
            }
            let issued = history
            while delivered(alice) < issued || delivered(bob) < issued,
                ContinuousClock.now - issueStart < .seconds(120)
            {
                usleep(200_000)
            }
            let built = ContinuousClock.now - issueStart
            guard let groupStatus = alice.status(timeout: .seconds(30)),
                let position = (groupStatus["position"] as? NSNumber)?.doubleValue,
                delivered(alice) >= issued, delivered(bob) >= issued
            else {
                print(
                    "  H=\(issued): the history could not be built in 120 s (alice delivered \(delivered(alice)), bob \(delivered(bob))): no join measured"
                )
                continue
            }
            let bobDelivered = delivered(bob)

            let carol = try start(options, name: "carol", session)
            defer {
                carol.closeInput()
                _ = carol.waitForExit(timeout: .seconds(3))
            }
            let joined = try Benchmarks.joined(carol)
            var caughtUp: Int64?
            let deadline = ContinuousClock.now + .seconds(25)
            while ContinuousClock.now < deadline {
                if let status = carol.status(), status["item"] as? String == "late",
                    (status["rate"] as? NSNumber)?.doubleValue == 0,
                    let at = (status["position"] as? NSNumber)?.doubleValue, abs(at - position) < 0.001
                {
                    caughtUp = (status["sampledAtUnixNanos"] as? NSNumber)?.int64Value
                    break
                }
                usleep(20_000)
            }
            let last = carol.status()
            let counters = last?["counters"] as? [String: Any] ?? [:]
            if caughtUp == nil {
                print(
                    "    the group: item late, paused at \(position); carol: item \(last?["item"] ?? "-"), rate \(last?["rate"] ?? "-"), position \(last?["position"] ?? "-")"
                )
            }
            let time = caughtUp.map { millis(joined.atUnixNanos, $0) }
            print(
                "  H=\(issued) (built in \(String(format: "%.1f", Double(built.components.seconds) + Double(built.components.attoseconds) / 1e18)) s, bob delivered \(bobDelivered)): "
                    + (time.map { String(format: "on the group's state %.1f ms after joining", $0) }
                        ?? "NOT on the group's state 25 s after joining")
                    + "; it delivered \(counters["commandsDelivered"] ?? 0) commands and adopted \(counters["statesAdopted"] ?? 0) snapshots standing for \(counters["commandsCoveredByState"] ?? 0), sent \(counters["nacksSent"] ?? 0) nacks and \(counters["stateRequestsSent"] ?? 0) state requests"
            )
            if let time { points.append((Double(issued), time)) }
        }
        try writePlot(
            "late-join.svg", options,
            SVGPlot.lines(
                title: "A late joiner on the group's state, against the history's length",
                xLabel: "commands in the group's history (log)",
                yLabel: "ms after joining (log; missing: not within 25 s)",
                series: [SVGPlot.Series(name: "coplay", points: points)], logY: true, logX: true))
    }
}
