import CoplayCore
import CoplaySimulation
import Foundation
import Testing

@Suite struct ScaleSimulationTests {
    /// 24 agents (`COPLAY_AGENTS`, to replay a soak seed of 64 to 256) start within half a second
    /// on a lossy LAN; one is starved of CPU throughout, one is paused for 10 s. The group forms
    /// within 3 s, idle traffic per agent stays bounded, the wake-up causes no storm, the woken
    /// agent declares nobody gone, and all converge. (`coplay-bench soak` runs 64 to 256 agents
    /// in release; in this debug build 64 take half a minute.)
    @Test func aLargeGroup_withStarvedAndPausedAgents_formsStaysQuietAndConverges() {
        let agents = ProcessInfo.processInfo.environment["COPLAY_AGENTS"].flatMap { Int($0) } ?? 24
        let seed = ScenarioRunner.seeds(count: 1, salt: ScenarioRunner.scaleSalt)[0]
        let outcome = ScaleScenario(seed: seed, agents: agents).run()
        print("scale simulation: \(outcome.summary)")
        #expect(
            outcome.failures.isEmpty,
            "\(outcome.failures.prefix(5).joined(separator: "; ")) [\(outcome.summary)] — reproduce with COPLAY_SEED=\(outcome.seed) COPLAY_AGENTS=\(agents) swift test --filter ScaleSimulationTests"
        )
    }
}

@Suite struct StarvedAgentTests {
    /// Heartbeats built by a starved agent (200 ms an input) among 8 over 10 s, from 10 s in,
    /// when its receive buffer (64 datagrams here: 12.8 s of reading) has long been full, and
    /// whether it overflowed meanwhile; with `turn` as its `receiveTurnDurationMax`.
    func starvedAgentsHeartbeats(turn: Duration) -> (heartbeats: Int, overflowed: Bool) {
        var simulation = Simulation(
            seed: 7, clocks: (0..<8).map { SimulatedClock(offsetNanos: Int64($0) * 1_000_000) },
            conditions: NetworkConditions(baseDelay: .microseconds(200), jitterMean: .microseconds(50)))
        simulation.receiveBufferDatagrams = 64
        var settings = simulation.settings
        settings.receiveTurnDurationMax = turn
        // Its full buffer loses the others' heartbeats, which would make it ask for unicast
        // copies, in an announcement of its own: only its timers' heartbeats are counted here.
        settings.multicastPathSamplesMin = .max
        simulation.settingsOfNode[0] = settings
        simulation.schedule(.starve(node: 0, perInput: .milliseconds(200)), at: 0)
        for node in 0..<8 { simulation.schedule(.start(node: node), at: Int64(node) * 2_000_000) }
        runWithoutLivelock(&simulation, for: .seconds(10))
        let before = simulation.nodes[0].instance?.counters.builtByType[.heartbeat] ?? 0
        let dropsBefore = simulation.nodes[0].receiveBufferDrops
        runWithoutLivelock(&simulation, for: .seconds(10))
        return (
            Int((simulation.nodes[0].instance?.counters.builtByType[.heartbeat] ?? 0) - before),
            simulation.nodes[0].receiveBufferDrops > dropsBefore
        )
    }

    /// Its timers fire between turns of reading bounded by `receiveTurnDurationMax`, so its
    /// heartbeats still go out about as often as anyone's (every 500 ms among 8); when they
    /// waited for each turn of the whole buffer to be read, they went out once in 12.8 s. (Among
    /// 256 in simulation, agents whose hellos such an agent's full buffer had dropped learned of
    /// it only from those heartbeats: 3.25–3.5 s after the start.)
    @Test func aStarvedAgentBehindAFullBuffer_stillHeartbeatsOnTime() {
        let bounded = starvedAgentsHeartbeats(turn: Settings().receiveTurnDurationMax)
        #expect(bounded.overflowed, "the starved agent's buffer overflows")
        #expect(bounded.heartbeats >= 8, "\(bounded.heartbeats) heartbeats in 10 s")
        let unbounded = starvedAgentsHeartbeats(turn: .seconds(1_000))
        #expect(unbounded.overflowed)
        #expect(unbounded.heartbeats <= 1, "\(unbounded.heartbeats) heartbeats in 10 s, turns bounded by count alone")
    }
}
