import CoplayCore
import Foundation

/// A party whose participants reach each other only through a NATS cluster (browser tabs, or
/// agents in different homes), in the seeded simulation: what a group of N costs the cluster and
/// each participant while idle, and how fast a pause reaches everyone. `coplay-bench
/// party-scale` prints it for several N, so that a change in the group's shape shows as a
/// ratio in one run.
public enum PartyScale {
    public struct Figures: Sendable {
        public var participants: Int
        public var sites: Int
        /// The stage's size in the new shape (the rest are viewers), nil for today's shape (every
        /// participant a peer of every other).
        public var stage: Int?
        /// From the first start until every participant follows: today's shape, every one sees
        /// every other; with a stage, every stage member sees the stage and every viewer follows a
        /// speaker (nil: not within the cap).
        public var formedSeconds: Double?
        /// While idle (playing, nobody pressing anything): copies the cluster delivers a second,
        /// the whole group; and bytes a second each participant receives and publishes, on average.
        public var idleDeliveriesPerSecond: Double
        public var idleBytesInPerParticipant: Double
        public var idleBytesOutPerParticipant: Double
        /// With a stage: bytes a second each viewer receives and publishes while idle, the mean and
        /// the most any one viewer did; and each stage member's mean (the speaker's share included).
        public var viewerBytesIn: (mean: Double, max: Double)?
        public var viewerBytesOut: (mean: Double, max: Double)?
        public var stageBytesIn: Double?
        public var stageBytesOut: Double?
        /// With a stage, at the idle window's end: how many watch as each participant knows it
        /// (the stage's summaries, `AudienceSummary`), least and most, how many knew nothing
        /// yet, and the viewers there are.
        public var watching: (least: Int, most: Int, unknown: Int, viewers: Int)?
        /// A pause pressed on participant 0 → each other participant paused, ms; and how many
        /// never paused within 3 s.
        public var pause: [Double]
        public var pauseLost: Int
        /// Just before the pause: each player's position against participant 0's at one true
        /// instant, ms, absolute (the sync the group holds while idle).
        public var syncErrors: [Double]
        /// With a stage: its speaker crashed while the group played; ms until each other stage
        /// member gave it up (infinity: not within 4 s), and each player's position against a
        /// surviving stage member's 4 s after, ms. The pause above then comes after the crash,
        /// from participant 0 (or 1, when 0 was the speaker), and reaches the survivors.
        public var crashNoticed: [Double]
        public var syncAfterCrash: [Double]
        /// While idle: datagrams received a second, the whole group, by type ("heartbeat": 1234).
        public var idleReceivedByType: [(type: String, perSecond: Double)]
        /// The simulation ran out of its event budget somewhere (a livelock, or a group too large
        /// for it): the figures are then not to be trusted.
        public var eventBudgetRanOut: Bool
        /// How long the simulation itself took, seconds of this machine.
        public var simulatedIn: Double
    }

