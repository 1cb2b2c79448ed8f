/// The router's part of a party with an audience (`Audience`, `AudienceSettings`): where a
/// viewer's announcements and commands go, what the stage's speaker owes the audience, and what a
/// stage member takes from a viewer.
extension Instance {
    /// Whether this stage member is the stage's speaker (`Audience.speaker`): it beacons to the
    /// audience, answers viewers' hellos and carries the stage's commands to them.
    var isSpeaker: Bool {
        relay != nil && !audience.isViewer
            && Audience.speaker(own: member, ownSeated: audience.seatedByGrant, peers: membership.peers.values)
                == member
    }

    /// The stage member a viewer follows: the earliest of the speakers it hears.
    var anchor: PeerRecord? {
        guard let anchor = Audience.anchor(among: membership.peers.values) else { return nil }
        return membership.peers[anchor.id]
    }

    /// This agent's announcement, made now (`Membership` says when): a stage member's to the group
    /// (on the relay, the stage's subject); a viewer's to its anchor alone when it has something to
    /// tell it (`Audience.heartbeatDue`: its probes keep it counted), or, before it has an anchor,
    /// a hello to the stage's speaker, which answers it.
    @inline(never) mutating func announce(isHello: Bool) {
        let announcement = announcement(isReply: false)
        guard audience.isViewer else {
            return out.append(.multicast(stamp(isHello ? .hello(announcement) : .heartbeat(announcement))))
        }
        if let anchor, !isHello {
            guard audience.heartbeatDue(to: anchor.member, delivered: counters.commandsDelivered, now: now.monotonic)
            else {
                return
            }
            out.append(.unicast(stamp(.heartbeat(announcement)), to: anchor.endpoint))
        } else {
            out.append(.unicast(stamp(.hello(announcement)), to: .relaySpeaker))
        }
    }

    /// A viewer's hello or heartbeat, heard by a stage member: counted in the table of viewers, never
    /// taken into membership; a hello that answers nothing is answered by the speaker alone (so a
    /// joining viewer follows one stage member, not all of them). A viewer ignores other viewers.
    ///
    /// A viewer that asks for a seat (`Announcement.seat`) is granted one by the speaker while the
    /// stage has room (`Audience.grantSeat`): in the answer to its hello, or, to one that asks in
    /// a heartbeat (it found its anchor by a beacon before its hello was answered, or the stage
    /// was full when it joined and a seat came free), in a reply sent for the grant alone.
    @inline(never) mutating func onViewerAnnouncement(
        _ announcement: Announcement, isHello: Bool, from sender: Member, at source: Endpoint,
        heardAt: MonotonicInstant
    ) {
        // A member of the stage is never a viewer too (its commands' times are its own clock's).
        // Whether this member speaks is asked only when it matters (a hello, a seat asked for): a
        // viewer's routine heartbeat, thousands a second at a large party, does not walk the stage.
        let speaks = (isHello || announcement.seat) && isSpeaker
        guard !audience.isViewer, source.isRelay, !membership.isKnown(sender), isHello ? speaks : true else {
            return
        }
        if !audience.heard(sender, digest: announcement.digest, at: heardAt) { counters.viewersRefused += 1 }
        let granted =
            speaks && announcement.seat && !announcement.isReply
            && audience.grantSeat(to: sender, stageCount: membership.peers.count + 1, now: heardAt)
        if granted { counters.seatsGranted += 1 }
        // Answered even when the table is full: the viewer then follows, uncounted (and cannot ask
        // for the state: the gate admits only counted viewers' requests). One answer per hello.
        if isHello ? !announcement.isReply : granted {
            out.append(
                .unicast(stamp(.hello(self.announcement(isReply: true, grants: granted))), to: .relay(sender.id)))
        }
    }

    /// A stage member's announcement, heard by a viewer that wants a seat: it has a stage (it does
    /// not seat itself), and when the announcement answers its hello with a seat, it takes it.
    @inline(never) mutating func onStageAnnouncement(
        _ announcement: Announcement, from sender: Member, at source: Endpoint
    ) {
        guard audience.wantsSeat, source.isRelay, membership.isKnown(sender) else { return }
        audience.heardStage()
        if announcement.seat, announcement.isReply { return takeSeat(byGrant: true) }
        // It found the stage by a beacon (the stage formed after its hellos went unanswered): it
        // asks now, not at its next heartbeat, 2 s away.
        if !announcement.isReply, audience.asksForSeat(of: sender) { announceNow() }
    }

    /// This viewer takes a seat on the stage (granted, or its own when it heard no stage for
    /// `AudienceSettings.seatWait`): a stage member's settings from now on, the stage's subject
    /// subscribed, and the join's hellos to the stage, whose members take it into their tables as
    /// they would any joiner. Its peers, its clocks and its log stay: it follows as it did.
    @inline(never) mutating func takeSeat(byGrant: Bool) {
        guard audience.wantsSeat, let seatSettings else { return }
        audience.seated(byGrant: byGrant, now: now.monotonic)
        sharedSettings = seatSettings
        clockSync.takeSeat(seatSettings)
        out.append(.resubscribe)
        out.append(.diagnose("in the group in full now (it joined as a viewer)"))
        membership.takeSeat(seatSettings, now: now.monotonic, random: &random)
        routeMembership(membership.tick(now: now.monotonic, random: &random), at: now.monotonic, source: nil)
    }

