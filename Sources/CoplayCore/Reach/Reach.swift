/// Reaching members where multicast does not: across a VPN, or on a Wi-Fi network that filters
/// multicast. Each group datagram (hello, heartbeat, command, ready, …) is also sent by unicast
/// to the `--peer` seeds, to endpoints other members named in a `peer-list`, and to members
/// heard only by unicast; and members reached that way are told, every `peerListInterval`,
/// whom this agent knows, so a group whose agents each know one seed still forms a whole.
///
/// Without seeds this machine is idle — an agent stays multicast-only, sending nothing extra —
/// until another agent reaches it by unicast (a hello or heartbeat that is not a reply arrives
/// on its unicast socket: it is someone's seed) or a member sends it a peer list. A member
/// heard over multicast within `multicastHeardWindow` gets no unicast copies, so a group on a
/// LAN where multicast works sends each datagram once.
///
/// Bounded: at most `gossipedEndpointsMax` named endpoints, each kept `gossipedEndpointLifetime`
/// unless it becomes a member; peer lists are accepted only from members (with a group key,
/// authentic ones), so a stranger cannot point this agent's traffic at anyone.
struct Reach: Sendable {
    enum Output: Hashable, Sendable {
        /// Send these members, with the endpoints this agent reaches them at, to one it reaches
        /// by unicast.
        case peerList([PeerEntry], to: Endpoint)
    }

    @inline(__always) var settings: Settings { sharedSettings.value }
    private let sharedSettings: SharedSettings
    /// `--peer` endpoints, as given.
    let seeds: [Endpoint]
    /// Whether unicast reach is in use (seeds, or another agent reached this one by unicast).
    private(set) var isActive: Bool
    /// Endpoints named in members' peer lists that are not members yet, each with when it is
    /// forgotten unless it becomes one.
    private(set) var named: [Endpoint: MonotonicInstant] = [:]
    /// When each member was last heard over multicast.
    private var heardByMulticast: [PeerID: MonotonicInstant] = [:]
    private var nextPeerListAt: MonotonicInstant?
    /// Where the leave datagram's copies go after leaving (the peer table is emptied then).
    private(set) var farewell: [Endpoint] = []

    init(settings: Settings, seeds: [Endpoint]) {
        self.sharedSettings = SharedSettings(settings)
        self.seeds = seeds
        isActive = !seeds.isEmpty
    }

    /// A datagram from a member arrived; `viaGroup` if on the multicast socket. `unsolicited`:
    /// a hello or heartbeat that is not a reply (only an agent that has this one as a seed, or
    /// heard of it in a peer list, sends those by unicast).
    mutating func heard(_ peer: PeerID, viaGroup: Bool, unsolicited: Bool, at now: MonotonicInstant) {
        if viaGroup {
            // Bounded by the peer table: entries go with the peer (`onPeerLeft`).
            heardByMulticast[peer] = now
        } else if unsolicited, !isActive {
            isActive = true
            nextPeerListAt = now
        }
    }

    mutating func onPeerJoined(at now: MonotonicInstant) {
        // Tell the others soon: the newcomer may be the only link between two parts.
        if isActive { nextPeerListAt = min(nextPeerListAt ?? now, now + settings.peerListJoinDelay) }
    }

    mutating func onPeerLeft(_ peer: PeerID) { heardByMulticast[peer] = nil }

    /// A member's peer list, heard from `source`: the entries that are not members here yet (nor
    /// this agent) become unicast destinations for a while. Only endpoints of the address family
    /// the list came by (the group's) can be reached; the relay is no endpoint a peer list may
    /// name (each agent reaches the relay itself).
    mutating func onPeerList(
        _ entries: [PeerEntry], from source: Endpoint, own: PeerID, members: [PeerID: PeerRecord],
        at now: MonotonicInstant
    ) {
        if !isActive {
            isActive = true
            nextPeerListAt = now
        }
        let memberEndpoints = Set(members.values.map({ $0.endpoint }))
        for entry in entries
        where entry.member.id != own && members[entry.member.id] == nil && !memberEndpoints.contains(entry.endpoint)
            && !entry.endpoint.isRelay && entry.endpoint.address.isIPv4 == source.address.isIPv4
        {
            guard named[entry.endpoint] != nil || named.count < settings.gossipedEndpointsMax else { continue }
            named[entry.endpoint] = now + settings.gossipedEndpointLifetime
        }
    }

    /// Where each group datagram also goes by unicast now, in a fixed order.
    func destinations(members: [PeerID: PeerRecord], now: MonotonicInstant) -> [Endpoint] {
        guard isActive else { return [] }
        var reachedByMulticast: Set<Endpoint> = []
        var targets: Set<Endpoint> = Set(seeds).union(named.lazy.filter { $0.value > now }.map({ $0.key }))
        // A member reached through the relay gets each group datagram there already.
        for (id, record) in members where !record.endpoint.isRelay {
            if let heard = heardByMulticast[id], now - heard <= settings.multicastHeardWindow {
                reachedByMulticast.insert(record.endpoint)
            } else {
                targets.insert(record.endpoint)
            }
        }
        return targets.subtracting(reachedByMulticast).ordered()
    }

