/// Every timer, limit and bound of the protocol, in one place. The defaults are the ones the
/// MEASUREMENTS.md's figures were measured with; tests and the simulation change them freely.
public struct Settings: Sendable, Equatable {
    // MARK: Membership
    /// When the announce burst's hellos go out, from the moment of joining (mDNS-like, shortened).
    public var announceOffsets: [Duration] = [.zero, .milliseconds(100), .milliseconds(300)]
    /// Period of the multicast heartbeat, jittered by `heartbeatJitterFraction`. One lost
    /// heartbeat makes a peer suspected (`suspectAfter`), which unicast probes then settle.
    public var heartbeatInterval: Duration = .milliseconds(500)
    public var heartbeatJitterFraction = 0.1
    /// Silence after which a peer is suspected and probed directly over unicast.
    public var suspectAfter: Duration = .milliseconds(750)
    /// Period of the unicast probes sent to a suspected peer: ten of them fit between suspicion
    /// and death, so at 20% loss all ten fail about once in 100,000 suspicions.
    public var suspectProbeInterval: Duration = .milliseconds(50)
    /// Silence after which a peer is declared gone (crashed or unreachable).
    public var deadAfter: Duration = .milliseconds(1250)
    /// In a group larger than `heartbeatFullRateGroupMax` the silences grow with the group, and
    /// so does the time from a peer's suspicion to its departure. On a LAN it must: among 64 a
    /// heartbeat comes every 2 s, and one lost to the air must not cost a departure before the
    /// next one comes. Set, a suspected peer is given up this long after its suspicion instead
    /// (never sooner than `deadAfter`): where heartbeats are not lost, the probes sent on
    /// suspicion settle it in a round trip whatever the group's size (a relay stage,
    /// `AudienceSettings.stageSuspicionGap`).
    public var suspicionGapUnscaled: Duration? = nil
    /// A membership tick this much later than the previous one (they come at least every
    /// heartbeat, 550 ms at most) means this agent was stalled: the silence of its peers over
    /// the stall is forgiven rather than taken for their death (`Membership.forgiveSilence`).
    public var localStallThreshold: Duration = .seconds(1)
    /// Up to this many participants, heartbeats go every `heartbeatInterval`. In a larger group
    /// the interval, and the silences after which a peer is suspected and declared gone (and
    /// this agent's own stall threshold), grow in proportion to the group's size (RFC 3550 §6.2,
    /// the RTCP interval): each agent hears about 32 heartbeats a second however many send them,
    /// so a group's idle cost grows with N rather than N². The price: a crash in a group of 64
    /// is found in 5 s rather than 1.25 s.
    public var heartbeatFullRateGroupMax = 16
    /// For this long after joining, an agent heartbeats faster than a large group's interval:
    /// when many start together, hellos are lost in the crowd, and a heartbeat a second later
    /// (not 2 s, among 64) finds whoever missed them. The interval is `heartbeatInterval` times
    /// the square root of the group's scale (`Membership.tick`).
    public var heartbeatJoiningPeriod: Duration = .seconds(5)
    /// The same after this agent was stalled (`localStallThreshold`): a peer that gave it up
    /// meanwhile hears it within half a second, not at its next heartbeat seconds later.
    public var heartbeatFullRateAfterStall: Duration = .seconds(2)
    /// A hello from a peer is answered with our own hello at most this often.
    public var helloReplyInterval: Duration = .milliseconds(100)
    /// When the copies of a leave go out, from the moment of leaving (it is not repaired, so it is
    /// repeated, spaced out against bursts of loss). An exiting agent exits after the last copy.
    public var leaveCopyOffsets: [Duration] = [.zero, .milliseconds(10), .milliseconds(30)]
    /// How long a departed (id, incarnation) is remembered, so its reordered datagrams
    /// cannot bring it back.
    public var departedMemory: Duration = .seconds(10)