    /// A command this agent issued: to the group. On the relay, the speaker's goes to the group's
    /// subject; another stage member's to the stage's alone, and the speaker carries it on to the
    /// audience on its own clock (`carryToAudience`): a viewer, which knows the speaker's clock
    /// alone, would only hold the original until the carried copy came, and opening both cost a
    /// thousand tabs twice the work of one command. From a viewer: to its anchor alone, with its
    /// times on the anchor's clock (a viewer's clock is known to nobody), and the anchor carries
    /// it on. A viewer that follows nobody yet has no one to carry it: it stays here, and the next
    /// digest it hears says it is missing.
    @inline(never) mutating func sendCommand(_ envelope: CommandEnvelope) {
        guard audience.isViewer else {
            let datagram = stamp(.command(envelope, isRepair: false))
            guard relay != nil, !isSpeaker else { return out.append(.multicast(datagram)) }
            out.append(.unicast(datagram, to: .lanGroup))
            out.append(.unicast(datagram, to: .relayStage))
            return
        }
        guard let anchor,
            let offset = clockSync.liveEstimate(of: anchor.member.id, at: now.monotonic)?.offsetNanos
        else { return }
        var onAnchorClock = envelope
        onAnchorClock.command.operation = envelope.command.operation.shifted(by: offset)
        out.append(.unicast(stamp(.command(onAnchorClock, isRepair: false)), to: anchor.endpoint))
    }

    /// The offset of a command's sender as ordering converts its times: a viewer in this stage
    /// member's table put them on this agent's clock already (`sendCommand`).
    func commandOffset(of sender: Member) -> Int64? {
        if audience.isViewer(sender), !membership.isKnown(sender) { return 0 }
        return clockSync.liveEstimate(of: sender.id, at: now.monotonic)?.offsetNanos
    }

    /// Commands delivered here that the audience must hear from this agent, with their times on
    /// its clock: by the speaker, every other stage member's (a viewer knows the speaker's clock
    /// alone); by any stage member, a viewer's that it carries. History (a catch-up) is not
    /// carried: the audience has it or asks for it.
    @inline(never) mutating func carryToAudience(_ batch: [Ordering.Delivered]) {
        guard relay != nil, !audience.isViewer else { return }
        let speaks = isSpeaker
        for delivered in batch where delivered.envelope.dot.origin != member {
            guard speaks || audience.isViewer(delivered.envelope.dot.origin) else { continue }
            counters.commandsCarried += 1
            out.append(.unicast(stamp(.command(delivered.envelope, isRepair: false)), to: .relayEveryone))
        }
    }

    /// The speaker's beacon when due, and the table's expiry. A viewer that wants a seat and
    /// follows nobody listens for a stage, and takes a seat itself when it heard none in time. A
    /// stage member that begins or stops speaking subscribes to the viewers' hellos, or leaves them.
    @inline(never) mutating func audienceTick() {
        audience.tick(now: now.monotonic)
        let speaks = isSpeaker
        if speaks != audience.hearsHellos {
            audience.hearsHellos = speaks
            out.append(.resubscribe)
        }
        // The viewers that asked while this member settled on the stage, answered now.
        for viewer in audience.settledAsks(now: now.monotonic)
        where speaks && audience.grantSeat(to: viewer, stageCount: membership.peers.count + 1, now: now.monotonic) {
            counters.seatsGranted += 1
            out.append(.unicast(stamp(.hello(announcement(isReply: true, grants: true))), to: .relay(viewer.id)))
        }
        if audience.wantsSeat {
            if anchor != nil {
                audience.heardStage()
            } else {
                audience.listenForStage(now: now.monotonic, random: &random)
                if let due = audience.seatAt, due <= now.monotonic {
                    counters.seatsTakenAlone += 1
                    takeSeat(byGrant: false)
                }
            }
        }
        if audience.beaconDue(isSpeaker: speaks, now: now.monotonic) {
            out.append(.unicast(stamp(.heartbeat(announcement(isReply: false))), to: .relayEveryone))
        }
        if relay != nil,
            let summary = audience.summaryDue(isSpeaker: speaks, now: now.monotonic, isMember: membership.isKnown)
        {
            out.append(.unicast(stamp(.audience(summary)), to: .relayEveryone))
        }
    }

    /// The speaker's summary of the audience (`AudienceSummary`; the gate admits members' alone):
    /// a stage member keeps the sender's count toward the total; a viewer keeps its anchor's
    /// total, and no other's (a speaker it followed before says its own view).
    @inline(never) mutating func onAudienceSummary(
        _ summary: AudienceSummary, from sender: Member, at heardAt: MonotonicInstant
    ) {
        guard !audience.isViewer || anchor?.member == sender else { return }
        audience.heardSummary(summary, from: sender, at: heardAt)
    }

    /// How many watch the party, as this participant knows it (`Audience.watching`).
    public var watching: Int? { watchingNow() }

    @inline(never) private func watchingNow() -> Int? {
        guard relay != nil else { return nil }
        return audience.watching(now: now.monotonic, speaks: isSpeaker, isMember: membership.isKnown)
    }
}