    /// Due peer lists: to each member reached by unicast, the members this agent knows (at most
    /// `WireFormat.peerListEntriesMax`, the most recently heard first). Forgets named endpoints
    /// that became members or whose time is up.
    mutating func tick(members: [PeerID: PeerRecord], now: MonotonicInstant) -> [Output] {
        // Idle (a group on one multicast segment): no work at all, whatever the group's size.
        guard isActive else { return [] }
        if !named.isEmpty {
            let memberEndpoints = Set(members.values.map({ $0.endpoint }))
            named = named.filter { $0.value > now && !memberEndpoints.contains($0.key) }
        }
        guard let due = nextPeerListAt, now >= due else { return [] }
        nextPeerListAt = now + settings.peerListInterval
        let reached = Set(destinations(members: members, now: now))
        let entries = members.values.filter { !$0.endpoint.isRelay }.ordered {
            ($0.lastHeard, $0.member.id.rawValue) > ($1.lastHeard, $1.member.id.rawValue)
        }
        .prefix(WireFormat.peerListEntriesMax).map { PeerEntry(member: $0.member, endpoint: $0.endpoint) }
        guard entries.count > 1 else { return [] }  // a list of only the receiver tells it nothing
        return members.values.filter { reached.contains($0.endpoint) }.map({ $0.endpoint })
            .ordered()
            .map { endpoint in .peerList(entries.filter { $0.endpoint != endpoint }, to: endpoint) }
    }

    /// Leaving: the leave and its repeats still go to whoever was reached by unicast.
    mutating func onLeave(members: [PeerID: PeerRecord], now: MonotonicInstant) {
        farewell = destinations(members: members, now: now)
        named.removeAll()
        heardByMulticast.removeAll()
        nextPeerListAt = isActive ? now : nil
    }

    var nextWake: MonotonicInstant? {
        guard isActive else { return nil }
        return [nextPeerListAt, named.values.min()].compactMap { $0 }.min()
    }

    /// Each group datagram of `directives`, preceded by its unicast copies: for the members
    /// multicast does not reach (`farewell`'s once this agent has left), and, of a time-critical
    /// datagram (a command, a ready, an end), for the members whose multicast is slow or lossy
    /// (`unicastWanted`, announced by them: `MulticastPath`; at most `unicastFanOutMax`, and none
    /// reached through the relay, which already carries the group's copy to them by TCP). The
    /// directives unchanged when neither is in use, as on a wired LAN.
    func withUnicastCopies(
        _ directives: [Directive], members: [PeerID: PeerRecord], isJoined: Bool, unicastWanted: Set<PeerID>,
        now: MonotonicInstant
    ) -> [Directive] {
        guard isActive || (isJoined && !unicastWanted.isEmpty),
            directives.contains(where: { $0.toGroup != nil })
        else { return directives }
        let destinations = isActive ? (isJoined ? self.destinations(members: members, now: now) : farewell) : []
        // Looked up only for an input that multicasts something time-critical: most inputs (a
        // heartbeat heard, a probe answered) do not, and this runs for every one.
        let critical =
            isJoined && !unicastWanted.isEmpty
            && directives.contains { $0.toGroup?.payload.isTimeCritical ?? false }
        let prompt =
            critical
            ? unicastWanted.ordered().compactMap { members[$0]?.endpoint }.filter { !$0.isRelay }
                .prefix(settings.unicastFanOutMax).filter { !destinations.contains($0) } : []
        guard !destinations.isEmpty || !prompt.isEmpty else { return directives }
        return directives.flatMap { directive -> [Directive] in
            guard let datagram = directive.toGroup else { return [directive] }
            let copies = datagram.payload.isTimeCritical ? destinations + prompt : destinations
            // The copies go first: a station's uplink is one queue, and a frame held there by
            // retries holds every frame behind it. The multicast frame waits for the next DTIM
            // beacon at the access point anyway, so queued last it loses nothing, and queued
            // first it would be one more frame the copies could wait behind.
            return copies.map { .unicast(datagram, to: $0) } + [directive]
        }
    }
}

extension Directive {
    /// The datagram of a directive for the whole group: a multicast, or a copy for the LAN's
    /// group alone (`Endpoint.lanGroup`). Both get the unicast copies.
    var toGroup: Datagram? {
        switch self {
        case .multicast(let datagram): datagram
        case .unicast(let datagram, let endpoint) where endpoint == .lanGroup: datagram
        default: nil
        }
    }
}