    // MARK: Clock synchronisation
    /// Probes sent to a newly seen peer, `probeBurstSpacing` apart.
    public var probeBurstCount = 8
    public var probeBurstSpacing: Duration = .milliseconds(4)
    /// After the burst: probes `probeWarmupInterval` apart until `probeBurstCount +
    /// probeWarmupCount` samples have arrived, then `probeInterval` apart.
    public var probeWarmupCount = 10
    public var probeWarmupInterval: Duration = .milliseconds(500)
    /// Warm-up probe exchanges this agent starts per second over all its peers, up to
    /// `heartbeatFullRateGroupMax` participants: 16 peers at `probeWarmupInterval`. In a larger
    /// group the budget shrinks in proportion (never below `probeExchangesPerSecondMax`) and each
    /// peer is warmed up more slowly (its first estimate still comes from the burst): every agent
    /// receives about as many probes as it sends, and joining a group of 256 must not cost
    /// anybody 500 probes a second.
    public var probeWarmupExchangesPerSecondMax = 32.0
    /// Probes after the burst, `probeWarmupInterval` apart, to a peer whose clock is not
    /// synchronised yet (a probe or reply of the burst lost); a peer that answers none of them
    /// (its unicast blocked) is probed within the warm-up budget from then on.
    public var probesUntilSyncMax = 8
    /// Warm-up and steady probes sent in one tick; more due at once (after a stall) are spread
    /// over their interval instead.
    public var routineProbesPerTickMax = 4
    public var probeInterval: Duration = .seconds(3)
    /// Steady-state probe exchanges this agent starts per second, over all its peers: with many
    /// peers each is probed less often than `probeInterval`, so the idle traffic stays bounded
    /// (about 400 B/s per agent) whatever the group size.
    public var probeExchangesPerSecondMax = 1.5
    /// The same to a peer whose path is jittery (`OffsetEstimator.isJittery`, as on the air;
    /// never on a wire): there each way's quickest crossing and the drift need more samples.
    /// Among 8 hosts on the Wi-Fi model (`coplay-bench wifi --hosts 3,8 --links wired,wifi`) the
    /// offsets' p99 went from 1.87 to 1.62 ms with these rather than the wired values (1.31 ms in
    /// a run of `--hosts 8 --links wifi` alone), while the hub forwarded 23% more frames (10,368
    /// against 8,450 in 71 s, heartbeats and all); among 3 simulated agents
    /// (`WifiSimulationTests`) the clocks' error p50 went from 146 to 102 µs, p99 from 713 to
    /// 603 µs.
    public var probeIntervalJittery: Duration = .seconds(1)
    public var probeExchangesPerSecondMaxJittery = 4.0
    public var probeJitterFraction = 0.1
    /// A probe whose reply has not come back within this is forgotten.
    public var probeTimeout: Duration = .seconds(1)
    /// The estimate takes each way's quickest crossing among this many most recent samples
    /// (`OffsetEstimator`).
    public var offsetFilterWindow = 8
    /// On a jittery path — the median of those round trips more than `jitteryPathSpread` above
    /// their minimum, as on Wi-Fi, where each air hop adds milliseconds of jitter — it looks
    /// further back: the quickest of more crossings is closer to the path's own delay. Among 3
    /// simulated agents on the Wi-Fi model (`WifiSimulationTests`), with NTP's filter (the one
    /// sample quickest both ways) offset errors went from p50 310 µs, p99 1.15 ms with 8 to p50
    /// 221 µs, p99 0.86 ms with 32; each way on its own, with 32, p50 146 µs, p99 713 µs. On a
    /// wire nothing changes.
    public var offsetFilterWindowJittery = 32
    public var jitteryPathSpread: Duration = .milliseconds(1)
    /// Samples needed before an estimate is reported as synchronised.
    public var offsetSamplesForSync = 4
    /// The same in a group larger than `heartbeatFullRateGroupMax`, whose probe burst shrinks to
    /// this many too: when 64 agents start together, each sends and answers about 500 probes and
    /// replies in the first half second, and with 4 the queues they built put the first offset's
    /// p99 at 440 ms; with 2, 250–280 ms. The best of two round trips on a LAN is within a
    /// fraction of a millisecond, and the warm-up's samples refine it within seconds. Two
    /// synchronise only if one of them took at most `offsetSingleSampleDelayMax`; otherwise the
    /// burst's later replies are awaited, up to `offsetSamplesForSync`.
    public var offsetSamplesForSyncLargeGroup = 2
    /// In a group of at least this many participants the burst to a new peer is one probe, and
    /// its sample alone synchronises the clock if its round trip took at most
    /// `offsetSingleSampleDelayMax` (the offset's error is at most half of it: receive times are
    /// the kernel's, so a crowded receiver's queue does not count); a slower one is followed at
    /// once by another probe, until one is fast enough or `offsetSamplesForSync` samples have
    /// arrived, which then synchronise it whatever their round trips. When 64 agents start
    /// together, the second probe of every pair's burst was a quarter of all they sent and
    /// received, and its reply, queued behind the others, set the first offset's p99.
    public var offsetSingleSampleGroupMin = 33
    public var offsetSingleSampleDelayMax: Duration = .milliseconds(2)
    /// Drift is fitted over at most this long a history of samples.
    public var driftWindow: Duration = .seconds(120)
    /// Drift is estimated only once the history spans this long.
    public var driftMinimumSpan: Duration = .seconds(2)
    /// Largest drift believed, in parts per million (quartz is tens of ppm).
    public var driftMaxPPM = 500.0

