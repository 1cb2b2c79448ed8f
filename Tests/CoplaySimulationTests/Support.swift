import CoplayCore
import CoplaySimulation
import Testing

/// Runs the simulation on for `duration` and fails the test if the event budget ran out (a livelock).
func runWithoutLivelock(
    _ simulation: inout Simulation, for duration: Duration, sourceLocation: SourceLocation = #_sourceLocation
) {
    let ran = simulation.run(for: duration)
    #expect(ran, "the simulation ran out of its event budget: a livelock", sourceLocation: sourceLocation)
}

/// Agents that joined at 0, 10, 20 ms …; node 0 shares "movie" at 500 ms and, when `playing`,
/// plays it at once at 700 ms; the simulation has run to 1 s.
func agentsSharingAnItem(
    seed: UInt64, clockOffsetsNanos: [Int64], settings: Settings = Settings(), settingsOfNode: [Int: Settings] = [:],
    conditions: NetworkConditions = .perfect, duration: Double? = nil, playing: Bool = true
) -> Simulation {
    var simulation = Simulation(
        seed: seed, clocks: clockOffsetsNanos.map { SimulatedClock(offsetNanos: $0) }, settings: settings,
        conditions: conditions)
    simulation.settingsOfNode = settingsOfNode
    for node in clockOffsetsNanos.indices { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
    simulation.schedule(
        .command(node: 0, .share(Activity(url: "u", itemID: "movie"), durationSeconds: duration, bufferSeconds: 0)),
        at: 500_000_000)
    if playing { simulation.schedule(.command(node: 0, .playNow(rate: 1)), at: 700_000_000) }
    simulation.run(until: 1_000_000_000)
    return simulation
}

/// Runs the simulation up to true time `end` and fails the test if the event budget ran out.
func runWithoutLivelock(
    _ simulation: inout Simulation, until end: Int64, sourceLocation: SourceLocation = #_sourceLocation
) {
    let ran = simulation.run(until: end)
    #expect(ran, "the simulation ran out of its event budget: a livelock", sourceLocation: sourceLocation)
}
