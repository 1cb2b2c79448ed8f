// The core's entry points for a JavaScript shell (the browser page): C-ABI functions over
// linear memory. Inputs: a new instance, its start, a datagram, a relay frame, a tick, a
// console line. Each returns the length of its outputs, which the shell reads from
// `coplay_output()`: records of [kind u8][length u32 LE][bytes]. Kinds: 1 a datagram to the
// group; 2 a datagram to an endpoint (16-byte address, port u16 LE, then the bytes); 3 a
// frame to publish (subject length u16 LE, subject, frame); 4 an event (its name, a space,
// then what it concerns); 5 a diagnostic; 6 the wake instant (i64 LE, monotonic ns); 7 exit;
// 8 a relay subject to subscribe to; 9 a command for the player (`PlayerRecord`), whose reports
// come back through `coplay_player_report`; 10 the view (`coplay_view`, JSON).

/// One participant of the module: the instance lives in a box, so that each call changes it in
/// place (a copy of an `Instance` in and out of the table on every call cost time and 20 KB).
final class Participant {
    var instance: Instance
    init(_ instance: Instance) { self.instance = instance }
}

nonisolated(unsafe) var participants: [Participant] = []

/// The participant of a handle the page got: an entry point called with another does nothing
/// and returns 0, rather than trap.
func participant(_ handle: Int32) -> Participant? {
    participants.indices.contains(Int(handle)) ? participants[Int(handle)] : nil
}
nonisolated(unsafe) var output: [UInt8] = []

/// The page's player (an HTMLVideoElement) is on the far side of the C-ABI: each command goes out
/// as a record and it reports later, through `coplay_player_report`.
struct PagePlayer: PlayerLoop.Player {
    mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        append(9, PlayerRecord.encode(command))
        return []
    }
}

/// A player command as bytes: its code, then its fields, little-endian (f64 positions and
/// rates, i64 wall instants in ns). 1 load: position, duration (NaN: unknown), id length u16, id,
/// url. 2 prepare: position. 3 play: rate, position, at. 4 adjust rate: rate, at. 5 pause:
/// position. 6 unload. 7 interstitial: duration, id length u16, id, url. 8 end the interstitial.
/// (A simulated stall is for the simulated player: a page's player ignores it.)
enum PlayerRecord {
    static func encode(_ command: PlayerCommand) -> [UInt8] {
        func double(_ value: Double) -> [UInt8] { littleEndian(value.bitPattern, bytes: 8) }
        func instant(_ at: WallInstant) -> [UInt8] { littleEndian(UInt64(bitPattern: at.unixNanos), bytes: 8) }
        func string(_ text: String) -> [UInt8] {
            let bytes = Array(text.utf8)
            return littleEndian(UInt64(bytes.count), bytes: 2) + bytes
        }
        switch command {
        case .load(let item, let position):
            return [1] + double(position) + double(item.durationSeconds ?? .nan) + string(item.id)
                + Array(item.url.utf8)
        case .prepare(let position): return [2] + double(position)
        case .play(let rate, let position, let at): return [3] + double(rate) + double(position) + instant(at)
        case .adjustRate(let rate, let at): return [4] + double(rate) + instant(at)
        case .pause(let position): return [5] + double(position)
        case .unload: return [6]
        case .simulateStall: return [0]
        case .interstitial(let interstitial):
            return [7] + double(interstitial.durationSeconds) + string(interstitial.id) + Array(interstitial.url.utf8)
        case .endInterstitial: return [8]
        }
    }
}

func timestamp(_ mono: Int64, _ wall: Int64) -> Timestamp {
    Timestamp(monotonic: MonotonicInstant(nanos: mono), wall: WallInstant(unixNanos: wall))
}

func bytes(_ pointer: UnsafePointer<UInt8>?, _ count: Int32) -> [UInt8] {
    guard let pointer, count > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: Int(count)))
}

func text(_ pointer: UnsafePointer<UInt8>?, _ count: Int32) -> String {
    String(decoding: bytes(pointer, count), as: UTF8.self)
}

func append(_ kind: UInt8, _ payload: [UInt8]) {
    output.append(kind)
    let count = UInt32(payload.count)
    for shift in stride(from: 0, to: 32, by: 8) { output.append(UInt8(truncatingIfNeeded: count >> UInt32(shift))) }
    output += payload
}

func littleEndian(_ value: UInt64, bytes count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * $0)) }
}