    // MARK: Playback coordination
    /// How long a coordinated start or seek waits for every participant to be ready; then it
    /// starts without the laggards, who catch up in a `stallRecovery` suspension.
    public var startDeadline: Duration = .seconds(3)
    /// How far ahead of the decision the common start instant is set, so that the start command
    /// reaches everyone before it: twice the largest round trip to a participant (the smallest
    /// measured, `OffsetEstimate.delayNanos`) plus `startLeadMargin`, within `startLeadMin` and
    /// `startLeadMax`; `startLead` while some participant's clock is not known. A start that
    /// still arrives late is not lost: the player starts where the group is by then.
    public var startLead: Duration = .milliseconds(60)
    /// A `play` while every participant is known to be ready where the group is paused starts at
    /// once, a lead ahead, without the round of readies (`Playback.startKnownReady`).
    public var startWhenKnownReady = true
    public var startLeadMin: Duration = .milliseconds(8)
    public var startLeadMargin: Duration = .milliseconds(5)
    public var startLeadMax: Duration = .milliseconds(500)
    /// If the deciding agent is silent this long past the deadline, the lowest-id waiting
    /// participant decides instead.
    public var startFallbackGrace: Duration = .milliseconds(500)
    /// While a coordinated start is collected, a ready agent says so again this often: a lost
    /// `ready` would otherwise hold the start until `startDeadline` (at most 30 copies a start).
    public var readyRepeatInterval: Duration = .milliseconds(100)
    /// Each transport command this agent issues is multicast again at these offsets: a lost
    /// command is otherwise learnt of only from the next heartbeat's digest (up to 550 ms, and
    /// the heartbeat may be lost too), while a copy 20 ms later costs one small datagram. With a
    /// third of datagrams lost, a receiver misses all five copies once in 400 commands.
    public var commandCopyOffsets: [Duration] = [
        .milliseconds(20), .milliseconds(60), .milliseconds(150), .milliseconds(300),
    ]
    /// The IP traffic class (DSCP and ECN byte) a shell marks the time-critical datagrams with (a
    /// command as issued and its copies, a ready, an end: `Payload.isTimeCritical`; every other
    /// datagram goes unmarked): DSCP EF (46), which Wi-Fi
    /// puts in its voice access category (RFC 8325: user priority 6, as Linux's mac80211 maps
    /// it), so that on the air a pause does not queue behind a routine frame held by retries
    /// (MEASUREMENTS.md, the air pause). 0: unmarked. Wired switches and most home routers
    /// ignore it.
    public var expeditedTrafficClass: UInt8 = 46 << 2
    /// Copies waiting to go out, at most: past this (a burst of commands) commands go once, and
    /// repair brings what is lost.
    public var commandCopiesPendingMax = 16
    /// A playing player further than this from the group's timeline (as the clocks drift) is
    /// re-anchored; checked at every tick, at least every heartbeat.
    public var driftCorrectionThreshold: Duration = .microseconds(100)
    /// A player that reports position samples (mpv, a delegating socket) is steered onto the
    /// group's timeline by rate nudges of at most this, relative (0.005: ±0.5%, which a listener
    /// does not hear with the pitch kept).
    public var rateNudgeMax = 0.005
    /// A larger error (one the proportional nudge alone would steer at more than `rateNudgeMax`:
    /// above 5 ms with the defaults, after a stall of the machine or a disturbance) is closed at up
    /// to this rate instead: 200 ms in about 4 s at 5%, tempo only (scaletempo2 keeps the pitch),
    /// rather than a seek, which is a jump a person hears and sees.
    public var rateCatchUpMax = 0.05
    /// A sample's error is steered away over about this long: the nudge is error / horizon,
    /// before the bound.
    public var rateCorrectionHorizon: Duration = .seconds(1)
    /// Errors below this are left alone: mpv's audio clock jitters by about 20 µs between samples.
    public var rateCorrectionDeadband: Duration = .microseconds(300)
    /// The nudge changes only in steps of at least this, so the player is not sent a speed change
    /// with every sample.
    public var rateNudgeStep = 0.0002
    /// Errors at least this large are seeked away instead: at `rateNudgeMax` a rate nudge would
    /// take minutes. The player measures its own seek latency and allows for it.
    public var seekCorrectionThreshold: Duration = .seconds(1)
    /// A speed change made in the player (not by coplay) within this of the group's rate is taken
    /// for a disturbance and corrected; a larger one is the person's choice and becomes a group
    /// command. mpv's own speed keys step by about 10%.
    public var playerSpeedDisturbanceMax = 0.02
    /// A change of position larger than this is also reported as a `time-jumped` event.
    public var timeJumpReportedMin: Duration = .milliseconds(250)
    /// What-happened ends once the player is within this of the group (it closes the gap at 2x,
    /// so the last wake lands a little short of it).
    public var whatHappenedCaughtUpTolerance: Duration = .microseconds(500)
    /// Suspension reasons that make the others wait before starting (AVPlaybackCoordinator's
    /// suspensionReasonsThatTriggerWaiting): none by default, so suspended participants are simply
    /// left out of a coordinated start.
    public var suspensionReasonsThatTriggerWaiting: Set<String> = []
    /// Those reasons make the others wait only while the group has at most this many
    /// participants on the item (participantLimitForWaitingOutSuspensionsOfOthers).
    public var participantLimitForWaiting = Int.max
    /// A pause snaps everyone to the originator's media time (pauseSnapsToMediaTimeOfOriginator).
    public var pauseSnapsToOriginatorTime = true
    /// A nack to the same peer is sent at most this often.
    public var nackHoldoff: Duration = .milliseconds(50)
    /// Commands resent in answer to one nack, at most.
    public var repairBatchMax = 64
    /// Repair bytes sent to one member per second, at most (and at most this many in a burst):
    /// enough to bring a member the whole repair store (4,096 commands of ~100 bytes) in about
    /// two seconds, while a flood of nacks cannot make an agent send more than this to anyone.
    public var repairBytesPerSecondPerPeer = 256 * 1024
    /// Items whose group state is remembered; the least recently changed are forgotten first.
    public var itemsMax = 64
    /// A `stallRecovery` its player does not end within this ends all the same, with the reason,
    /// and the player stands aside from the item (`cannotPlay`): long enough for a real network
    /// stall to refill (the stall benchmark's starved mpv is back within a second of its cache
    /// refilling), short enough that a player that can never get there (no byte ranges) does not
    /// leave its agent suspended, its commands local, for good.
    public var stallRecoveryMax: Duration = .seconds(30)
    /// An item the group left within this of its end had ended: shared again, it starts from 0:00
    /// (a player stops a few frames short of the duration its container states).
    public var endedMargin: Duration = .milliseconds(500)
    /// Commands waiting for their causal predecessors, at most.
    public var pendingCommandsMax = 1024
    /// Delivered commands kept to repair others, at most. Commands every live member has
    /// delivered are compacted out of the store sooner (a snapshot stands for them).
    public var storedCommandsMax = 4096
    /// An agent missing more than this many of a member's commands asks it for its state (a
    /// snapshot: a few datagrams) rather than for the commands: one repair round's worth
    /// (`repairBatchMax`), past which repair would take several round trips.
    public var stateTransferAfterMissing = 64
    /// A gap that repair has not closed in this long is closed by a snapshot: repair of a few
    /// commands takes a round trip and a nack holdoff (50 ms), and a nack goes with every digest
    /// heard, so a gap still open after 3 s, even at 20% loss, has no member able to repair it
    /// (those that had the commands are gone). Not sooner: a snapshot from a member that does not
    /// store a reliable message in the gap would stand for that message without delivering it.
    public var repairStallBeforeState: Duration = .seconds(3)
    /// State requests go out at most this often, and a member sends an unasked snapshot to the
    /// same peer at most this often; a transfer with no new part for this long is resumed (the
    /// parts still wanted are asked for). Several round trips on any LAN.
    public var stateRequestHoldoff: Duration = .milliseconds(200)
    /// A transfer with no new part for this long is dropped (its sender crashed or left): the
    /// next digest that shows this agent behind starts another, from whoever is ahead.
    public var stateTransferTimeout: Duration = .seconds(1)
    /// How far a snapshot's frontier may be ahead of what this agent last heard of an origin (the
    /// sender's digest, or its own count): a member delivers at most the repair store's worth
    /// between two heartbeats, and a forged jump to 2^32 would make this agent skip every real
    /// command of that origin.
    public var stateFrontierAheadMax: UInt32 = 4096
    /// A departed origin's vector-clock entry is pruned only after it has been gone this long
    /// (and every live agent has all its commands): an agent cut off by a partition shorter than
    /// this still learns of the origin's last commands from the digests when it heals.
    public var pruneAfter: Duration = .seconds(30)
    /// Commands held until their sender's clock offset is known, at most, and for how long.
    public var commandsAwaitingClockMax = 256
    public var commandAwaitingClockTimeout: Duration = .seconds(2)
    /// How long a joining agent waits for the group's history before following what it has.
    public var historyCatchUpMax: Duration = .seconds(2)
    /// The largest app message, in bytes of UTF-8 (it travels in up to 64 datagrams).
    public var messageBytesMax = 16 * 1024
    /// Messages being reassembled at once, at most; an unreliable one is given up after this long.
    public var partialMessagesMax = 32
    public var unreliableMessageTimeout: Duration = .seconds(2)
    /// Unreliable messages remembered once complete, so that a duplicated part cannot deliver one
    /// twice (a few seconds of messages at any sane rate).
    public var completedMessagesRememberedMax = 256
    /// A message part carries at least this much text, or the message is refused (too many
    /// recipients leave no room in a datagram).
    public var messagePartBytesMin = 16
    /// A recipient named by id needs at least this many leading hex digits (fewer match too much).
    public var idPrefixCharactersMin = 4
    /// Anti-replay windows kept (with a group key), one per sender membership: twice the peer
    /// table, since departed memberships linger; the least recently used is forgotten first.
    public var replayWindowsMax = 512
    /// Sequence numbers below a sender's highest that its window tells apart (`ReplayWindows`): a
    /// datagram further behind is refused as too old to tell from a replay. A sender numbers all
    /// it sends, to anyone, in one sequence, and a frame through a relay's fan-out to thousands
    /// arrives after later-numbered unicasts: with 64 (IPsec's usual), among 10,000 viewers the
    /// speaker's beacons were refused 482 times and its carried commands 292 times while it
    /// answered their warm-up probes, and 32 viewers refused the next speaker's pause, up to 634
    /// numbers behind; each was repaired a beacon (1 s) or two later (`coplay-bench party-scale
    /// --sizes 10000 --shapes stage`). A window this wide is some 550 bytes, 280 KB for a full
    /// table of them.
    public var replayWindowWidth = 4_032
    /// An incarnation is accepted only up to this far ahead of this agent's clock (incarnations
    /// count tenths of a second): a week covers any honest clock skew, and not 2^32 - 1.
    public var incarnationAheadMax: Duration = .seconds(7 * 24 * 3600)
    /// Freshness (`Freshness`, with a group key): a datagram older than this on arrival, by the
    /// sender's clock as this agent measured it, is refused (`stale`). Transit is milliseconds on
    /// a LAN and on loopback, ~0.1 s through a relay cluster; a relay server frozen for seconds
    /// releases a backlog that is no longer news. What is refused is made up by repair, fresh.
    public var sentTimeAgeMax: Duration = .seconds(2)
    /// …and one stamped further than this ahead of the sender's measured clock (the estimate's
    /// error is milliseconds; a clock stepped since the last probe takes this much slack).
    public var sentTimeAheadMax: Duration = .milliseconds(500)
    /// Before this agent has measured the sender's clock (its first hellos), the stamp is judged
    /// against this agent's own clock, and the window must hold the two clocks' difference too:
    /// machines kept by NTP agree within milliseconds, and the protocol's targets allow a skew of
    /// ±0.5 s. So a recording is refused by anyone after 5 s, and a machine whose clock is more
    /// than 5 s off is told so (its datagrams are refused with their distance in the diagnostic).
    public var sentTimeUnsyncedMax: Duration = .seconds(5)
    /// Memberships remembered as once admitted: the origins this agent's commands may depend on
    /// (an origin never seen as a member, e.g. invented by a forger, is not depended on).
    public var membersRememberedMax = 1024
    /// This agent's own earlier incarnations remembered, so that echoes of what it sent before a
    /// rejoin are not taken for another agent using its id.
    public var incarnationsRememberedMax = 8
    /// Pruned origins whose counts are remembered (so dependencies on them stay satisfied).
    public var prunedOriginsMax = 256
    /// Clock estimators of departed peers kept in case they come back, at most.
    public var retiredClocksMax = 64
    /// Testing: record every delivered command in `Instance.deliveries` (the simulation checks
    /// causal order and exactly-once delivery with it). At most `deliveriesRecordedMax`.
    public var recordsDeliveries = false
    public var deliveriesRecordedMax = 100_000

