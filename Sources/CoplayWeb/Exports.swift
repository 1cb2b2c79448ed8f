// The core's entry points for a JavaScript shell (the browser page): C-ABI functions over
// linear memory. Inputs: a new relayed instance, its start, a relay frame, a tick, the page's
// commands (share, quit), the player's reports, and the relay's WebSocket (opened, bytes, closed);
// the test module adds a console and the LAN's datagrams (Fuzz/). Each returns the length of
// its outputs, which the shell reads from `coplay_output()`: records of [kind u8][length u32
// LE][bytes]. Kinds: 1 a datagram to the group; 2 a datagram to an endpoint (16-byte address,
// port u16 LE, then the bytes); 3 a frame to publish (subject length u16 LE, subject, frame:
// only for a participant whose relay is not the core's, `coplay_relay_connect`); 4 an event
// (JSON, PROTOCOL.md, "Events"); 5 a diagnostic; 6 the wake instant (i64 LE, monotonic ns: one timer for
// the instance and its relay; replaces the last); 7 exit; 8 a relay subject to subscribe to;
// 9 a command for the player (`PlayerRecord`), whose reports come back through
// `coplay_player_report`; 10 the view (`coplay_view`, JSON); 11 open the relay's WebSocket to
// this URL (closing any other); 12 bytes to send on it; 13 close it; 14 the relay's state
// (JSON: connected, server, reason; refused: true when the server refused the credentials;
// unreachable: "never" or "lost" when no server was reached for `Settings.Relay.unreachableNotice`
// since joining or since the connection was lost); 15
// an action for the player, for a participant whose player follows through the core
// (`coplay_follow`: `FollowerRecord`), whose observations come back through
// `coplay_player_observe`; 16 a fingerprint's windows or its text (`coplay_fingerprint_windows`,
// `coplay_fingerprint`: a copy of one's own).

/// One participant of the module: the instance lives in a box, so that each call changes it in
/// place (a copy of an `Instance` in and out of the table on every call cost time and 20 KB).
final class Participant {
    var instance: Instance
    /// The relay's client (`coplay_relay_connect`): the page's WebSocket only carries its bytes.
    var relay: NatsClient?
    /// The instance's last wake instant; the one timer is set to the earlier of it and the relay's.
    var instanceWake: MonotonicInstant?
    /// The instance was started (at the relay's first connection, or by `coplay_start`).
    var started = false
    /// Bytes the page's WebSocket holds unsent (`coplay_socket_backlog`): a publish past the
    /// relay's write bound is dropped, as the agent's is.
    var backlog = 0
    /// A turn of reading datagrams, between `coplay_receive_turn_begin` and `_end`.
    var turn: ReceiveTurn?
    /// The player's follower (`coplay_follow`): the core's player commands become primitive
    /// actions for the page's `<video>` (record 15), and what the element does comes back as
    /// observations.
    var follower: PlayerFollower?
    init(_ instance: Instance) { self.instance = instance }
}

nonisolated(unsafe) var participants: [Participant] = []

/// The participant of a handle the page got: an entry point called with another does nothing
/// and returns 0, rather than trap.
func participant(_ handle: Int32) -> Participant? {
    participants.indices.contains(Int(handle)) ? participants[Int(handle)] : nil
}
nonisolated(unsafe) var output: [UInt8] = []

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

/// Starts an entry point's outputs.
func begin() { output.removeAll(keepingCapacity: true) }

/// Ends an entry point's outputs with the one timer (the earlier of the instance's wake and the
/// relay's) and returns their length.
func finish(_ participant: Participant, _ now: Timestamp) -> Int32 {
    let wakes = [participant.instanceWake, participant.relay?.nextWake, participant.follower?.nextWake(now: now)]
    if let wake = wakes.compactMap({ $0 }).min() {
        append(6, littleEndian(UInt64(bitPattern: wake.nanos), bytes: 8))
    }
    return Int32(output.count)
}

/// Carries out `directives` into the output buffer; returns its length.
func carry(_ directives: [Directive], _ handle: Int32, _ now: Timestamp) -> Int32 {
    begin()
    guard let participant = participant(handle) else { return 0 }
    carryInto(directives, participant, now)
    return finish(participant, now)
}

