import CoplayCore
import CoplaySimulation
import Testing

/// A party with an audience (`AudienceSettings`) through the simulated NATS cluster: a small
/// stage runs the protocol, viewers follow it at a cost that does not grow with the party.
@Suite struct AudienceSimulationTests {
    /// A stage of 4 and 40 viewers at 3 sites 20 ms apart: every viewer follows a speaker, the
    /// stage sees only itself, a viewer's idle cost stays under 300 B/s each way, the speaker's
    /// crash is noticed within 2 s and costs nobody their time, and a pause after it reaches
    /// everyone within two relay hops.
    @Test func aStageOfFour_andFortyViewers_followAPause_atAViewersCost() {
        let figures = PartyScale.run(participants: 44, sites: 3, idleSeconds: 3, seed: 7, stage: 4)
        #expect(!figures.eventBudgetRanOut)
        #expect(figures.formedSeconds != nil, "every viewer follows a speaker, the stage sees itself whole")
        // The speaker crashed first: the stage gave it up within 2 s, and the players kept their time.
        #expect(
            figures.crashNoticed.count == 3 && figures.crashNoticed.allSatisfy { $0 < 2_000 }, "\(figures.crashNoticed)"
        )
        #expect(
            (figures.syncAfterCrash.last ?? .infinity) < 10, "after the crash: \(figures.syncAfterCrash.last ?? -1) ms")
        #expect(figures.pauseLost == 0 && figures.pause.count == 42)
        #expect((figures.pause.last ?? .infinity) < 100, "pause → last paused: \(figures.pause.last ?? -1) ms")
        let viewerIn = figures.viewerBytesIn?.mean ?? .infinity
        let viewerOut = figures.viewerBytesOut?.mean ?? .infinity
        #expect(viewerIn < 300 && viewerOut < 300, "a viewer: \(viewerIn) B/s in, \(viewerOut) B/s out")
        #expect((figures.syncErrors.last ?? .infinity) < 10, "sync: \(figures.syncErrors.last ?? -1) ms")
    }

    /// Stage 0-2, viewers 3-8, one site. The speaker (the first to join) counts every
    /// viewer and no viewer is anyone's peer; a viewer's pause is carried to all; no viewer sends
    /// `ready`; then the speaker crashes, the viewers follow the next one, and a stage member's
    /// pause still reaches every viewer.
    @Test func viewersFollowTheSpeaker_driveTheGroup_andOutliveItsCrash() throws {
        var simulation = party(stage: 3, viewers: 6, seed: 11, clockStepNanos: 17_000_000)
        runWithoutLivelock(&simulation, for: .seconds(4))
        func view(_ node: Int) -> Set<PeerID> { Set(simulation.view(of: node).map(\.id)) }
        func ids(_ nodes: [Int]) -> Set<PeerID> { Set(nodes.map { simulation.nodes[$0].id }) }
        for node in 0..<3 {
            #expect(view(node) == ids((0..<3).filter { $0 != node }), "stage \(node) sees the stage")
        }
        // The speaker: the stage member that joined first (by incarnation, then id).
        let speaker = try #require((0..<3).first { view(3) == ids([$0]) }, "viewer 3 follows a stage member")
        for node in 3..<9 {
            #expect(simulation.nodes[node].instance?.isViewer == true)
            #expect(view(node) == ids([speaker]), "viewer \(node) follows the speaker alone")
        }
        #expect(simulation.nodes[speaker].instance?.viewersCounted == 6)
        // The speaker alone hears the viewers' hellos (their subject), not the whole stage.
        func hearsHellos(_ node: Int) -> Bool {
            simulation.nodes[node].instance?.relaySubscriptions.contains { $0.hasSuffix(".speaker") } ?? false
        }
        #expect((0..<9).filter(hearsHellos) == [speaker])

        simulation.schedule(
            .command(node: 1, .share(Activity(url: "u", itemID: "film"), durationSeconds: 3_600, bufferSeconds: 0)),
            after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(1))
        simulation.schedule(.command(node: 1, .play(rate: 1)), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(3))
        for node in 0..<9 {
            let playing = simulation.nodes[node].events.contains { if case .playing = $0.event { true } else { false } }
            #expect(playing, "node \(node) started with the stage")
        }
        for node in 3..<9 {
            #expect(
                simulation.nodes[node].instance?.counters.builtByType[.ready] == nil, "viewer \(node) sent no ready")
        }

        func pauses(after pressed: Int64) -> [Int] {
            (0..<9).filter { node in
                simulation.nodes[node].events.contains {
                    if case .paused = $0.event { $0.atNanos >= pressed } else { false }
                }
            }
        }
        var pressed = simulation.nowNanos
        simulation.schedule(.command(node: 5, .pause), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(1))
        #expect(pauses(after: pressed) == Array(0..<9), "a viewer's pause reaches the stage and every viewer")

        // A stage member that does not speak sends its command to the stage alone, and the speaker
        // carries it on: each viewer opens it once. Nor does a viewer answer commands with
        // heartbeats (its anchor only counts it): a new item, a seek and a pause in a second cost it
        // at most the one heartbeat its interval (2 s) brings.
        let other = (0..<3).first { $0 != speaker }!
        func count(_ node: Int, _ counter: KeyPath<Counters, Int64>) -> Int64 {
            simulation.nodes[node].instance?.counters[keyPath: counter] ?? -1
        }
        func heartbeats(_ node: Int) -> Int64 { simulation.nodes[node].instance?.counters.builtByType[.heartbeat] ?? 0 }
        func commands(_ node: Int) -> Int64 { simulation.nodes[node].instance?.counters.receivedByType[.command] ?? 0 }
        let commandsBefore = (3..<9).map(commands)
        let heartbeatsBefore = (3..<9).map(heartbeats)
        let sequel = ConsoleCommand.share(
            Activity(url: "v", itemID: "sequel"), durationSeconds: 3_600, bufferSeconds: 0)
        let deliveredBefore = count(speaker, \.commandsDelivered)
        for command in [sequel, .seek(seconds: 30), .pause] {
            simulation.schedule(.command(node: other, command), after: .zero)
            runWithoutLivelock(&simulation, for: .milliseconds(300))
        }
        let delivered = count(speaker, \.commandsDelivered) - deliveredBefore
        #expect(delivered >= 3)
        #expect(
            zip((3..<9).map(commands), commandsBefore).map { $0 - $1 } == Array(repeating: delivered, count: 6),
            "each viewer received each of the \(delivered) commands the speaker delivered once")
        for (index, node) in (3..<9).enumerated() {
            #expect(heartbeats(node) - heartbeatsBefore[index] <= 1, "viewer \(node) answered commands with heartbeats")
        }

        // Idle, a viewer has nothing to tell its anchor (the commands' digest told once): it sends
        // no heartbeat, and its clock probes keep it counted, past three times `viewerExpiry`.
        runWithoutLivelock(&simulation, for: .seconds(3))
        let idleFrom = (3..<9).map(heartbeats)
        runWithoutLivelock(&simulation, for: .seconds(50))
        #expect((3..<9).map(heartbeats) == idleFrom, "idle viewers heartbeat")
        #expect(simulation.nodes[speaker].instance?.viewersCounted == 6, "counted by their probes")
        // Everyone knows how many watch: the stage from the speaker's summary, each viewer from
        // its anchor's.
        func watching(_ nodes: [Int]) -> [Int?] { nodes.map { simulation.nodes[$0].instance?.watching } }
        #expect(watching(Array(0..<9)) == Array(repeating: 6, count: 9), "\(watching(Array(0..<9)))")
        runWithoutLivelock(&simulation, for: .seconds(2))
        simulation.schedule(.crash(node: speaker), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(6))
        let next = try #require((0..<3).first { $0 != speaker && view(3) == ids([$0]) }, "viewer 3 follows another")
        for node in 3..<9 { #expect(view(node) == ids([next]), "viewer \(node) follows the next speaker") }
        #expect(simulation.nodes[next].instance?.viewersCounted == 6)
        #expect((0..<9).filter { $0 != speaker }.filter(hearsHellos) == [next], "the next speaker hears the hellos")
        let presser = (0..<3).first { $0 != speaker && $0 != next }!
        pressed = simulation.nowNanos
        simulation.schedule(.command(node: presser, .pause), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(1))
        #expect(
            pauses(after: pressed) == (0..<9).filter { $0 != speaker },
            "after the crash a pause from a stage member that does not speak still reaches every viewer")
        // The next speaker's count replaces the crashed one's (no longer a member): six still.
        runWithoutLivelock(&simulation, for: .seconds(6))
        let alive = (0..<9).filter { $0 != speaker }
        #expect(watching(alive) == Array(repeating: 6, count: 8), "after the crash: \(watching(alive))")
    }

    /// A viewer with nothing to wake it but its own heartbeat (its clock probes rare) ticks only
    /// every 2 s: those ticks must not read as a stall of its own, or each forgives its anchor's
    /// silence and a crashed anchor is never let go.
    @Test func aViewerThatWakesOnlyToHeartbeat_stillLetsACrashedAnchorGo() throws {
        var rarelyProbing = Settings()
        rarelyProbing.audience.viewerProbeInterval = .seconds(60)
        rarelyProbing.audience.viewerProbeWarmupCount = 0
        var simulation = party(stage: 2, viewers: 3, seed: 5, clockStepNanos: 11_000_000, viewer: rarelyProbing)
        runWithoutLivelock(&simulation, for: .seconds(8))
        func view(_ node: Int) -> Set<PeerID> { Set(simulation.view(of: node).map(\.id)) }
        let speaker = try #require((0..<2).first { view(2) == [simulation.nodes[$0].id] }, "viewer 2 follows one")
        simulation.schedule(.crash(node: speaker), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(6))
        let next = simulation.nodes[1 - speaker].id
        for node in 2..<5 { #expect(view(node) == [next], "viewer \(node) let the crashed anchor go") }
    }

    /// Stage members `0..<stage`, then viewers (`viewer`, made a viewer), each alone on its
    /// network but for one relay server, their clocks `clockStepNanos` apart, started 50 ms apart.
    /// By default (`Role.firstCome`) the first to join take the stage's seats and the rest watch.
    /// Ten join within 300 ms with no stage, where the stage has 5 seats: one seats itself when
    /// it hears no stage, its grants fill the other seats (never more), and the other five follow
    /// it as viewers, each asking at every heartbeat. A named viewer never takes a seat; a named
    /// stage member joins the full stage; and when a seated member leaves, a waiting viewer takes
    /// its seat.
    @Test func theFirstToJoin_takeTheSeats_andTheRestWatch() throws {
        let count = 12
        var simulation = Simulation(
            seed: 5, clocks: (0..<count).map { SimulatedClock(offsetNanos: Int64($0) * 3_000_000, driftPPM: 10) })
        simulation.relay = NatsModel(siteOfServer: [0], seed: 5)
        var settings = Settings()
        settings.audience.stageSeats = 5
        for node in 0..<count {
            var own = settings
            own.audience.role = node == 10 ? .viewer : node == 11 ? .stage : .firstCome
            simulation.settingsOfNode[node] = own
        }
        simulation.schedule(.partition((0..<count).map { [$0] }), at: 0)
        for node in 0..<10 { simulation.schedule(.start(node: node), at: 1_000_000 + Int64(node) * 30_000_000) }
        simulation.schedule(.start(node: 10), at: 1_000_000_000)
        simulation.schedule(.start(node: 11), at: 6_000_000_000)
        runWithoutLivelock(&simulation, for: .seconds(9))
        func view(_ node: Int) -> Set<PeerID> { Set(simulation.view(of: node).map(\.id)) }
        func id(_ node: Int) -> PeerID { simulation.nodes[node].id }
        let seated = (0..<10).filter { simulation.nodes[$0].instance?.isViewer == false }
        #expect(seated.count == 5, "the seats taken: \(seated)")
        let stage = seated + [11]
        #expect(simulation.nodes[11].instance?.isViewer == false, "a named stage member joins a full stage")
        for node in stage {
            #expect(view(node) == Set(stage.filter { $0 != node }.map(id)), "stage member \(node) sees the stage")
        }
        let viewers = (0..<11).filter { !stage.contains($0) }
        #expect(viewers.count == 6 && viewers.contains(10))
        let speaker = try #require(stage.first { view(viewers[0]) == [id($0)] }, "a viewer follows a stage member")
        for node in viewers {
            #expect(simulation.nodes[node].instance?.isViewer == true)
            #expect(view(node) == [id(speaker)], "viewer \(node) follows the speaker")
        }
        // One seated itself (nobody was on the stage); the speakers granted the others' seats (the
        // speaker may change as the seated join: the one that joined the session first speaks).
        let counters = (0..<10).compactMap { simulation.nodes[$0].instance?.counters }
        let (alone, granted) = (
            counters.reduce(0) { $0 + $1.seatsTakenAlone }, counters.reduce(0) { $0 + $1.seatsGranted }
        )
        #expect(alone >= 1 && alone + granted >= 5, "seated alone \(alone), granted \(granted)")
        #expect(simulation.nodes[speaker].instance?.viewersCounted == 6)

        // Two seated members that do not speak leave: the stage (the named member counts) has one
        // seat free, and one viewer that asks takes it, no more.
        let leaving = seated.filter { $0 != speaker }.prefix(2)
        for node in leaving { simulation.schedule(.command(node: node, .quit), after: .zero) }
        runWithoutLivelock(&simulation, for: .seconds(6))
        let nowSeated = (0..<10).filter { !leaving.contains($0) && simulation.nodes[$0].instance?.isViewer == false }
        #expect(nowSeated.count == 4, "a viewer took the seat that came free: \(nowSeated)")
        for node in nowSeated + [11] {
            #expect(view(node).count == 4, "stage member \(node) sees the stage of 5")
        }
        #expect(simulation.nodes[10].instance?.isViewer == true, "the named viewer never asks")
    }

    private func party(stage: Int, viewers: Int, seed: UInt64, clockStepNanos: Int64, viewer: Settings = Settings())
        -> Simulation
    {
        let count = stage + viewers
        var simulation = Simulation(
            seed: seed,
            clocks: (0..<count).map { SimulatedClock(offsetNanos: Int64($0) * clockStepNanos, driftPPM: 10) })
        simulation.relay = NatsModel(siteOfServer: [0], seed: seed)
        var viewer = viewer
        viewer.audience.role = .viewer
        for node in stage..<count { simulation.settingsOfNode[node] = viewer }
        simulation.schedule(.partition((0..<count).map { [$0] }), at: 0)
        for node in 0..<count { simulation.schedule(.start(node: node), at: 1_000_000 + Int64(node) * 50_000_000) }
        return simulation
    }
}