    // MARK: Bounds
    public var peersMax = 256
    /// A party bigger than a group (`--audience`, over the relay): the stage and its audience.
    public var audience = AudienceSettings()
    /// Unicast reach (`--peer`, Reach): how often a member reached by unicast is told whom this
    /// agent knows (a few datagrams of under 900 bytes per interval; a new member is told of
    /// within `peerListJoinDelay`).
    public var peerListInterval: Duration = .seconds(2)
    public var peerListJoinDelay: Duration = .milliseconds(100)
    /// Endpoints named in peer lists and not members yet: at most this many get unicast copies,
    /// each for `gossipedEndpointLifetime` unless it answers and becomes a member — what a
    /// member could point this agent's traffic at stays small and ends by itself.
    public var gossipedEndpointsMax = 64
    public var gossipedEndpointLifetime: Duration = .seconds(10)
    /// A member heard over multicast within this window (4 heartbeats) is reached by multicast
    /// and gets no unicast copies.
    public var multicastHeardWindow: Duration = .seconds(2)

    /// Multicast paths (`MulticastPath`, RFC 9119): how many of the peers' group announcements
    /// this agent judges its multicast by (their one-way delays and whether they arrived); at
    /// least `multicastPathSamplesMin` before a verdict. A heartbeat a second from each peer
    /// gives a verdict within seconds of joining.
    public var multicastPathSamples = 32
    public var multicastPathSamplesMin = 8
    /// At most one one-way delay sample this often (reading a clock's offset costs a fit of its
    /// history: among 256 agents, thousands of announcements a second would each pay it).
    public var multicastDelaySampleInterval: Duration = .milliseconds(125)
    /// Multicast is slow once the 75th percentile of its one-way delay passes `slow`, and prompt
    /// again once it is under `prompt` (an access point holding group frames for its DTIM
    /// beacon adds 0 to 102 ms, or to 307 ms; a wire, well under a millisecond).
    public var multicastSlowDelay: Duration = .milliseconds(15)
    public var multicastPromptDelay: Duration = .milliseconds(5)
    /// Multicast is lossy once more than this share of the peers' group announcements did not
    /// arrive by it, and complete again under `multicastCompleteLoss`.
    public var multicastLossyLoss = 0.05
    public var multicastCompleteLoss = 0.01
    /// A verdict stands at least this long before it may change again: each change is an
    /// announcement to the whole group, and a path near a threshold (a large group's window of
    /// 32 announcements spans a fraction of a second) would otherwise flip with every sample.
    public var multicastVerdictHoldoff: Duration = .seconds(10)
    /// At most this many members that ask for it get time-critical datagrams (commands, ready,
    /// end) by unicast besides multicast: the cost of a command stays bounded in a large group.
    public var unicastFanOutMax = 16

