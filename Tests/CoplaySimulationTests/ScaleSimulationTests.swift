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