/// Appends what `directives` say to the outputs: frames to publish go to the participant's relay
/// client where it has one.
func carryInto(_ directives: [Directive], _ participant: Participant, _ now: Timestamp) {
    let backlog = participant.backlog
    for output in participant.instance.outputs(directives, now: now) {
        switch output {
        // A page has no class of service to choose (its datagrams travel in the relay's frames).
        case .datagram(let datagram, nil, _): append(1, datagram)
        case .datagram(let datagram, let to?, _):
            append(
                2,
                littleEndian(to.address.high, bytes: 8) + littleEndian(to.address.low, bytes: 8)
                    + littleEndian(UInt64(to.port), bytes: 2) + datagram)
        case .publish(let frame, let subject):
            // Through `relay?.`, in place: `relay == nil` read a copy of the whole client to test it.
            if let outputs = participant.relay?.publish(frame, subject: subject, buffered: backlog, now: now.monotonic)
            {
                carryRelay(outputs, participant, now)
            } else {
                let name = Array(subject.utf8)
                append(3, littleEndian(UInt64(name.count), bytes: 2) + name + frame)
            }
        case .subscribe: subscribe(participant, now)
        case .player(let command):
            if participant.follower != nil {
                carryFollower(participant.follower!.command(command, now: now), participant, now)
            } else {
                append(9, PlayerRecord.encode(command))
            }
        case .emit(let event): append(4, EventRecord.bytes(event))
        case .diagnose(let line): append(5, Array(line.utf8))
        case .wake(let at): participant.instanceWake = at
        case .exit:
            carryRelay(participant.relay?.close() ?? [], participant, now)
            append(7, [])
        }
    }
}

/// A participant took a seat on the stage: its relay subscribes to the stage's subject too.
@inline(never) func subscribe(_ participant: Participant, _ now: Timestamp) {
    let (subjects, bounds) = (participant.instance.relaySubscriptions, participant.instance.settings.relay)
    let outputs = participant.relay?.subscriptionsChanged(to: subjects, relay: bounds, now: now.monotonic)
    carryRelay(outputs ?? [], participant, now)
}

/// Appends the follower's actions (record 15) and hands its reports to the instance.
func carryFollower(_ output: PlayerFollower.Output, _ participant: Participant, _ now: Timestamp) {
    for action in output.actions { append(15, FollowerRecord.encode(action)) }
    for report in output.reports {
        carryInto(participant.instance.onPlayerReport(report, now: now), participant, now)
    }
}

/// A follower's action as bytes: its code, then its fields (f64 LE). 1 load: id length u16, id,
/// url. 2 seek: position. 3 pause. 4 play. 5 set the rate: rate. 6 read the position. 7 reload
/// at: position. 8 unload. 9 interstitial: duration, id length u16, id, url. 10 end it.
enum FollowerRecord {
    static func encode(_ action: PlayerFollower.Action) -> [UInt8] {
        func double(_ value: Double) -> [UInt8] { littleEndian(value.bitPattern, bytes: 8) }
        func string(_ text: String) -> [UInt8] {
            let bytes = Array(text.utf8)
            return littleEndian(UInt64(bytes.count), bytes: 2) + bytes
        }
        switch action {
        case .load(let item): return [1] + string(item.id) + Array(item.url.utf8)
        case .seek(let position): return [2] + double(position)
        case .pause: return [3]
        case .play: return [4]
        case .setRate(let rate): return [5] + double(rate)
        case .readPosition: return [6]
        case .reload(let position): return [7] + double(position)
        case .unload: return [8]
        case .interstitial(let interstitial):
            return [9] + double(interstitial.durationSeconds) + string(interstitial.id) + Array(interstitial.url.utf8)
        case .endInterstitial: return [10]
        }
    }
}

/// Appends what the relay's client says: its socket's records, and what arrived handed to the
/// instance.
func carryRelay(_ outputs: [NatsClient.Output], _ participant: Participant, _ now: Timestamp) {
    for output in outputs {
        switch output {
        case .open(let server): append(11, Array((server.webSocketURL ?? "").utf8))
        case .send(let bytes): append(12, bytes)
        case .close: append(13, [])
        case .frame(let subject, let payload):
            carryInto(
                participant.instance.onRelayFrame(payload, subject: subject, receivedAt: now, now: now), participant,
                now)
        case .connected(let server, _):
            append(14, Array(relayState(connected: true, server: server, reason: nil).utf8))
            if participant.started {
                carryInto(participant.instance.onPathRestored(now: now), participant, now)
            } else {
                participant.started = true
                carryInto(participant.instance.start(now: now), participant, now)
            }
        case .lost(let reason):
            append(14, Array(relayState(connected: false, server: participant.relay?.server.name, reason: reason).utf8))
        case .refused(let server):
            append(14, Array(relayState(connected: false, server: server, reason: nil, refused: true).utf8))
        case .unreachable(let server, let everConnected):
            let since = everConnected ? "lost" : "never"
            append(14, Array(relayState(connected: false, server: server, reason: nil, unreachable: since).utf8))
        case .diagnose(let text): append(5, Array(text.utf8))
        }
    }
}