    // MARK: The queue
    /// Entries the group's queue holds: an evening's playlist is tens, a season a few hundred. An
    /// add past it is refused with an error where it is typed. Concurrent adds from several agents
    /// may pass it; where they arrive, a queue holds at most twice as many (past that an add is
    /// counted, `queueAddsRefused`, and left out), so that its memory stays bounded whatever
    /// members send.
    public var queueEntriesMax = 1000
    /// The queue's entries on the wire, in all: a late joiner gets the queue in one snapshot of
    /// at most 255 parts (`WireFormat.statePartsMax`, some 290 KB), with the rest of the group
    /// state. 1,000 entries with URLs of 100 bytes take 170 KB; with every field at its longest
    /// (an entry is then some 850 bytes) the bytes run out at about 235 entries.
    public var queueBytesMax = 200_000
    /// At the end of an entry the agent of smallest id on it advances the group at once; the
    /// next waits this long for that advance before making it itself, the next twice as long…
    /// (players in sync end within a millisecond of each other; an advance takes a few to arrive).
    public var queueAdvanceStagger: Duration = .milliseconds(250)
    /// An end of item moves the group on only once the group has played this many seconds of it
    /// (or half of an item shorter than twice that).
    public var queueEndPlayedMin = 0.5

    // MARK: Interstitials
    /// Interstitials scheduled on one item (`interstitial … at=`), for the group and for this
    /// participant each: a film has a handful of ad breaks. Past it a group one is refused where
    /// it is typed (and counted, `interstitialsRefused`, where it arrives): the schedules stay
    /// bounded (at most this many on each of `itemsMax` items) and travel in a snapshot.
    public var interstitialsScheduledMax = 16
    /// When the item reaches a group interstitial, the participant of smallest id on it sends the
    /// hold at once; the next waits this long for it before sending it itself, the next twice as
    /// long (each has already stopped its main player there and begun the interstitial).
    public var interstitialHoldStagger: Duration = .milliseconds(250)