    /// `participants` at `sites` sites (1 to 3, 20 ms apart), one NATS server at each,
    /// participant i on server i mod sites; no LAN between any two. With `stage` nil, all of them
    /// are peers of each other (2 to 256: the group's peer table's bound); with a stage, the first
    /// `stage` are the stage and the rest viewers (`AudienceSettings`). They start over one
    /// second (the stage first, then the audience over the next); once all follow (at most
    /// `formCap` of simulated time), participant 0 shares and plays, and after 5 s of settling
    /// the group idles for `idleSeconds`, then participant 0 pauses.
    public static func run(
        participants: Int, sites: Int, idleSeconds: Int, seed: UInt64, stage: Int? = nil, formCap: Int = 60
    ) -> Figures {
        let started = Date()
        var random = SplitMix64(seed: seed ^ 0x9A27_5CA1E)
        var simulation = cluster(participants: participants, sites: sites, seed: seed, random: &random)
        let stageCount = min(stage ?? participants, participants)
        var (onStage, viewer) = (Settings(), Settings())
        (onStage.audience.role, viewer.audience.role) = (.stage, .viewer)
        for node in 0..<participants { simulation.settingsOfNode[node] = node < stageCount ? onStage : viewer }
        simulation.schedule(.partition((0..<participants).map { [$0] }), at: 0)
        for node in 0..<participants {
            let second: Int64 = node < stageCount ? 0 : 1_000_000_000
            simulation.schedule(.start(node: node), at: 1_000_000 + second + Int64(random.next() % 1_000_000_000))
        }
        let eventsMax = 50_000_000
        var ranOut = false
        func advance(to end: Int64) {
            if !simulation.run(until: end, eventsMax: eventsMax) { ranOut = true }
        }
        func follows(_ node: Int) -> Bool {
            let view = simulation.view(of: node).count
            return node < stageCount ? view == stageCount - 1 : view >= 1
        }
        var formed: Double?
        for step in 1...(formCap * 4) {
            advance(to: Int64(step) * 250_000_000)
            if (0..<participants).allSatisfy(follows) {
                formed = Double(step) / 4
                break
            }
        }
        simulation.schedule(
            .command(node: 0, .share(Activity(url: "u", itemID: "party"), durationSeconds: 7_200, bufferSeconds: 0)),
            after: .zero)
        advance(to: simulation.nowNanos + 1_000_000_000)
        simulation.schedule(.command(node: 0, .playNow(rate: 1)), after: .zero)
        advance(to: simulation.nowNanos + 5_000_000_000)

        func received(_ simulation: Simulation) -> [MessageType: Int64] {
            simulation.nodes.reduce(into: [:]) { total, node in
                for (type, count) in node.instance?.counters.receivedByType ?? [:] { total[type, default: 0] += count }
            }
        }
        let before = simulation.relay!
        let receivedBefore = received(simulation)
        advance(to: simulation.nowNanos + Int64(idleSeconds) * 1_000_000_000)
        let after = simulation.relay!
        let receivedAfter = received(simulation)
        let seconds = Double(idleSeconds)
        let count = Double(participants)

        let reference = simulation.nodes[0]
        let referencePosition = reference.player.position(at: reference.clock.timestamp(atTrue: simulation.nowNanos))
        let syncErrors = simulation.nodes.dropFirst().map { node in
            abs(node.player.position(at: node.clock.timestamp(atTrue: simulation.nowNanos)) - referencePosition) * 1000
        }.sorted()

        func perSecond(_ nodes: Range<Int>, _ table: KeyPath<NatsModel, [Int: Int]>) -> (mean: Double, max: Double)? {
            guard !nodes.isEmpty else { return nil }
            let rates = nodes.map {
                Double((after[keyPath: table][$0] ?? 0) - (before[keyPath: table][$0] ?? 0)) / seconds
            }
            return (rates.reduce(0, +) / Double(rates.count), rates.max() ?? 0)
        }
        let viewers = stageCount..<participants
        let counts = simulation.nodes.map { $0.instance?.watching }
        let known = counts.compactMap { $0 }
        let watching =
            stage == nil
            ? nil
            : (known.min() ?? 0, known.max() ?? 0, counts.count - known.count, viewers.count)
        // With a stage: its speaker crashes while the group plays. How long until each other stage
        // member gives it up, and where every player is 4 s later (the audience keeps its time).
        var crashNoticed: [Double] = []
        var syncAfterCrash: [Double] = []
        var crashed: Int?
        if stage != nil,
            let speaker = (0..<stageCount).first(where: { simulation.nodes[$0].instance?.speaksForStage == true })
        {
            crashed = speaker
            let (crashedID, crashedAt) = (simulation.nodes[speaker].id, simulation.nowNanos)
            simulation.schedule(.crash(node: speaker), after: .zero)
            advance(to: crashedAt + 4_000_000_000)
            for node in 0..<stageCount where node != speaker {
                let left = simulation.nodes[node].events.first {
                    if case .peerLeft(let info, _) = $0.event {
                        info.member.id == crashedID && $0.atNanos >= crashedAt
                    } else {
                        false
                    }
                }
                crashNoticed.append(left.map { Double($0.atNanos - crashedAt) / 1e6 } ?? .infinity)
            }
            let reference = simulation.nodes[speaker == 0 ? 1 : 0]
            let position = reference.player.position(at: reference.clock.timestamp(atTrue: simulation.nowNanos))
            syncAfterCrash = simulation.nodes.indices.filter { $0 != speaker && $0 != reference.index }.map { index in
                let node = simulation.nodes[index]
                return abs(node.player.position(at: node.clock.timestamp(atTrue: simulation.nowNanos)) - position)
                    * 1000
            }.sorted()
        }
        // The pause: on participant 0, or on 1 when 0 was the speaker that crashed.
        let presser = crashed == 0 ? 1 : 0
        let pressed = simulation.nowNanos
        simulation.schedule(.command(node: presser, .pause), after: .zero)
        advance(to: pressed + 3_000_000_000)
        var delays: [Double] = []
        var lost = 0
        for node in 0..<participants where node != presser && node != crashed {
            let paused = simulation.nodes[node].events.first {
                if case .paused = $0.event { $0.atNanos >= pressed } else { false }
            }
            if let paused { delays.append(Double(paused.atNanos - pressed) / 1e6) } else { lost += 1 }
        }
        return Figures(
            participants: participants, sites: sites, stage: stage, formedSeconds: formed,
            idleDeliveriesPerSecond: Double(after.deliveries - before.deliveries) / seconds,
            idleBytesInPerParticipant: Double(after.bytesDelivered - before.bytesDelivered) / seconds / count,
            idleBytesOutPerParticipant: Double(after.bytesPublished - before.bytesPublished) / seconds / count,
            viewerBytesIn: perSecond(viewers, \.bytesDeliveredTo),
            viewerBytesOut: perSecond(viewers, \.bytesPublishedBy),
            stageBytesIn: stage == nil ? nil : perSecond(0..<stageCount, \.bytesDeliveredTo)?.mean,
            stageBytesOut: stage == nil ? nil : perSecond(0..<stageCount, \.bytesPublishedBy)?.mean,
            watching: watching, pause: delays.sorted(), pauseLost: lost, syncErrors: syncErrors,
            crashNoticed: crashNoticed.sorted(),
            syncAfterCrash: syncAfterCrash,
            idleReceivedByType: receivedAfter.map { type, count in
                (type.description, Double(count - (receivedBefore[type] ?? 0)) / seconds)
            }.filter { $0.perSecond > 0 }.sorted { $0.perSecond > $1.perSecond },
            eventBudgetRanOut: ranOut, simulatedIn: Date().timeIntervalSince(started))
    }

