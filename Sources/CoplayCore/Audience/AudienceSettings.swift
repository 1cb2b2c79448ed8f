/// The bounds of a party with an audience (`--audience`): who listens to what, how often the
/// audience and the stage speak to each other, and how many viewers a stage member keeps.
///
/// A stage member runs the whole protocol with the other stage members. A viewer follows: it
/// hears the group's subject (`.all`, where commands go) and its own, and speaks only to the
/// stage member it follows, its anchor (`Audience`). Its cost to the cluster is then one beacon
/// and a few clock probes a second, whatever the party's size.
public struct AudienceSettings: Sendable, Equatable {
    /// Where an agent on the relay takes part. Without a relay every agent is on the stage (the
    /// LAN carries no audience).
    public enum Role: Sendable, Equatable {
        /// On the stage, named (`--stage`; the host of `coplay party`): it joins it at once.
        case stage
        /// A viewer, named (`--audience`): it follows the stage and is counted, but takes no
        /// part in membership, readiness or repair of others, and never asks for a seat.
        case viewer
        /// The default: a viewer that asks the stage for a seat when it joins. The speaker grants
        /// one while the stage has fewer than `stageSeats` (counting the seats it granted and not
        /// yet saw taken), so the first to join drive the group and the rest watch. One that
        /// hears no stage at all (`seatWait`) takes a seat itself: somebody must be the stage.
        case firstCome
    }
    /// The core's default is the stage, as a group without an audience has it; the command line
    /// and the page default to `.firstCome` (`AgentConfiguration`, `coplay_create_relayed`).
    public var role = Role.stage
    /// Whether this agent joins as a viewer (with a relay): named so, or waiting for a seat.
    public var isViewer: Bool { role != .stage }
    /// The seats on the stage by default (`Role.firstCome`): the "first 32". The stage
    /// runs the whole protocol among its members, whose membership and clocks cost each of them
    /// per peer: a stage of 32 heartbeats at 64 frames a second among itself, and carries a
    /// pause to its audience in one hop. Named stage members (`--stage`) are not refused for it.
    public var stageSeats = 32
    /// How long a viewer waiting for a seat hears no stage before it takes a seat itself: a
    /// beacon interval and a quarter (the speaker beacons once a second, and answers a hello
    /// within a round trip), plus up to `seatWaitJitter`, drawn once, so that a crowd that starts
    /// with no stage (or loses all of it) does not seat itself whole: the first to take a seat
    /// beacons at once, and the others hear it within a round trip of the relay. Constants, as
    /// `FollowerSettings.seekRefusalRetry` is: each field of these settings costs the browser's
    /// module some 0.5 KB gzipped in the code that copies them.
    static let seatWait: Duration = .milliseconds(1250)
    static let seatWaitJitter: Duration = .seconds(1)
    /// A seat granted and not yet taken (its holder heard on the stage) is kept for the grant's
    /// count this long, then freed: a grant lost with its viewer does not hold a seat for ever.
    static let seatGrantExpiry: Duration = .seconds(3)
    /// A stage member that just joined the stage (named, granted a seat, or seated by itself)
    /// grants no seat for this long, were it to speak: until then its table of the stage is not
    /// whole. Another that seated itself at the same moment, and the members seated by grants a
    /// moment ago, meet it on the stage's subject within a round trip of the relay. Without it,
    /// among 1,000 that started together, two that seated themselves 20 ms apart at different
    /// sites each granted the seats it saw free (a stage of 64), and among 100 a member seated by
    /// a grant that became the speaker at once (it joined the session earlier) granted again the
    /// seats its half-formed table showed free (62) (`coplay-bench party-scale --shapes
    /// seats-nohost`).
    static let seatSettle: Duration = .milliseconds(500)
    /// How often the stage's speaker (its earliest member) puts its heartbeat on the group's
    /// subject for the audience: its digest (a viewer asks for what it lacks), its item, and that
    /// it is alive. One frame of 128 to 256 bytes a second to each viewer: within the 300 B/s
    /// a viewer may cost each way, with its clock probes.
    public var beaconInterval: Duration = .seconds(1)
    /// How often a viewer's membership looks whether it has something to tell its anchor (a
    /// heartbeat, unicast): a seat to ask for, a new anchor, or commands delivered since it last
    /// told it (its digest). With nothing to tell, it sends nothing: its anchor counts it by the
    /// clock probes it sends anyway (`viewerProbeInterval`). A heartbeat every 2 s from every
    /// viewer was the speaker's table's whole cost, N/2 frames a second into one connection (5,000
    /// among 10,000 simulated, half of each viewer's bytes out).
    public var viewerHeartbeatInterval: Duration = .seconds(2)
    /// A viewer not heard for this long (by a probe or a heartbeat) leaves the stage member's
    /// table: three probe intervals and a second, so that a viewer stays counted when two probes
    /// in a row come late, and a crashed one is uncounted within 16 s (one that leaves says so).
    public var viewerExpiry: Duration = .seconds(16)
    /// A viewer refused a seat asks again after 2 s, then after twice as long each time, up to
    /// this: those a party's stage refused ask N/32 times a second between them (some 30 among
    /// 1,000), not N/2, and a seat that comes free among a thousand waiting is asked for within a
    /// second or so. Asked at once, and from 2 s again, of each new speaker. A constant
    /// (`seatWait`'s reason).
    static let seatAskIntervalMax: Duration = .seconds(32)
    /// A viewer's silences for its anchor, which beacons once a second (not the stage's 500 ms):
    /// suspected after two beacons missed and a half, gone after three and a half; then the
    /// viewer follows the next speaker (whose beacon it hears meanwhile).
    public var anchorSuspectAfter: Duration = .milliseconds(2500)
    public var anchorDeadAfter: Duration = .milliseconds(3500)
    /// A viewer's routine clock probes: one exchange every 5 s keeps the offset to its anchor
    /// within drift's reach (20 ppm is 0.1 ms in 5 s) at 2 frames per 5 s.
    public var viewerProbeInterval: Duration = .seconds(5)
    /// A viewer's warm-up after its first burst of probes: 4 more, 500 ms apart, not a member's
    /// 10. Its anchor answers every viewer's warm-up, and among 1,000 tabs joining at once 10
    /// were 2,000 probes a second at the speaker for 5 s, while a pause was to reach them all.
    /// Warmed up at the routine 5 s instead, viewers' offsets were twice as far off through the
    /// simulated cluster's queues (9.4 ms against 4.7 at the worst of 40,
    /// `AudienceSimulationTests`); with 4, 5.5 ms.
    public var viewerProbeWarmupCount = 4
    /// A viewer's ticks may come only every heartbeat (2 s) when nothing else is due, so a gap
    /// between them is a stall (`Settings.localStallThreshold`, a member's 1 s) only past 2.5 s.
    /// At 1 s, each such tick read as a stall and forgave the anchor's silence: with nothing else
    /// to wake them (their warm-up probes tried 5 s apart), viewers never let a crashed anchor go.
    public var viewerLocalStallThreshold: Duration = .milliseconds(2500)
    /// A viewer's keep-alive with its relay server: a PING after this long with nothing heard,
    /// the server given up after `viewerRelayDeadAfter`. A member's are 250 and 700 ms, so that
    /// its peers never miss it; a viewer hears a beacon a second, and at 250 ms each viewer sent
    /// some three PINGs a second (and read as many PONGs): among 1,000 tabs in node, their socket
    /// writes were the largest share of a thread's time. At 1.25 s a viewer pings only when a
    /// beacon is late, and leaves a dead server within 2.5 s (it is nobody's peer: only its
    /// own following waits).
    public var viewerRelayPingInterval: Duration = .milliseconds(1250)
    public var viewerRelayDeadAfter: Duration = .milliseconds(2500)
    /// Viewers one stage member keeps: a party of 10,000 with room. An entry is some 100 bytes,
    /// and at most some 800 with the longest digest a heartbeat carries (48 origins): 13 MB for a
    /// table filled by a flood of such. Past it a new viewer is dropped and counted
    /// (`Counters.viewersRefused`); it is still answered and follows, uncounted, but may not ask
    /// this stage member for repair or the state. A flood of invented viewers fills it and no more.
    public var viewersMax = 16_384
    /// How often the stage's speaker looks whether to tell everyone how many viewers it counts
    /// (`AudienceSummary`; every viewer follows the speaker, so its table is the audience): it
    /// tells when the count changed, or `summaryRefresh` after it last told. One frame, not one
    /// per viewer, for a count that follows the audience within the 16 s a gone viewer takes to
    /// expire anyway. Every 5 s whatever the count, the summary cost each viewer 32 B/s and a
    /// burst of N deliveries every 5 s, each as costly to a tab as a pause's
    /// (`coplay-bench party-scale`; MEASUREMENTS.md). Constants (`seatWait`'s reason).
    static let summaryInterval: Duration = .seconds(5)
    static let summaryRefresh: Duration = .seconds(30)
    /// A summary not renewed for this long (two refreshes and a half: one lost or late is
    /// forgiven) no longer counts. One from a member that left the stage counts no longer than
    /// its leaving takes to notice, and a new speaker tells its count at once.
    static let summaryExpiry: Duration = .seconds(75)
    /// A stage member on the relay gives a suspected peer up this long after its suspicion,
    /// however large the stage (`Settings.suspicionGapUnscaled`), not after a gap that grows with
    /// it: the relay (TCP to a server that drops no frame) loses no heartbeat, and its probes
    /// settle a suspicion in a round trip (some 50 ms across a cluster; three of them are sent in
    /// this gap). A stage of 32 heartbeats every second and suspects after 1.5 s; the speaker's
    /// crash was noticed among 1,000 after p99 1,894 ms, with 500 ms (as below 16) after 1,994,
    /// at the scaled 1 s after 2,494 (`coplay-bench party-scale --sizes 1000 --shapes stage`):
    /// the audience must have its next speaker within 2 s, and a heartbeat still in flight when
    /// its sender crashed (20 ms between the model's sites, more between real homes) counts.
    public var stageSuspicionGap: Duration = .milliseconds(400)

    public init() {}

    /// The settings an agent on the relay runs its membership and clocks with. A viewer's:
    /// heartbeats at its own interval (to its anchor alone), silences for a beacon a second, and
    /// slower routine probes. A stage member's are a member's, but that a suspicion is settled
    /// within `stageSuspicionGap` whatever the stage's size.
    func applied(to settings: Settings, isViewer: Bool) -> Settings {
        guard isViewer else {
            var member = settings
            member.suspicionGapUnscaled = stageSuspicionGap
            return member
        }
        var viewer = settings
        viewer.heartbeatInterval = viewerHeartbeatInterval
        viewer.suspectAfter = anchorSuspectAfter
        viewer.deadAfter = anchorDeadAfter
        viewer.probeInterval = viewerProbeInterval
        viewer.probeIntervalJittery = viewerProbeInterval
        viewer.probeWarmupCount = viewerProbeWarmupCount
        viewer.localStallThreshold = viewerLocalStallThreshold
        viewer.relay.pingInterval = viewerRelayPingInterval
        viewer.relay.deadAfter = viewerRelayDeadAfter
        return viewer
    }
}