/// Carries out `directives` into the output buffer; returns its length.
func carry(_ directives: [Directive], _ handle: Int32, _ now: Timestamp) -> Int32 {
    output.removeAll(keepingCapacity: true)
    guard let participant = participant(handle) else { return 0 }
    var player = PagePlayer()
    let outcome = PlayerLoop.carryOut(
        directives, instance: &participant.instance, player: &player, now: { now },
        carry: { step in
            switch step {
            case .datagram(let datagram, nil): append(1, datagram)
            case .datagram(let datagram, let to?):
                append(
                    2,
                    littleEndian(to.address.high, bytes: 8) + littleEndian(to.address.low, bytes: 8)
                        + littleEndian(UInt64(to.port), bytes: 2) + datagram)
            case .publish(let frame, let subject):
                let name = Array(subject.utf8)
                append(3, littleEndian(UInt64(name.count), bytes: 2) + name + frame)
            case .emit(let event): append(4, Array(EventJSON.object(event).utf8))
            case .diagnose(let line): append(5, Array(line.utf8))
            case .wake(let at): append(6, littleEndian(UInt64(bitPattern: at.nanos), bytes: 8))
            }
        })
    if outcome.exitStatus != nil { append(7, []) }
    return Int32(output.count)
}

@_cdecl("coplay_output") public func coplayOutput() -> UnsafePointer<UInt8>? {
    output.withUnsafeBufferPointer { $0.baseAddress }
}

@_cdecl("coplay_alloc") public func coplayAlloc(_ count: Int32) -> UnsafeMutablePointer<UInt8> {
    UnsafeMutablePointer<UInt8>.allocate(capacity: Int(max(count, 1)))
}

@_cdecl("coplay_dealloc") public func coplayDealloc(_ pointer: UnsafeMutablePointer<UInt8>?) { pointer?.deallocate() }

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

/// Participants one module holds at most: a page makes one (and one more after each trap), the
/// crowd test a hundred; the table does not grow past this.
let participantsMax = 1024

/// The name and session a page gave, within what the core takes (`Settings.nameBytesMax`,
/// `sessionNameBytesMax`, counted after bytes that are not UTF-8 became U+FFFD); nil otherwise.
/// The core's initializer requires it: a longer name would trap the module, and a page that
/// restarts after a trap would trap again.
func names(_ name: UnsafePointer<UInt8>?, _ nameCount: Int32, _ session: UnsafePointer<UInt8>?, _ sessionCount: Int32)
    -> (String, String)?
{
    let settings = Settings()
    guard nameCount >= 0, sessionCount >= 0, Int(nameCount) <= settings.nameBytesMax,
        Int(sessionCount) <= settings.sessionNameBytesMax
    else { return nil }
    let (name, session) = (text(name, nameCount), text(session, sessionCount))
    guard name.utf8.count <= settings.nameBytesMax, session.utf8.count <= settings.sessionNameBytesMax else {
        return nil
    }
    return (name, session)
}

/// A new instance of a keyed group that also travels through a relay (the browser's only path):
/// `key` the group key's 32 bytes or more, `entropy` 32 bytes from crypto.getRandomValues for the
/// relay's nonces. Returns its handle; -1 for a key or entropy of the wrong size, -2 for a name or
/// session too long, -3 when the module holds `participantsMax` participants.
@_cdecl("coplay_create_relayed")
public func coplayCreateRelayed(
    _ id: UInt64, _ seed: UInt64, _ name: UnsafePointer<UInt8>?, _ nameCount: Int32,
    _ session: UnsafePointer<UInt8>?, _ sessionCount: Int32, _ key: UnsafePointer<UInt8>?, _ keyCount: Int32,
    _ entropy: UnsafePointer<UInt8>?, _ mono: Int64, _ wall: Int64
) -> Int32 {
    guard keyCount >= 32, keyCount <= 256, entropy != nil else { return -1 }
    guard let (name, session) = names(name, nameCount, session, sessionCount) else { return -2 }
    guard participants.count < participantsMax else { return -3 }
    // A tab has no unicast socket, and an announcement must name a port (1-65535): it names
    // 9, the discard port. It is heard only through the relay, so no peer forms a LAN endpoint
    // from it (PROTOCOL.md, "Browser participants").
    let identity = LocalIdentity(id: PeerID(id), name: name, sessionName: session, unicastPort: 9, playerKind: "web")
    participants.append(
        Participant(
            Instance(
                identity: identity, seed: seed, now: timestamp(mono, wall), keys: [bytes(key, keyCount)],
                relayEntropy: bytes(entropy, 32))))
    return Int32(participants.count - 1)
}

/// The subjects to subscribe to, one record (kind 8) each.
@_cdecl("coplay_relay_subjects") public func coplayRelaySubjects(_ handle: Int32) -> Int32 {
    output.removeAll(keepingCapacity: true)
    for subject in participant(handle)?.instance.relaySubscriptions ?? [] {
        append(8, Array(subject.utf8))
    }
    return Int32(output.count)
}

