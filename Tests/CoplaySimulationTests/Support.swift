import CoplaySimulation
import Testing

/// Runs the simulation on for `duration` and fails the test if the event budget ran out (a livelock).
func runWithoutLivelock(
    _ simulation: inout Simulation, for duration: Duration, sourceLocation: SourceLocation = #_sourceLocation
) {
    let ran = simulation.run(for: duration)
    #expect(ran, "the simulation ran out of its event budget: a livelock", sourceLocation: sourceLocation)
}