    /// `participants` with clocks up to 50 ms off and 20 ppm apart, on a NATS cluster with a
    /// server at each of `sites`.
    private static func cluster(participants: Int, sites: Int, seed: UInt64, random: inout SplitMix64) -> Simulation {
        let clocks = (0..<participants).map { _ in
            SimulatedClock(
                offsetNanos: Int64(random.next() % 100_000_000) - 50_000_000,
                driftPPM: Double(Int64(random.next() % 41) - 20))
        }
        var simulation = Simulation(seed: seed, clocks: clocks)
        simulation.relay = NatsModel(siteOfServer: Array(0..<sites), seed: seed)
        return simulation
    }

    /// The default of the command line and the page (`AudienceSettings.Role.firstCome`), at size:
    /// what the stage's seats come to when a party joins at once.
    public struct SeatFigures: Sendable {
        public var participants: Int
        /// Until the stage's seats are taken, its members see each other whole and every viewer
        /// follows a speaker (nil: not within a minute).
        public var formedSeconds: Double?
        /// The stage's size when formed (a named host among them, with `host`), and the most it
        /// ever held (sampled every 250 ms): never past the seats, but for viewers that seated
        /// themselves at once when they heard no stage.
        public var seated: Int
        public var seatedMost: Int
        /// Viewers that took a seat of their own (heard no stage in time), and seats the speakers
        /// granted.
        public var seatedThemselves: Int
        public var granted: Int
        /// Then a pause on a seated participant that is not the speaker → each other paused, ms,
        /// and how many never did within 3 s.
        public var pause: [Double]
        public var pauseLost: Int
        public var eventBudgetRanOut: Bool
        public var simulatedIn: Double
    }

