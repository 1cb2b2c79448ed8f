import CoplayCore

/// Coordinated starts on a lossy network: 3 agents share an item; then, round after round, one
/// of them presses play (a coordinated start: everyone prepares, says ready, and the start is
/// decided) and later pause. Measured for each start is how long after the press the last of the
/// three is playing — what a user waits for under loss (the readiness and start datagrams lost
/// and repaired, the ready repeated).
public enum StartUnderLoss {
    /// The start delays in seconds (nil: not all three playing within 5 s) of `rounds` starts.
    public static func run(seed: UInt64, loss: Double, rounds: Int) -> [Double?] {
        var simulation = Simulation(
            seed: seed,
            clocks: (0..<3).map { SimulatedClock(offsetNanos: Int64($0) * 40_000_000, driftPPM: Double($0) * 10) },
            conditions: NetworkConditions(lossProbability: loss, baseDelay: .microseconds(200)))
        for node in 0..<3 { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
        simulation.schedule(
            .command(node: 0, .share(Activity(url: "u", itemID: "movie"), durationSeconds: 1e6, bufferSeconds: 0.1)),
            at: 300_000_000)
        simulation.run(until: 3_000_000_000)
        var delays: [Double?] = []
        for round in 0..<rounds {
            let pressedAt = simulation.nowNanos
            let marks = (0..<3).map { simulation.nodes[$0].events.count }
            simulation.schedule(.command(node: round % 3, .play(rate: 1)), after: .zero)
            var allPlaying: Int64?
            let deadline = pressedAt + 5_000_000_000
            while simulation.nowNanos < deadline, allPlaying == nil {
                // A livelock (the event budget spent) counts as starts that never came.
                guard simulation.run(for: .milliseconds(10)) else {
                    return delays + Array(repeating: nil, count: rounds - delays.count)
                }
                // When each player starts moving: the start's instant (its `playing` event may come
                // before it, with the start a lead ahead), else the event.
                let firsts = (0..<3).map { node -> Int64? in
                    guard
                        let event = simulation.nodes[node].events[marks[node]...].first(where: {
                            if case .playing = $0.event { true } else { false }
                        })
                    else { return nil }
                    guard case .moving(_, _, let at)? = simulation.nodes[node].instance?.player.state else {
                        return event.atNanos
                    }
                    let localNow = simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos).wall
                    return max(event.atNanos, simulation.nowNanos + (at.unixNanos - localNow.unixNanos))
                }
                if firsts.allSatisfy({ $0 != nil }) { allPlaying = firsts.compactMap { $0 }.max() }
            }
            delays.append(allPlaying.map { Double($0 - pressedAt) / 1e9 })
            simulation.schedule(.command(node: (round + 1) % 3, .pause), after: .zero)
            guard simulation.run(for: .milliseconds(1500)) else {
                return delays + Array(repeating: nil, count: rounds - delays.count)
            }
        }
        return delays
    }
}
