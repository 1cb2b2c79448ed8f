// An instance on a LAN, as a native agent is: datagrams to and from an address and port, read
// in turns. A browser has no UDP: the page's participants are relayed (`coplay_create_relayed`,
// `coplay_relay_frame`). These entry points are the test module's only (Tools/web/smoke.mjs's
// pair, the golden events), which keeps them out of what a phone downloads.

/// A new instance; returns its handle, -2 for a port outside 1-65535 or a name or session too
/// long, -3 when the module holds `participantsMax` participants.
@_cdecl("coplay_create")
public func coplayCreate(
    _ id: UInt64, _ seed: UInt64, _ port: Int32, _ name: UnsafePointer<UInt8>?, _ nameCount: Int32,
    _ session: UnsafePointer<UInt8>?, _ sessionCount: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    guard (1...65535).contains(port), let (name, session) = names(name, nameCount, session, sessionCount) else {
        return -2
    }
    guard participants.count < participantsMax else { return -3 }
    let identity = LocalIdentity(
        id: PeerID(id), name: name, sessionName: session, unicastPort: UInt16(port), playerKind: "web")
    participants.append(Participant(Instance(identity: identity, seed: seed, now: timestamp(mono, wall))))
    return Int32(participants.count - 1)
}

/// A turn of reading datagrams begins (`ReceiveTurn`: the stranger quota), as the agent's socket
/// loop begins one.
@_cdecl("coplay_receive_turn_begin") public func coplayReceiveTurnBegin(_ handle: Int32) {
    guard let participant = participant(handle) else { return }
    participant.turn = participant.instance.beginReceiveTurn()
}

/// The turn ends; `drained`: every datagram waiting was read (then the hellos set aside are).
@_cdecl("coplay_receive_turn_end")
public func coplayReceiveTurnEnd(_ handle: Int32, _ drained: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    let now = timestamp(mono, wall)
    guard let participant = participant(handle), let turn = participant.turn else { return 0 }
    participant.turn = nil
    return carry(participant.instance.endReceiveTurn(turn, drained: drained != 0, now: now), handle, now)
}

/// A datagram from IPv4 `address`:`port`, in the turn begun (or a turn of its own).
@_cdecl("coplay_datagram")
public func coplayDatagram(
    _ handle: Int32, _ pointer: UnsafePointer<UInt8>?, _ count: Int32, _ address: UInt32, _ port: Int32,
    _ viaGroup: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    let source = Endpoint(address: address, port: UInt16(truncatingIfNeeded: port))
    guard let participant = participant(handle) else { return 0 }
    let data = bytes(pointer, count)
    let directives: [Directive]
    if var turn = participant.turn {
        directives = participant.instance.onDatagram(
            data[...], from: source, receivedAt: now, now: now, viaGroup: viaGroup != 0, turn: &turn)
        participant.turn = turn
    } else {
        directives = participant.instance.onDatagram(
            data, from: source, receivedAt: now, now: now, viaGroup: viaGroup != 0)
    }
    return carry(directives, handle, now)
}