    /// The relay client's times and bounds (`--relay`, `Settings.Relay`).
    public var relay = Relay()
    public var nameBytesMax = 64
    public var sessionNameBytesMax = 64
    /// No datagram coplay sends or accepts is longer than this.
    public var datagramBytesMax = 1200
    public var offsetSamplesMax = 64
    public var outstandingProbesPerPeerMax = 16
    public var departedMax = 512
    /// Longest console line accepted, in bytes (room for a message of `messageBytesMax`).
    public var commandLineBytesMax = 17 * 1024
    /// Datagrams the agent's event loop reads from one socket in one turn before it looks at its
    /// timers and other inputs again: a flood cannot hold back commands, signals and timers, which
    /// are never dropped. (What waits beyond it waits in the kernel's receive buffer, whose
    /// overflows are counted as `kernelDrops`.)
    public var receiveQueueDatagramsMax = 1024
    /// A turn of reading also ends after this long, with datagrams still waiting: an agent starved
    /// of CPU (1–3 ms an input) took 1–3 s over a turn of 1,024, and its timers — its heartbeats
    /// — went out that late; among 256 in simulation, agents whose hellos its full buffer had
    /// dropped learned of it only 3.25–3.5 s after the start. Not much shorter: a tick costs a
    /// starved agent as much as an input, and at 20 ms its ticks crowded out its reading (its
    /// buffer lost 3.7 times as many datagrams, and one such group never formed). (An agent that
    /// keeps up reads a turn in a few milliseconds; one woken from a stall forgives its peers'
    /// silence at its first tick, whatever it has not read yet.)
    public var receiveTurnDurationMax: Duration = .milliseconds(200)
    /// Beyond this share of `receiveQueueDatagramsMax` read in one turn (12%: 122 datagrams), a
    /// datagram whose header does not name a known member as the sender is dropped unread
    /// (counted as `receiveQueueDrops`): the loop keeps up with a flood of junk or invented peers
    /// by reading it without handling it, and an honest command waits behind at most that many
    /// strangers. (Under the 20,000/s flood of `coplay-bench flood --seconds 20`, the honest
    /// pause's p99 was 94 ms at 50% and 25 ms at 12% with the receive threads of old; 4.3 ms at
    /// 12% with the event loop.)
    public var receiveQueueStrangersPercent = 12
    /// Strangers' hellos past that share are set aside, up to this many, and handled at the end
    /// of the turn if the socket emptied before the turn's reads ran out (nothing honest waited
    /// behind them); only under real pressure are they dropped. Agents starting together are
    /// strangers to each other: among 64, up to 63 answers to an agent's hello and 126 clock
    /// probes can wait on its unicast socket at once, and in 2 of 11 runs of `coplay-bench scale`
    /// a hello dropped for the share left an agent without a peer for 0.6–0.9 s. Other
    /// strangers' datagrams past the share are dropped as before (a lost probe is sent again).
    public var receiveQueueStrangersDeferredMax = 128
    /// Standard-input lines read and not yet processed: the reader waits at this many, so a fast
    /// writer is slowed down rather than losing lines.
    public var inputLinesQueuedMax = 256
    /// Clients of the control socket (`--control`) at once: a person, `coplay ctl --watch` and a
    /// few scripts; each has a reading thread and a send buffer, so a runaway script that opens
    /// connections in a loop is refused past this rather than exhausting threads.
    public var controlClientsMax = 8
    /// Lines of one control client queued and not yet handled: its reading then waits
    /// (backpressure on that client only, nothing lost), so it cannot crowd out the others.
    public var controlLinesQueuedMax = 16
    /// Event output a control client may fall behind by (the socket's send buffer); a client
    /// that does not read is disconnected at this rather than slowing the agent or growing
    /// its memory. 256 KiB is over a thousand events.
    public var controlClientBufferBytes = 256 * 1024
    /// A line from an external player (mpv's IPC, a delegating player) longer than this is cut
    /// and ignored: mpv's replies are a few hundred bytes, a property list a few KiB.
    public var playerLineBytesMax = 64 * 1024
    /// Player lines queued, not yet handled; more are dropped and counted (a flood grows no memory).
    public var playerLinesQueuedMax = 1024
    /// Live items: where a start lands, and the bounds of reading a live playlist (`LiveSettings`).
    public var live = LiveSettings()
    /// Requests to an external player awaiting their reply; the oldest is forgotten beyond this
    /// (a player that never answers cannot grow the table).
    public var playerRequestsMax = 64
    /// The longest error text from a delegating player that is shown (the rest is cut).
    public var playerErrorBytesMax = 512
    /// mpv's second players (interstitials) asked to end and not yet reaped, at most: each new
    /// interstitial ends the one before, so a stream of them (a member's commands come from the
    /// network) could otherwise start processes faster than they exit. Past it an interstitial is
    /// not shown: it ends at once here, with a `player-error` saying why (`interstitialFailed`).
    public var interstitialPlayersEndingMax = 4
    /// mpv's `video-timing-offset` under coplay (mpv's own is 50 ms): how long before a frame's
    /// time its video output renders it, and then blocks until that time; a `loadfile` or a seek
    /// waits for it. The first lines of `coplay-bench queue` time a `loadfile` right after a pause,
    /// p50 22 ms at 50 ms and 6 ms at 10 ms; 10 ms is still ample for a frame's rendering.
    public var mpvVideoTimingOffset: Duration = .milliseconds(10)
    /// How long an exiting agent waits for the mpv it started (and the interstitials' mpvs) to
    /// quit: mpv writes its watch-later state and closes its window within this.
    public var mpvQuitPatience: Duration = .seconds(2)
    /// How often mpv's second players (interstitials) are looked at: has one failed, have the
    /// ended ones exited.
    public var mpvProcessCheckInterval: Duration = .milliseconds(100)
    /// How a player follows the group's timeline: starts, seeks, samples, skips (`PlayerFollower`).
    public var follower = FollowerSettings()
    /// Diagnostics about dropped datagrams: the first `dropDiagnosticsFirst` of each kind, then
    /// one in `dropDiagnosticEvery` (a flood must not become a flood of lines).
    public var dropDiagnosticsFirst = 3
    public var dropDiagnosticEvery = 1000

    public init() {}
}
