import CoplayCore
import CoplaySimulation
import Testing

/// Interstitials on whole agents: a group one at a main-item time, one played now, one for a
/// single participant with and without the others' waiting for it, and a late joiner.
@Suite struct InterstitialTests {
    static let clocks: [Int64] = [0, 250_000_000, -120_000_000]

    private func position(_ simulation: Simulation, _ node: Int) -> Double {
        let instance = simulation.nodes[node].instance!
        return instance.player.position(at: simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos))
    }

    private func reports(_ simulation: Simulation, _ node: Int, _ phase: InterstitialReport.Phase) -> [(
        atNanos: Int64, report: InterstitialReport
    )] {
        simulation.nodes[node].events.compactMap { entry in
            guard case .interstitial(let report) = entry.event, report.phase == phase else { return nil }
            return (entry.atNanos, report)
        }
    }

    private func status(_ simulation: inout Simulation, _ node: Int) -> StatusReport {
        simulation.nodes[node].instance!.statusReport(
            now: simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos))
    }

    private func interstitial(at: Double?, forAll: Bool = true, duration: Double = 2) -> ConsoleCommand {
        .interstitial(url: "https://example.com/ad.mp4", durationSeconds: duration, at: at, forAll: forAll)
    }

    /// A group interstitial at 5 s: every agent stops its main player at 5 s at one instant and
    /// plays the ad; one hold is sent (by the smallest id); the main item waits at 5 s until all
    /// have finished; then the group resumes together from 5 s.
    @Test func aGroupInterstitial_playsEverywhere_andTheGroupResumesTogether() throws {
        var simulation = agentsSharingAnItem(seed: 3, clockOffsetsNanos: Self.clocks)
        simulation.schedule(.command(node: 1, interstitial(at: 5)), at: 1_500_000_000)
        // The item started at 0.7 s: it reaches 5 s at 5.7 s.
        runWithoutLivelock(&simulation, until: 6_500_000_000)
        for node in 0..<3 {
            #expect(reports(simulation, node, .scheduled).count == 1, "node \(node)")
            let began = try #require(reports(simulation, node, .began).first, "node \(node) began the ad")
            #expect(abs(began.atNanos - 5_700_000_000) < 5_000_000, "node \(node) began at \(began.atNanos)")
            #expect(began.report.position == 5 && began.report.forAll)
            #expect(abs(position(simulation, node) - 5) < 0.001, "node \(node): the main item waits at 5 s")
            #expect(status(&simulation, node).interstitial == began.report.interstitial.id)
        }
        // One hold, at once, from the agent of smallest id (the others' turns never came).
        let smallest = simulation.nodes.map(\.id).min()!
        for node in 0..<3 {
            let holds = simulation.nodes[node].events.compactMap { entry -> PlaybackReport? in
                guard case .waiting(let report) = entry.event, report.reason == "interstitial" else { return nil }
                return report
            }
            #expect(holds.count == 1, "node \(node): \(holds.count) holds")
            #expect(holds.first?.originator.member.id == smallest)
            #expect(holds.first.map { abs($0.position - 5) < 1e-9 } == true)
        }
        runWithoutLivelock(&simulation, until: 10_000_000_000)
        for node in 0..<3 {
            let ended = try #require(reports(simulation, node, .ended).first, "node \(node) ended the ad")
            #expect(ended.report.cutShort == nil)
            let resumed = try #require(
                simulation.nodes[node].events.last {
                    if case .playing = $0.event { return true }
                    return false
                })
            #expect(resumed.atNanos > ended.atNanos, "node \(node) resumed after its ad")
            guard case .playing(let report) = resumed.event else { continue }
            #expect(abs(report.position - 5) < 0.001, "node \(node) resumed from 5 s, not \(report.position)")
        }
        let positions = (0..<3).map { position(simulation, $0) }
        #expect(positions.max()! - positions.min()! < 0.001, "one position: \(positions)")
        // 5 s, a 2 s ad, the start's lead: at 10 s the item is at about 5 + (10 - 7.7).
        #expect(abs(positions[0] - 7.3) < 0.2, "\(positions[0])")
        // No one played past 5 s during the ad (the main player waited, it did not skip).
        #expect(simulation.nodes.allSatisfy { $0.instance!.player.rate == 1 })
    }

    /// `interstitial … for=all` with no `at=`, the group paused: it plays now everywhere and the
    /// group stays paused where it was.
    @Test func aGroupInterstitialNow_whilePaused_leavesTheGroupPaused() throws {
        var simulation = agentsSharingAnItem(seed: 4, clockOffsetsNanos: Self.clocks, playing: false)
        simulation.schedule(.command(node: 2, .seek(seconds: 30)), at: 1_100_000_000)
        simulation.schedule(.command(node: 2, interstitial(at: nil, duration: 1)), at: 1_500_000_000)
        runWithoutLivelock(&simulation, until: 2_000_000_000)
        for node in 0..<3 {
            #expect(reports(simulation, node, .began).count == 1, "node \(node)")
            #expect(status(&simulation, node).interstitial != nil)
        }
        runWithoutLivelock(&simulation, until: 4_000_000_000)
        for node in 0..<3 {
            #expect(reports(simulation, node, .ended).count == 1, "node \(node)")
            #expect(simulation.nodes[node].instance!.player.rate == 0)
            #expect(abs(position(simulation, node) - 30) < 0.001)
            #expect(status(&simulation, node).interstitial == nil)
        }
    }

    /// One participant's own interstitial, the others not waiting for it: it runs under a
    /// `playingInterstitial` suspension; the others play on; afterwards it is back on the group's
    /// timeline (it jumped ahead to catch up).
    @Test func aParticipantsOwnInterstitial_theOthersGoOn_andItCatchesUp() throws {
        var simulation = agentsSharingAnItem(seed: 5, clockOffsetsNanos: Self.clocks)
        simulation.schedule(.command(node: 0, interstitial(at: nil, forAll: false)), at: 2_000_000_000)
        runWithoutLivelock(&simulation, until: 3_000_000_000)
        #expect(status(&simulation, 0).suspensions == [Suspension.playingInterstitial])
        #expect(simulation.nodes[0].instance!.player.rate == 0)
        for node in 1..<3 {
            #expect(reports(simulation, node, .began).isEmpty)
            #expect(simulation.nodes[node].instance!.player.rate == 1, "node \(node) plays on")
            #expect(abs(position(simulation, node) - 2.3) < 0.01)
        }
        runWithoutLivelock(&simulation, until: 6_000_000_000)
        #expect(status(&simulation, 0).suspensions.isEmpty)
        let positions = (0..<3).map { position(simulation, $0) }
        #expect(positions.max()! - positions.min()! < 0.001, "back in step: \(positions)")
        #expect(abs(positions[0] - 5.3) < 0.01)
    }

    /// The same, the others waiting for `playingInterstitial` (as `--wait-for`): they hold where
    /// they are while it plays, and the group resumes together once it is back.
    @Test func aParticipantsOwnInterstitial_theOthersWaitForIt_whenTheirPolicySaysSo() throws {
        var waiting = Settings()
        waiting.suspensionReasonsThatTriggerWaiting = [Suspension.playingInterstitial]
        var simulation = agentsSharingAnItem(seed: 6, clockOffsetsNanos: Self.clocks, settings: waiting)
        simulation.schedule(.command(node: 2, interstitial(at: 3, forAll: false)), at: 1_500_000_000)
        runWithoutLivelock(&simulation, until: 4_500_000_000)
        // Node 2 reached 3 s at 3.7 s; the others held within milliseconds of it.
        #expect(status(&simulation, 2).suspensions == [Suspension.playingInterstitial])
        for node in 0..<2 {
            #expect(simulation.nodes[node].instance!.player.rate == 0, "node \(node) waits")
            #expect(abs(position(simulation, node) - 3) < 0.05, "node \(node) at \(position(simulation, node))")
        }
        runWithoutLivelock(&simulation, until: 7_000_000_000)
        let positions = (0..<3).map { position(simulation, $0) }
        #expect(positions.max()! - positions.min()! < 0.001, "together again: \(positions)")
        // Resumed about when the ad ended (5.7 s), from where they held: 3 s and a bit.
        #expect(abs(positions[0] - (3 + 7 - 5.7)) < 0.1, "\(positions[0])")
        #expect(simulation.nodes.allSatisfy { $0.instance!.player.rate == 1 })
    }

    /// An agent that joins after the interstitial was scheduled gets it with the group's state,
    /// and plays it with the others.
    @Test func aLateJoiner_getsTheScheduleWithTheState() throws {
        var simulation = Simulation(seed: 7, clocks: Self.clocks.map { SimulatedClock(offsetNanos: $0) })
        for node in 0..<2 { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
        simulation.schedule(
            .command(node: 0, .share(Activity(url: "u", itemID: "movie"), durationSeconds: nil, bufferSeconds: 0)),
            at: 500_000_000)
        simulation.schedule(.command(node: 0, interstitial(at: 6)), at: 600_000_000)
        simulation.schedule(.command(node: 0, .playNow(rate: 1)), at: 700_000_000)
        simulation.schedule(.start(node: 2), at: 3_000_000_000)
        runWithoutLivelock(&simulation, until: 7_500_000_000)
        for node in 0..<3 {
            let began = try #require(reports(simulation, node, .began).first, "node \(node) began the ad")
            #expect(abs(began.atNanos - 6_700_000_000) < 5_000_000, "node \(node) at \(began.atNanos)")
        }
    }

    /// The command's errors: no item, at= past the end, a full schedule.
    @Test func theCommandsErrors() {
        var simulation = Simulation(seed: 8, clocks: [SimulatedClock(offsetNanos: 0)])
        simulation.schedule(.start(node: 0), at: 0)
        simulation.schedule(.command(node: 0, interstitial(at: 5)), at: 100_000_000)
        simulation.schedule(
            .command(node: 0, .share(Activity(url: "u", itemID: "m"), durationSeconds: 60, bufferSeconds: 0)),
            at: 200_000_000)
        simulation.schedule(.command(node: 0, interstitial(at: 61)), at: 300_000_000)
        for index in 0..<17 {
            simulation.schedule(.command(node: 0, interstitial(at: Double(index))), at: 400_000_000 + Int64(index))
        }
        runWithoutLivelock(&simulation, until: 600_000_000)
        let errors = simulation.nodes[0].events.compactMap { entry -> String? in
            if case .commandError(let error) = entry.event { return error.message }
            return nil
        }
        #expect(errors.count == 3, "\(errors)")
        #expect(errors[0].contains("no item is loaded"))
        #expect(errors[1].contains("past the item's end"))
        #expect(errors[2].contains("16 interstitials are scheduled"))
    }
}