/// `unreachable`: "never" when no server was reached since joining, "lost" since the connection
/// was lost, for `Settings.Relay.unreachableNotice`.
func relayState(connected: Bool, server: String?, reason: String?, refused: Bool = false, unreachable: String? = nil)
    -> String
{
    var json = JSONObject()
    json.bool("connected", connected)
    json.string("server", server)
    json.string("reason", reason)
    if refused { json.bool("refused", true) }
    if let unreachable { json.string("unreachable", unreachable) }
    return json.closed
}

@_cdecl("coplay_output") public func coplayOutput() -> UnsafePointer<UInt8>? {
    output.withUnsafeBufferPointer { $0.baseAddress }
}

@_cdecl("coplay_alloc") public func coplayAlloc(_ count: Int32) -> UnsafeMutablePointer<UInt8> {
    UnsafeMutablePointer<UInt8>.allocate(capacity: Int(max(count, 1)))
}

@_cdecl("coplay_dealloc") public func coplayDealloc(_ pointer: UnsafeMutablePointer<UInt8>?) { pointer?.deallocate() }

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
/// relay's nonces; `viewer` 1 to join a large party's audience (`AudienceSettings.Role.viewer`),
/// 2 for its stage whatever its size (`.stage`), 0 to take a seat on the stage if one is free
/// (`.firstCome`, the default). Returns its handle; -1 for a key or entropy of the wrong size, -2 for a name or
/// session too long, -3 when the module holds `participantsMax` participants.
@_cdecl("coplay_create_relayed")
public func coplayCreateRelayed(
    _ id: UInt64, _ seed: UInt64, _ name: UnsafePointer<UInt8>?, _ nameCount: Int32,
    _ session: UnsafePointer<UInt8>?, _ sessionCount: Int32, _ key: UnsafePointer<UInt8>?, _ keyCount: Int32,
    _ entropy: UnsafePointer<UInt8>?, _ mono: Int64, _ wall: Int64, _ viewer: Int32
) -> Int32 {
    guard keyCount >= 32, keyCount <= 256, entropy != nil else { return -1 }
    guard let (name, session) = names(name, nameCount, session, sessionCount) else { return -2 }
    guard participants.count < participantsMax else { return -3 }
    let identity = LocalIdentity.browser(id: PeerID(id), name: name, sessionName: session)
    var settings = Settings()
    settings.audience.role = viewer == 1 ? .viewer : viewer == 2 ? .stage : .firstCome
    participants.append(
        Participant(
            Instance(
                identity: identity, settings: settings, seed: seed, now: timestamp(mono, wall),
                keys: [bytes(key, keyCount)], relayEntropy: bytes(entropy, 32))))
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

/// Starts the instance (a participant whose relay is the core's starts at its first connection).
@_cdecl("coplay_start") public func coplayStart(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    let now = timestamp(mono, wall)
    guard let participant = participant(handle), !participant.started else { return 0 }
    participant.started = true
    return carry(participant.instance.start(now: now), handle, now)
}

/// The one timer fired: the instance's and the relay's due work (an early tick is harmless).
@_cdecl("coplay_tick") public func coplayTick(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    let now = timestamp(mono, wall)
    begin()
    guard let participant = participant(handle) else { return 0 }
    carryRelay(participant.relay?.tick(now: now.monotonic) ?? [], participant, now)
    if participant.started { carryInto(participant.instance.onTick(now: now), participant, now) }
    if participant.follower != nil { carryFollower(participant.follower!.advance(now: now), participant, now) }
    return finish(participant, now)
}

// MARK: The relay's WebSocket

/// The relay's servers (`ws://[TOKEN@]HOST[:PORT]` or `wss://…`, one per line: an invitation may
/// name several) for a participant made by `coplay_create_relayed`: from now on the core runs the
/// NATS session (handshake, keep-alive, failover to the servers the cluster announces, backoff)
/// and the page's WebSocket carries its bytes (records 11-14). `seed` jitters the backoff.
/// Returns -1 when no line is a relay address, -2 for a participant without a relay's keys or
/// one connected already.
@_cdecl("coplay_relay_connect")
public func coplayRelayConnect(
    _ handle: Int32, _ urls: UnsafePointer<UInt8>?, _ count: Int32, _ seed: UInt64, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    begin()
    guard let participant = participant(handle), participant.relay == nil else { return -2 }
    let subjects = participant.instance.relaySubscriptions
    guard !subjects.isEmpty else { return -2 }
    let lines = text(urls, min(count, 4096)).split(separator: "\n").prefix(
        participant.instance.settings.relay.serversMax)
    let seeds = lines.compactMap { RelayServer.webSocket(String($0)) }
    guard !seeds.isEmpty else { return -1 }
    participant.relay = NatsClient(
        seeds: seeds, subjects: subjects, clientName: "coplay-web", settings: participant.instance.settings, seed: seed,
        resolve: nil)
    carryRelay(participant.relay?.start(now: now.monotonic) ?? [], participant, now)
    return finish(participant, now)
}

/// Applies `body` to the participant's relay client and carries out what it says.
func withRelay(
    _ handle: Int32, _ now: Timestamp, _ body: (inout NatsClient) -> [NatsClient.Output]
) -> Int32 {
    begin()
    guard let participant = participant(handle), let outputs = participant.relay?.run(body) else { return 0 }
    carryRelay(outputs, participant, now)
    return finish(participant, now)
}

extension NatsClient {
    /// `body` on the client in place, called as `participant.relay?.run(body)`: testing the
    /// optional with `!= nil` first read a copy of the whole client (a profile's 5% of a frame;
    /// replayed, no faster, and the module 39 bytes smaller).
    mutating func run(_ body: (inout NatsClient) -> [NatsClient.Output]) -> [NatsClient.Output] { body(&self) }
}

/// The WebSocket record 11 asked for is open.
@_cdecl("coplay_socket_opened") public func coplaySocketOpened(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    let now = timestamp(mono, wall)
    return withRelay(handle, now) { $0.opened(now: now.monotonic) }
}

/// Bytes arrived on the relay's WebSocket (a message's payload, text or binary).
@_cdecl("coplay_socket_bytes")
public func coplaySocketBytes(
    _ handle: Int32, _ pointer: UnsafePointer<UInt8>?, _ count: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    let data = bytes(pointer, count)
    return withRelay(handle, now) { $0.received(data, now: now.monotonic) }
}

/// The relay's WebSocket closed or failed (`reason` as the page saw it).
@_cdecl("coplay_socket_closed")
public func coplaySocketClosed(
    _ handle: Int32, _ pointer: UnsafePointer<UInt8>?, _ count: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    let reason = text(pointer, min(count, 256))
    return withRelay(handle, now) { $0.closed(reason.isEmpty ? "the connection closed" : reason, now: now.monotonic) }
}

/// The page's path changed under its WebSocket (restored from the back-forward cache, resumed
/// after a freeze, back online): the connection is made again at once.
@_cdecl("coplay_path_changed") public func coplayPathChanged(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    let now = timestamp(mono, wall)
    return withRelay(handle, now) { $0.reconnectNow(now: now.monotonic) }
}

/// Bytes the page's WebSocket holds unsent (its `bufferedAmount`), read before each input: a
/// frame to publish past `Settings.relay.writeBufferBytesMax` is dropped and counted.
@_cdecl("coplay_socket_backlog") public func coplaySocketBacklog(_ handle: Int32, _ bytes: Int32) {
    participant(handle)?.backlog = Int(max(bytes, 0))
}

/// The relay's state as JSON (record 14's form, plus its counts), for a display.
@_cdecl("coplay_relay_state") public func coplayRelayState(_ handle: Int32) -> Int32 {
    begin()
    guard let participant = participant(handle), let statistics = participant.relay?.statistics,
        let servers = participant.relay?.servers.servers.count
    else { return 0 }
    var json = JSONObject()
    json.bool("connected", statistics.connected)
    json.string("server", statistics.server)
    json.int("servers", Int64(servers))
    json.int("reconnections", Int64(statistics.reconnections))
    json.int("published", Int64(statistics.framesPublished))
    json.int("received", Int64(statistics.framesReceived))
    json.int("dropped", Int64(statistics.framesDropped))
    append(14, Array(json.closed.utf8))
    return Int32(output.count)
}

/// The page's forms: `queue` 0 shares `url` with the group now, 1 adds it to the queue's end
/// (`ConsoleCommand.sharing(url:)`, `queueAdding(url:)`: the console's checks, on the URL as the
/// person gave it). The page has no console: nobody types command lines there, so the shipped
/// module carries no parser for them (17 KB gzipped); `coplay_console` is the test module's.
@_cdecl("coplay_share")
public func coplayShare(
    _ handle: Int32, _ url: UnsafePointer<UInt8>?, _ count: Int32, _ queue: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    guard let participant = participant(handle) else { return 0 }
    let url = text(url, count)
    do throws(ConsoleCommand.ParseError) {
        let command = queue != 0 ? try ConsoleCommand.queueAdding(url: url) : try ConsoleCommand.sharing(url: url)
        return carry(participant.instance.onGroupCommand(command, now: now), handle, now)
    } catch {
        return carry(participant.instance.onCommandRefused(error), handle, now)
    }
}

/// The page's chat: a message to everyone, as the console's `msg TEXT` sends it (reliable; the
/// core's bounds and errors, `Settings.messageBytesMax`).
@_cdecl("coplay_message")
public func coplayMessage(
    _ handle: Int32, _ bytes: UnsafePointer<UInt8>?, _ count: Int32, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    guard let participant = participant(handle) else { return 0 }
    let command = ConsoleCommand.message(to: nil, unreliable: false, text: text(bytes, count))
    return carry(participant.instance.onCommand(command, now: now), handle, now)
}

/// Leave the group and end (the page's Leave, a tab closing): `quit`.
@_cdecl("coplay_quit")
public func coplayQuit(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    let now = timestamp(mono, wall)
    guard let participant = participant(handle) else { return 0 }
    return carry(participant.instance.onGroupCommand(.quit, now: now), handle, now)
}

/// What the page's player reported. `kind`: 1 ready, 2 stalled, 3 stall over, 4 ended (at
/// `position`); 5 a sample (`position` at wall instant `at`, moving at `rate`); 6 the person
/// pressed play (`rate`), 7 pause, 8 seeked (to `position`), 9 next, 10 previous; 14 the item's
/// length (in `position`), found once loaded; 15 it has a copy now of the item it could not load
/// (the person picked their own: `PlayerReport.copyFound`); 16 it plays another encode of it,
/// which its person accepted (`anotherEncode`); 11 it failed,
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
    let report: PlayerReport
    switch kind {
    case 1: report = .ready(position: position)
    case 2: report = .stalled(position: position)
    case 3: report = .stallEnded(position: position)
    case 4: report = .ended(position: position)
    case 5: report = .sample(position: position, rate: rate, at: WallInstant(unixNanos: at))
    case 6: report = .userAction(.play(rate: rate))
    case 7: report = .userAction(.pause)
    case 8: report = .userAction(.seek(position: position))
    case 9: report = .userAction(.next)
    case 10: report = .userAction(.previous)
    case 14: report = .duration(position)
    case 15: report = .copyFound
    case 16: report = .anotherEncode
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
    // The core's one check of a player's values.
    guard report.refusal() == nil else { return -1 }
    guard let directives = participant(handle)?.instance.onPlayerReport(report, now: now) else { return 0 }
    return carry(directives, handle, now)
}

// MARK: The page's player, following through the core

/// The page's `<video>` follows through the core from now on (`PlayerFollower`, with a video
/// element's capabilities): player commands become actions (record 15). `steering`: 0 skip-only,
/// 1 by rate (an engine known to steer), 2 by rate until found not to follow it, plus 4 where
/// the element's position readings move in steps (Firefox's `currentTime`: `readsInSteps`), plus
/// 8 where its clock may stand still just after a start (Chromium's: `standsAfterStart`);
/// `deadBand` is the band of rates around 1 the engine plays as 1 (0: none, at most 0.01);
/// `startLateness` how late its clock starts after a seek, before any start is learnt from
/// (seconds, 0 to 0.25). Returns -1 for a value out of range.
@_cdecl("coplay_follow")
public func coplayFollow(_ handle: Int32, _ steering: Int32, _ deadBand: Double, _ startLateness: Double) -> Int32 {
    guard let participant = participant(handle) else { return 0 }
    let mode = steering & 3
    guard deadBand.isFinite, (0...0.01).contains(deadBand), steering & ~15 == 0, mode <= 2,
        startLateness.isFinite, (0...participant.instance.settings.follower.startBiasMax).contains(startLateness)
    else { return -1 }
    var capabilities = PlayerFollower.Capabilities.video
    capabilities.steersByRate = mode != 0
    capabilities.checksRate = mode == 2
    capabilities.readsInSteps = steering & 4 != 0
    capabilities.standsAfterStart = steering & 8 != 0
    capabilities.startLateness = startLateness
    capabilities.rateDeadBand = deadBand
    participant.follower = PlayerFollower(capabilities, settings: participant.instance.settings)
    return 0
}

/// What the page's `<video>` did. `kind`: 1 it knows the media (metadata), 2 it holds a frame
/// where it was sent (every seek done, it can play), 3 its position `value` read at wall instant
/// `at` (the answer to a read), 4 it could not say, 5 it paused, 6 it plays, 7 it ran out of
/// media, 8 it has media again, 9 it reached the end, 10 it refused a seek, 11 the item's length
/// `value`, 12 the page was hidden, 13 shown, 14 it refused to play. Returns -1 for a kind or a
/// value out of range (nothing changes), 0 for a participant that does not follow.
@_cdecl("coplay_player_observe")
public func coplayPlayerObserve(
    _ handle: Int32, _ kind: Int32, _ value: Double, _ at: Int64, _ mono: Int64, _ wall: Int64
) -> Int32 {
    let now = timestamp(mono, wall)
    begin()
    guard let participant = participant(handle), participant.follower != nil else { return 0 }
    let observation: PlayerFollower.Observation
    switch kind {
    case 1: observation = .loaded
    case 2: observation = .restarted
    case 3:
        guard value.isFinite, WireFormat.wallNanosRange.contains(at) else { return -1 }
        observation = .position(value, at: WallInstant(unixNanos: at))
    case 4: observation = .positionUnavailable
    case 5, 6: observation = .paused(kind == 5)
    case 7, 8: observation = .starved(kind == 7)
    case 9: observation = .ended
    case 10: observation = .seekRefused
    case 11:
        guard PlayerReport.duration(value).refusal() == nil else { return -1 }
        observation = .duration(value)
    case 12, 13: observation = .hidden(kind == 12)
    case 14: observation = .playRefused
    default: return -1
    }
    carryFollower(participant.follower!.observe(observation, now: now), participant, now)
    return finish(participant, now)
}

// MARK: A copy of one's own

/// The windows of a file of `size` bytes that its fingerprint reads (`Fingerprint.windows`): one
/// record of kind 16, pairs of f64 LE (offset, length), in order, that the page's Worker reads
/// from the `File` a person picked. Sizes are exact in a Double up to `Fingerprint.sizeMax`;
/// returns -1 for a size that is not a whole number from 0 to it.
@_cdecl("coplay_fingerprint_windows")
public func coplayFingerprintWindows(_ size: Double) -> Int32 {
    guard let size = fingerprintSize(size) else { return -1 }
    var record: [UInt8] = []
    for window in Fingerprint.windows(size: size) {
        record += littleEndian(Double(window.offset).bitPattern, bytes: 8)
        record += littleEndian(Double(window.length).bitPattern, bytes: 8)
    }
    begin()
    append(16, record)
    return Int32(output.count)
}

/// The fingerprint of a file of `size` bytes whose windows (`coplay_fingerprint_windows`, in
/// order) are the `count` bytes at `pointer`, one after another: one record of kind 16, its text
/// (`v1-SIZE-HEX`, the item id a film shared from that file has). Returns -1 for a size out of
/// range or bytes that are not the windows' (a short read: the file changed).
@_cdecl("coplay_fingerprint")
public func coplayFingerprint(_ size: Double, _ pointer: UnsafePointer<UInt8>?, _ count: Int32) -> Int32 {
    guard let size = fingerprintSize(size), count >= 0 else { return -1 }
    let read = bytes(pointer, count)
    var windows: [[UInt8]] = []
    var start = 0
    for window in Fingerprint.windows(size: size) {
        guard start + window.length <= read.count else { return -1 }
        windows.append(Array(read[start..<start + window.length]))
        start += window.length
    }
    guard start == read.count, let fingerprint = try? Fingerprint(size: size, windows: windows) else { return -1 }
    begin()
    append(16, Array(fingerprint.text.utf8))
    return Int32(output.count)
}

func fingerprintSize(_ size: Double) -> UInt64? {
    guard size.isFinite, size >= 0, size <= Double(Fingerprint.sizeMax), size.rounded(.down) == size else { return nil }
    return UInt64(size)
}

@_cdecl("coplay_peer_count") public func coplayPeerCount(_ handle: Int32) -> Int32 {
    Int32(participant(handle)?.instance.peers.count ?? -1)
}
