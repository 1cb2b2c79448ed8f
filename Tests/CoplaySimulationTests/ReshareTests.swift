import CoplayCore
import CoplaySimulation
import Testing

/// An item the group leaves stops where it was left: shared again, it resumes there, paused (or
/// at 0:00 once it had ended), never at a position that ran on while nobody watched, and never
/// past its duration. Two agents on a perfect network, clocks 300 ms apart.
@Suite struct ReshareTests {
    func twoAgents() -> Simulation {
        var simulation = Simulation(
            seed: 7, clocks: [SimulatedClock(offsetNanos: 0), SimulatedClock(offsetNanos: 300_000_000, driftPPM: 20)])
        simulation.schedule(.start(node: 0), at: 0)
        simulation.schedule(.start(node: 1), at: 10_000_000)
        simulation.run(until: 1_000_000_000)
        return simulation
    }

    func share(_ simulation: inout Simulation, _ id: String, duration: Double, from node: Int, after: Duration = .zero)
    {
        simulation.schedule(
            .command(
                node: node,
                .share(
                    Activity(url: "https://example.com/\(id).webm", itemID: id), durationSeconds: duration,
                    bufferSeconds: 0)),
            after: after)
    }

    func state(_ simulation: Simulation, _ node: Int) -> (item: String?, rate: Double, position: Double) {
        let instance = simulation.nodes[node].instance!
        let now = simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos)
        return (instance.player.item?.id, instance.player.rate, instance.player.position(at: now))
    }

    /// The newcomer's steps, on two agents: share `a`, play, share `b`, wait, share `a` again.
    func leaveAndComeBack(duration: Double, played: Duration, away: Duration) -> Simulation {
        var simulation = twoAgents()
        share(&simulation, "a", duration: duration, from: 0)
        runWithoutLivelock(&simulation, for: .milliseconds(300))
        simulation.schedule(.command(node: 0, .play(rate: 1)), after: .zero)
        runWithoutLivelock(&simulation, for: played)
        share(&simulation, "b", duration: 100, from: 1)
        runWithoutLivelock(&simulation, for: away)
        share(&simulation, "a", duration: duration, from: 0)
        runWithoutLivelock(&simulation, for: .seconds(1))
        return simulation
    }

    @Test func anItemSharedAgain_resumesPausedWhereTheGroupLeftIt() {
        let simulation = leaveAndComeBack(duration: 60, played: .seconds(3), away: .seconds(6))
        for node in 0..<2 {
            let now = state(simulation, node)
            #expect(now.item == "a" && now.rate == 0, "node \(node): \(now)")
            // Played about 3 s (less the coordinated start's lead), not 3 + 6 s.
            #expect(now.position > 2 && now.position < 3.2, "node \(node) resumed at \(now.position)")
        }
        #expect(abs(state(simulation, 0).position - state(simulation, 1).position) < 0.000_5, "the agents agree")
        let ended = simulation.nodes[1].events.contains {
            if case .paused(let report) = $0.event { report.reason == "ended" } else { false }
        }
        #expect(!ended, "no one ran it to its end while away")
    }

    @Test func anItemThatHadEndedWhenLeft_startsAgainFromTheStart() {
        let simulation = leaveAndComeBack(duration: 2, played: .seconds(4), away: .seconds(2))
        for node in 0..<2 {
            let now = state(simulation, node)
            #expect(now.item == "a" && now.rate == 0 && now.position == 0, "node \(node): \(now)")
        }
    }

    @Test func twoAgentsSharingItAgainAtOnce_endInOneState() {
        var simulation = twoAgents()
        share(&simulation, "a", duration: 60, from: 0)
        runWithoutLivelock(&simulation, for: .milliseconds(300))
        simulation.schedule(.command(node: 0, .play(rate: 1)), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(2))
        share(&simulation, "b", duration: 100, from: 1)
        runWithoutLivelock(&simulation, for: .seconds(5))
        share(&simulation, "a", duration: 60, from: 0)
        share(&simulation, "a", duration: 60, from: 1)
        runWithoutLivelock(&simulation, for: .seconds(1))
        let (first, second) = (state(simulation, 0), state(simulation, 1))
        #expect(first.item == "a" && second.item == "a" && first.rate == 0 && second.rate == 0)
        #expect(abs(first.position - second.position) < 0.000_5, "\(first) against \(second)")
        #expect(first.position > 1 && first.position < 2.2, "resumed at \(first.position), not run on")
    }
}