/// A message from the relay on `subject`.
@_cdecl("coplay_relay_frame")
public func coplayRelayFrame(
    _ handle: Int32, _ subject: UnsafePointer<UInt8>?, _ subjectCount: Int32, _ frame: UnsafePointer<UInt8>?,
    _ frameCount: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    guard
        let directives = participant(handle)?.instance.onRelayFrame(
            bytes(frame, frameCount), subject: text(subject, subjectCount), receivedAt: now, now: now)
    else { return 0 }
    return carry(directives, handle, now)
}

@_cdecl("coplay_start") public func coplayStart(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    let now = timestamp(mono, wall)
    guard let directives = participant(handle)?.instance.start(now: now) else { return 0 }
    return carry(directives, handle, now)
}

@_cdecl("coplay_tick") public func coplayTick(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    let now = timestamp(mono, wall)
    guard let directives = participant(handle)?.instance.onTick(now: now) else { return 0 }
    return carry(directives, handle, now)
}

@_cdecl("coplay_console")
public func coplayConsole(_ handle: Int32, _ line: UnsafePointer<UInt8>?, _ count: Int32, _ mono: Int64, _ wall: Int64)
    -> Int32
{
    let now = timestamp(mono, wall)
    guard let directives = participant(handle)?.instance.onConsoleLine(text(line, count), now: now) else {
        return 0
    }
    return carry(directives, handle, now)
}

/// A datagram from IPv4 `address`:`port`.
@_cdecl("coplay_datagram")
public func coplayDatagram(
    _ handle: Int32, _ pointer: UnsafePointer<UInt8>?, _ count: Int32, _ address: UInt32, _ port: Int32,
    _ viaGroup: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    let source = Endpoint(address: address, port: UInt16(truncatingIfNeeded: port))
    guard
        let directives = participant(handle)?.instance.onDatagram(
            bytes(pointer, count), from: source, receivedAt: now, now: now, viaGroup: viaGroup != 0)
    else { return 0 }
    return carry(directives, handle, now)
}

/// What the page's player reported. `kind`: 1 ready, 2 stalled, 3 stall over, 4 ended (at
/// `position`); 5 a sample (`position` at wall instant `at`, moving at `rate`); 6 the person
/// pressed play (`rate`), 7 pause, 8 seeked (to `position`), 9 next, 10 previous; 11 it failed,
/// 12 it could not load the item, 13 the interstitial failed (`text` says how; for 12, a first
/// line naming a `PlaybackProblem`, such as `format`, says which kind of failure: the names the
/// socket protocol and the group's announcements use). Values out of range are refused as the
/// socket player's are: the call returns -1 and nothing changes.
@_cdecl("coplay_player_report")
public func coplayPlayerReport(
    _ handle: Int32, _ kind: Int32, _ position: Double, _ rate: Double, _ at: Int64,
    _ pointer: UnsafePointer<UInt8>?, _ count: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    let positionOK = position.isFinite && position >= 0 && position <= WireFormat.positionMax
    let report: PlayerReport
    switch kind {
    case 1, 2, 3, 4, 8:
        guard positionOK else { return -1 }
        switch kind {
        case 1: report = .ready(position: position)
        case 2: report = .stalled(position: position)
        case 3: report = .stallEnded(position: position)
        case 4: report = .ended(position: position)
        default: report = .userAction(.seek(position: position))
        }
    case 5:
        guard positionOK, rate.isFinite, rate >= 0, rate <= WireFormat.rateMax, WireFormat.wallNanosRange.contains(at)
        else { return -1 }
        report = .sample(position: position, rate: rate, at: WallInstant(unixNanos: at))
    case 6:
        guard rate.isFinite, rate >= WireFormat.rateMin, rate <= WireFormat.rateMax else { return -1 }
        report = .userAction(.play(rate: rate))
    case 7: report = .userAction(.pause)
    case 9: report = .userAction(.next)
    case 10: report = .userAction(.previous)
    case 11, 12, 13:
        let raw = bytes(pointer, min(count, 512))
        switch kind {
        case 11: report = .failed(String(decoding: raw, as: UTF8.self))
        case 12:
            // A first line that names the kind of failure, then the text.
            let newline = raw.firstIndex(of: 10) ?? raw.endIndex
            let problem = PlaybackProblem(rawValue: String(decoding: raw[..<newline], as: UTF8.self))
            let rest = problem == nil ? raw[...] : raw[min(newline + 1, raw.endIndex)...]
            report = .loadFailed(String(decoding: rest, as: UTF8.self), problem: problem ?? .other)
        default: report = .interstitialFailed(String(decoding: raw, as: UTF8.self))
        }
    default: return -1
    }
    guard let directives = participant(handle)?.instance.onPlayerReport(report, now: now) else { return 0 }
    return carry(directives, handle, now)
}

@_cdecl("coplay_peer_count") public func coplayPeerCount(_ handle: Int32) -> Int32 {
    Int32(participant(handle)?.instance.peers.count ?? -1)
}