    /// `participants` at `sites` sites, started over one second as `run`'s audience is, every one
    /// asking for a seat (`Role.firstCome`, `stageSeats` 32); with `host`, participant 0 is named
    /// to the stage and starts first (as `coplay party`'s host), without, nobody is: the first to
    /// hear no stage seat themselves.
    public static func seats(participants: Int, sites: Int, seed: UInt64, host: Bool) -> SeatFigures {
        let started = Date()
        var random = SplitMix64(seed: seed ^ 0x5EA7_5EA7)
        var simulation = cluster(participants: participants, sites: sites, seed: seed, random: &random)
        var (named, asking) = (Settings(), Settings())
        (named.audience.role, asking.audience.role) = (.stage, .firstCome)
        for node in 0..<participants { simulation.settingsOfNode[node] = host && node == 0 ? named : asking }
        simulation.schedule(.partition((0..<participants).map { [$0] }), at: 0)
        for node in 0..<participants {
            let at: Int64 = host && node == 0 ? 0 : 500_000_000 + Int64(random.next() % 1_000_000_000)
            simulation.schedule(.start(node: node), at: 1_000_000 + at)
        }
        var ranOut = false
        func advance(to end: Int64) {
            if !simulation.run(until: end, eventsMax: 50_000_000) { ranOut = true }
        }
        func onStage() -> [Int] { (0..<participants).filter { simulation.nodes[$0].instance?.isViewer == false } }
        let seats = min(participants, Settings().audience.stageSeats)
        var formed: Double?
        var seatedMost = 0
        for step in 1...240 {
            advance(to: Int64(step) * 250_000_000)
            let stage = onStage()
            seatedMost = max(seatedMost, stage.count)
            let whole = stage.allSatisfy { simulation.view(of: $0).count == stage.count - 1 }
            let following = (0..<participants).allSatisfy { simulation.view(of: $0).count >= 1 }
            if stage.count >= seats, whole, following {
                formed = Double(step) / 4
                break
            }
        }
        let stage = onStage()
        let counters = simulation.nodes.compactMap { $0.instance?.counters }
        let speaker = stage.first { simulation.nodes[$0].instance?.speaksForStage == true }
        let presser = stage.first { $0 != speaker } ?? 0
        simulation.schedule(
            .command(
                node: presser, .share(Activity(url: "u", itemID: "party"), durationSeconds: 7_200, bufferSeconds: 0)),
            after: .zero)
        advance(to: simulation.nowNanos + 1_000_000_000)
        simulation.schedule(.command(node: presser, .playNow(rate: 1)), after: .zero)
        advance(to: simulation.nowNanos + 5_000_000_000)
        let pressed = simulation.nowNanos
        simulation.schedule(.command(node: presser, .pause), after: .zero)
        advance(to: pressed + 3_000_000_000)
        var delays: [Double] = []
        var lost = 0
        for node in 0..<participants where node != presser {
            let paused = simulation.nodes[node].events.first {
                if case .paused = $0.event { $0.atNanos >= pressed } else { false }
            }
            if let paused { delays.append(Double(paused.atNanos - pressed) / 1e6) } else { lost += 1 }
        }
        let granted = counters.reduce(0) { $0 + Int($1.seatsGranted) }
        let alone = counters.reduce(0) { $0 + Int($1.seatsTakenAlone) }
        return SeatFigures(
            participants: participants, formedSeconds: formed, seated: stage.count, seatedMost: seatedMost,
            seatedThemselves: alone, granted: granted, pause: delays.sorted(), pauseLost: lost,
            eventBudgetRanOut: ranOut, simulatedIn: Date().timeIntervalSince(started))
    }
}
