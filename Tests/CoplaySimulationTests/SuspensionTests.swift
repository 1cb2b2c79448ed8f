import CoplayCore
import CoplaySimulation
import Testing

/// The suspension rules (PROTOCOL.md, "Playback coordination"), each on a small deterministic simulation.
@Suite struct SuspensionTests {
    func playing(_ settings: Settings = Settings()) -> Simulation {
        agentsSharingAnItem(seed: 5, clockOffsetsNanos: [0, 150_000_000], settings: settings)
    }

    func instance(_ simulation: Simulation, _ node: Int) -> Instance { simulation.nodes[node].instance! }
    func position(_ simulation: Simulation, _ node: Int) -> Double {
        instance(simulation, node).player.position(
            at: simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos))
    }
    func act(
        _ simulation: inout Simulation, _ node: Int, _ command: ConsoleCommand,
        then duration: Duration = .milliseconds(100)
    ) {
        simulation.schedule(.command(node: node, command), after: .zero)
        runWithoutLivelock(&simulation, for: duration)
    }
    func suspensionIDs(_ simulation: Simulation, _ node: Int) -> [UInt32] {
        instance(simulation, node).suspensions.map(\.id)
    }

    @Test func suspended_ignoresGroupCommands_thenResumeSnapsToTheGroupsTimeAndRate() {
        var simulation = playing()
        act(&simulation, 1, .suspend(reason: "userActionRequired"))
        act(&simulation, 0, .pause, then: .seconds(1))
        #expect(instance(simulation, 1).player.rate == 1, "the group's pause is not applied while suspended")
        #expect(instance(simulation, 0).player.rate == 0)
        act(&simulation, 1, .resume(id: suspensionIDs(simulation, 1)[0], at: nil))
        #expect(instance(simulation, 1).player.rate == 0)
        #expect(abs(position(simulation, 1) - position(simulation, 0)) < 0.000_5)
    }

    @Test func suspended_localTransportCommands_moveOnlyTheLocalPlayer() {
        var simulation = playing()
        act(&simulation, 1, .suspend(reason: "my own reason"))
        act(&simulation, 1, .seek(seconds: 300))
        act(&simulation, 1, .pause)
        #expect(
            instance(simulation, 1).player.rate == 0 && abs(position(simulation, 1) - 300.1) < 0.01,
            "sought to 300, played 100 ms, paused")
        #expect(instance(simulation, 0).player.rate == 1 && position(simulation, 0) < 10, "the group is untouched")
    }

    @Test func severalSuspensions_rejoinOnlyWhenAllHaveEnded() {
        var simulation = playing()
        act(&simulation, 1, .suspend(reason: "audioSessionInterrupted"))
        act(&simulation, 1, .suspend(reason: "playingInterstitial"))
        act(&simulation, 1, .pause)
        let ids = suspensionIDs(simulation, 1)
        #expect(ids.count == 2)
        act(&simulation, 1, .resume(id: ids[0], at: nil))
        #expect(instance(simulation, 1).player.rate == 0, "one suspension remains: still apart")
        act(&simulation, 1, .resume(id: ids[1], at: nil))
        #expect(instance(simulation, 1).player.rate == 1)
        #expect(abs(position(simulation, 1) - position(simulation, 0)) < 0.000_5)
    }

    @Test func resumeAtATime_proposesItToTheGroup_rateUnchanged() {
        var simulation = playing()
        act(&simulation, 1, .suspend(reason: "userIsChangingCurrentTime"))
        act(&simulation, 1, .resume(id: suspensionIDs(simulation, 1)[0], at: 120), then: .seconds(1))
        for node in 0..<2 {
            #expect(instance(simulation, node).player.rate == 1)
            #expect(
                position(simulation, node) > 120 && position(simulation, node) < 121.5,
                "node\(node) at \(position(simulation, node))")
        }
    }

    @Test func proposalWhileAnotherSuspensionRemains_isSentWhenTheLastEnds_unlessTheGroupMovedOn() {
        var simulation = playing()
        act(&simulation, 1, .suspend(reason: "a"))
        act(&simulation, 1, .suspend(reason: "b"))
        let ids = suspensionIDs(simulation, 1)
        act(&simulation, 1, .resume(id: ids[0], at: 200), then: .seconds(1))
        #expect(position(simulation, 0) < 10, "held while b remains")
        act(&simulation, 1, .resume(id: ids[1], at: nil), then: .seconds(1))
        #expect(position(simulation, 0) > 200, "sent when the last ended")

        var overridden = playing()
        act(&overridden, 1, .suspend(reason: "a"))
        act(&overridden, 1, .suspend(reason: "b"))
        let more = suspensionIDs(overridden, 1)
        act(&overridden, 1, .resume(id: more[0], at: 200))
        act(&overridden, 0, .pause)  // a later group command
        act(&overridden, 1, .resume(id: more[1], at: nil), then: .seconds(1))
        #expect(position(overridden, 0) < 10 && instance(overridden, 0).player.rate == 0, "the proposal was dropped")
        #expect(abs(position(overridden, 1) - position(overridden, 0)) < 0.000_5, "and node 1 snapped to the group")
    }

    func proposals(_ simulation: Simulation, _ node: Int) -> [ProposalReport.Outcome] {
        simulation.nodes[node].events.compactMap {
            if case .proposal(let report) = $0.event { report.outcome } else { nil }
        }
    }

    @Test func aProposal_saysWhatBecameOfIt_heldThenSent_orSuperseded() {
        var simulation = playing()
        act(&simulation, 1, .suspend(reason: "a"))
        act(&simulation, 1, .suspend(reason: "b"))
        let ids = suspensionIDs(simulation, 1)
        act(&simulation, 1, .resume(id: ids[0], at: 200))
        #expect(proposals(simulation, 1) == [.held(suspensionsRemaining: 1)])
        act(&simulation, 1, .resume(id: ids[1], at: nil))
        #expect(proposals(simulation, 1) == [.held(suspensionsRemaining: 1), .sent])

        var overridden = playing()
        act(&overridden, 1, .suspend(reason: "a"))
        act(&overridden, 1, .suspend(reason: "b"))
        let more = suspensionIDs(overridden, 1)
        act(&overridden, 1, .resume(id: more[0], at: 200))
        act(&overridden, 0, .pause)
        act(&overridden, 1, .resume(id: more[1], at: nil))
        #expect(proposals(overridden, 1) == [.held(suspensionsRemaining: 1), .superseded(by: "a pause by node0")])

        var direct = playing()
        act(&direct, 1, .suspend(reason: "userIsChangingCurrentTime"))
        act(&direct, 1, .resume(id: suspensionIDs(direct, 1)[0], at: 50))
        #expect(proposals(direct, 1) == [.sent], "the last suspension: sent at once")
    }

    @Test func sharingTheCurrentActivityAgain_isANoticeNotAnError() {
        var simulation = playing()
        let errorsBefore = instance(simulation, 1).counters.commandErrors
        act(&simulation, 1, .share(Activity(url: "u", itemID: "movie"), durationSeconds: nil, bufferSeconds: 0))
        #expect(
            simulation.nodes[1].events.contains { $0.event == .activityUnchanged(Activity(url: "u", itemID: "movie")) })
        #expect(!simulation.nodes[1].events.contains { if case .commandError = $0.event { true } else { false } })
        #expect(instance(simulation, 1).counters.commandErrors == errorsBefore)
        #expect(instance(simulation, 1).log.count(of: instance(simulation, 1).member) == 0, "nothing was issued")
    }

    @Test func suspensionReasons_areSharedWithTheOthers() {
        var simulation = playing()
        act(&simulation, 1, .suspend(reason: "audioSessionInterrupted"))
        let peer = instance(simulation, 0).peers[simulation.nodes[1].id]
        #expect(peer?.suspensions == ["audioSessionInterrupted"])
        #expect(peer?.item == "movie")
        #expect(
            simulation.nodes[0].events.contains {
                if case .peerChanged(let info) = $0.event {
                    info.suspensions == ["audioSessionInterrupted"]
                } else {
                    false
                }
            })
    }

    @Test func waitingPolicy_aSuspensionForAListedReasonHoldsTheStart_otherwiseTheGroupStartsWithoutIt() {
        var policy = Settings()
        policy.suspensionReasonsThatTriggerWaiting = ["audioSessionInterrupted"]
        for (settings, holds) in [(Settings(), false), (policy, true)] {
            var simulation = playing(settings)
            act(&simulation, 0, .pause)
            act(&simulation, 1, .suspend(reason: "audioSessionInterrupted"))
            act(&simulation, 0, .play(rate: 1), then: .seconds(5))  // past the 3 s deadline
            #expect((instance(simulation, 0).player.rate == 0) == holds, "holds=\(holds)")
            if holds {
                act(&simulation, 1, .resume(id: suspensionIDs(simulation, 1)[0], at: nil), then: .seconds(1))
                #expect(instance(simulation, 0).player.rate == 1 && instance(simulation, 1).player.rate == 1)
                #expect(abs(position(simulation, 1) - position(simulation, 0)) < 0.000_5)
            }
        }
    }

    /// Three agents with different policies: only A waits out `userActionRequired`. C suspends for
    /// it. Whether A or B presses play (C, suspended, would move only its own player), A's policy
    /// holds the start until C resumes: the outcome does not depend on the originator.
    @Test func waitingPolicy_holdsTheStartWhoeverPressesPlay() {
        for presser in 0..<2 {
            var policyA = Settings()
            policyA.suspensionReasonsThatTriggerWaiting = ["userActionRequired"]
            var simulation = agentsSharingAnItem(
                seed: 8, clockOffsetsNanos: [0, 70_000_000, 140_000_000], settingsOfNode: [0: policyA], playing: false)
            runWithoutLivelock(&simulation, for: .seconds(1))
            act(&simulation, 2, .suspend(reason: "userActionRequired"))
            #expect(
                instance(simulation, 1).peers[simulation.nodes[0].id]?.waitsOutSuspensions == true,
                "A announces that its policy waits out C")
            act(&simulation, presser, .play(rate: 1), then: .seconds(5))  // past the 3 s deadline
            for node in 0..<2 {
                #expect(simulation.nodes[node].player.rate == 0, "presser \(presser): node\(node) held")
            }
            act(&simulation, 2, .resume(id: suspensionIDs(simulation, 2)[0], at: nil), then: .seconds(1))
            for node in 0..<3 {
                #expect(simulation.nodes[node].player.rate == 1, "presser \(presser): node\(node) started")
            }
        }
    }

    @Test func whatHappened_endsAtTheGroupsRate_evenWhileAnotherSuspensionRemains() {
        var simulation = playing()
        runWithoutLivelock(&simulation, for: .seconds(20))
        act(&simulation, 1, .whatHappened(seconds: 4))
        act(&simulation, 1, .suspend(reason: "userActionRequired"))
        #expect(simulation.nodes[1].player.rate == 2, "catching up at twice the group's rate")
        runWithoutLivelock(&simulation, for: .seconds(6))
        #expect(instance(simulation, 1).suspensions.map(\.reason) == ["userActionRequired"], "the catch-up ended")
        #expect(simulation.nodes[1].player.rate == 1, "at the group's rate, not left at 2x")
    }

    @Test func whatHappened_rewindsPlaysTwiceAsFast_andRejoinsWhenCaughtUp() {
        var simulation = playing()
        runWithoutLivelock(&simulation, for: .seconds(20))
        act(&simulation, 1, .whatHappened(seconds: 6), then: .seconds(1))
        #expect(instance(simulation, 1).player.rate == 2)
        #expect(instance(simulation, 1).suspensions.map(\.reason) == ["whatHappened"])
        runWithoutLivelock(&simulation, for: .seconds(6))
        #expect(instance(simulation, 1).suspensions.isEmpty, "caught up after about 6 s at 2x")
        #expect(instance(simulation, 1).player.rate == 1)
        #expect(abs(position(simulation, 1) - position(simulation, 0)) < 0.000_5)
    }
}
