/// One turn of reading a socket: the stranger quota.
///
/// A shell reads the datagrams waiting on a socket in turns (at most
/// `Settings.receiveQueueDatagramsMax`, for at most `receiveTurnDurationMax`, so that its other
/// inputs and timers are not held back) and hands each to `Instance.onDatagram(_:…turn:)` with
/// the turn's `ReceiveTurn`. Honest traffic goes first: past `receiveQueueStrangersPercent` of a
/// turn, a datagram whose header does not claim a live peer as its sender is dropped unread
/// (counted as `Counters.receiveQueueDrops`), so that a flood of junk and invented peers cannot
/// crowd out the group's own commands; a forged claim is still checked when decoded. A stranger's
/// hello past the quota is set aside instead (at most `receiveQueueStrangersDeferredMax`), and
/// handled when the shell ends the turn with the socket emptied (`Instance.endReceiveTurn`): a
/// newcomer behind a crowd is still admitted when the loop keeps up.
public struct ReceiveTurn: Sendable {
    /// Strangers read so far in this turn.
    var strangers = 0
    /// Hellos past the quota, waiting for the turn's end (at most `deferredMax`).
    var deferred: [(bytes: [UInt8], source: Endpoint, receivedAt: Timestamp, viaGroup: Bool)] = []
    let strangersMax: Int
    let deferredMax: Int

    init(settings: Settings) {
        strangersMax = settings.receiveQueueDatagramsMax * settings.receiveQueueStrangersPercent / 100
        deferredMax = settings.receiveQueueStrangersDeferredMax
    }

    /// What to do with a datagram whose header claims `claim`.
    enum Verdict { case read, setAside, drop }

    mutating func judge(isStranger: Bool, isHello: Bool) -> Verdict {
        guard isStranger else { return .read }
        strangers += 1
        guard strangers > strangersMax else { return .read }
        return isHello && deferred.count < deferredMax ? .setAside : .drop
    }
}

extension Instance {
    /// A new turn of reading a socket (see `ReceiveTurn`).
    public func beginReceiveTurn() -> ReceiveTurn { ReceiveTurn(settings: settings) }

    /// One datagram read from a socket in `turn` (the shell's receive buffer, copied only if it
    /// is read or set aside: a flood's strangers cost no allocation). `receivedAt` is when the
    /// shell's receive loop got it (the kernel's timestamp where there is one); `now` is when this
    /// handler runs; `viaGroup` whether it came to the multicast socket rather than to this agent
    /// alone. A source in the relay's block (RFC 6666's discard-only prefix) is no network's: a
    /// datagram from one on a socket is forged, and dropped and counted.
    public mutating func onDatagram(
        _ bytes: ArraySlice<UInt8>, from source: Endpoint, receivedAt: Timestamp, now: Timestamp, viaGroup: Bool,
        turn: inout ReceiveTurn
    ) -> [Directive] {
        guard !source.isRelay else {
            reportDrop(.forgedSource, detail: "a relay endpoint on a socket", from: source)
            return drain()
        }
        let claim = stranger(bytes)
        switch turn.judge(isStranger: claim.isStranger, isHello: claim.isHello) {
        case .read:
            return onDatagram(Array(bytes), from: source, receivedAt: receivedAt, now: now, viaGroup: viaGroup)
        case .setAside:
            turn.deferred.append((Array(bytes), source, receivedAt, viaGroup))
        case .drop:
            counters.receiveQueueDrops += 1
        }
        return []
    }

    /// The turn is over: `drained` when the socket emptied within it, so the hellos set aside
    /// held nothing back and are handled now; otherwise they are dropped and counted.
    public mutating func endReceiveTurn(_ turn: ReceiveTurn, drained: Bool, now: Timestamp) -> [Directive] {
        guard drained else {
            counters.receiveQueueDrops += Int64(turn.deferred.count)
            return []
        }
        return turn.deferred.flatMap {
            onDatagram($0.bytes, from: $0.source, receivedAt: $0.receivedAt, now: now, viaGroup: $0.viaGroup)
        }
    }

    /// Whether a received datagram, its header read but not yet decoded, claims a sender that is
    /// no live peer; `isHello`: it claims to be a hello, which a stranger joining sends.
    func stranger(_ header: ArraySlice<UInt8>) -> (isStranger: Bool, isHello: Bool) {
        guard let claim = WireFormat.claimedSender(of: header), membership.peers[PeerID(claim)] != nil else {
            return (true, WireFormat.claimedType(of: header) == .hello)
        }
        return (false, false)
    }
}
