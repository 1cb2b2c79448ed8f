/// What the outside may read of an agent: its state, its peers, the group's state, and its
/// reports (`status`, `peers`). Nothing here changes the instance.
extension Instance {
    public var state: SessionState { sessionLifecycle.state }
    public var incarnation: Incarnation { sessionLifecycle.incarnation }
    public var member: Member { sessionLifecycle.member }
    /// The live participants other than this agent, by id. At most `Settings.peersMax`.
    @inline(__always) public var peers: [PeerID: PeerRecord] { membership.peers }
    /// The group's keys for this session, when the agent has a key file.
    public var keys: GroupKeys? { gate.authentication.keys }
    /// Whether `id` is a live peer's.
    public func isPeer(_ id: PeerID) -> Bool { membership.peers[id] != nil }
    /// Whether this agent is a viewer (`AudienceSettings.isViewer`, with a relay), and the viewers
    /// a stage member counts (those that heartbeat to it: all of them at the speaker).
    public var isViewer: Bool { audience.isViewer }
    public var viewersCounted: Int { audience.viewers.count }
    /// Whether this stage member speaks for the stage to a party's audience (`Audience.speaker`).
    public var speaksForStage: Bool { isSpeaker }
    public var log: CausalLog { ordering.log }
    /// Endpoints named in members' peer lists and reached by unicast for now (at most
    /// `Settings.gossipedEndpointsMax`).
    public var namedEndpoints: [Endpoint] { Array(reach.named.keys) }
    /// Every delivered command, in delivery order, when `Settings.recordsDeliveries` is on.
    public var deliveries: [CommandEnvelope] { ordering.deliveries }
    /// Where in `deliveries` each adopted snapshot took effect, and its frontier.
    public var adoptions: [(afterDeliveries: Int, frontier: VectorClock)] { ordering.adoptions }
    /// The winning `share`: the group's activity.
    public var activity: CommandEnvelope? { playback.activity }
    /// The group state of each item.
    public var items: [String: ItemGroupState] { playback.items }
    /// What this agent believes its player is doing.
    public var player: PlayerModel { playback.player }
    public var coordination: Coordination { playback.coordination }
    /// This participant's active suspensions, oldest first.
    public var suspensions: [Suspension] { playback.suspensions.active }
    public var isSuspended: Bool { playback.isSuspended }
    public var catchingUp: Bool { playback.catchingUp }
    /// The group's queue, in order, and the entry the group is on.
    public var queueEntries: [QueueEntry] { queueController.queue.ordered }
    public var queueCurrent: String? { queueController.queue.currentID }

    /// The offset estimate to a peer's clock (live or departed), and whether it was reported synced.
    public func clockEstimate(of peer: PeerID, at now: MonotonicInstant) -> OffsetEstimate? {
        clockSync.estimate(of: peer, at: now)
    }
    public func isClockSynced(_ peer: PeerID) -> Bool { clockSync.isSynced(peer) }

    // MARK: Reports

    public func peerInfos(now: MonotonicInstant) -> [PeerInfo] {
        membership.peers.values.map { clockSync.info(of: $0, at: now) }.ordered {
            ($0.name, $0.member.id) < ($1.name, $1.member.id)
        }
    }

    @inline(never) public func statusReport(now: Timestamp) -> StatusReport {
        var report = StatusReport(
            member: member, name: identity.name, sessionName: identity.sessionName, state: state, item: player.item?.id,
            rate: player.rate, positionSeconds: player.position(at: now), sampledAt: now,
            isWaiting: coordination.isWaiting, suspensions: playback.suspensions.announced, peerCount: peers.count,
            counters: counters, activity: playback.sharedActivity, playerKind: identity.playerKind,
            correction: playback.correction, interstitial: playback.interstitials.playing?.interstitial.id,
            liveEdge: player.live?.dates.upperBound)
        report.audience = AudienceStatus(
            isViewer: isViewer, speaks: isSpeaker, viewers: viewersCounted, watching: watching)
        return report
    }
}
