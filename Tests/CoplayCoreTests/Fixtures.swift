import CoplayCore
import Foundation
import Testing

/// A timestamp `millis` after an arbitrary origin, with the wall clock 1.78e18 ns after the epoch
/// plus `wallSkewMillis`.
func at(_ millis: Double, wallSkewMillis: Double = 0) -> Timestamp {
    let nanos = Int64((millis * 1_000_000).rounded())  // rounded: a wake read back as milliseconds lands on itself
    return Timestamp(
        monotonic: MonotonicInstant(nanos: 5_000_000_000 + nanos),
        wall: WallInstant(unixNanos: 1_780_000_000_000_000_000 + nanos + Int64(wallSkewMillis * 1_000_000)))
}

let aliceID = PeerID(0xA11CE)
let bobID = PeerID(0xB0B)
let carolID = PeerID(0xCA201)
let bobEndpoint = Endpoint(address: 0x7F00_0001, port: 50_002)
let session = SessionID(name: "test")

func makeInstance(id: PeerID = aliceID, name: String = "alice", settings: Settings = Settings(), now: Timestamp = at(0))
    -> Instance
{
    Instance(
        identity: LocalIdentity(id: id, name: name, sessionName: "test", unicastPort: 50_001), settings: settings,
        seed: 7,
        now: now)
}

/// Encoded datagram from `sender` in the test session.
func bytes(_ payload: Payload, from sender: Member, sequence: UInt32 = 1, session: SessionID = session) -> [UInt8] {
    WireFormat.encode(Datagram(session: session, sender: sender, sequence: sequence, payload: payload))
}

let bob = Member(id: bobID, incarnation: Incarnation(100))

/// Alice, joined at 0, who heard bob's heartbeat at 10 ms and had her first clock probe to him
/// answered (so that bob's times can be read).
func aliceKnowingBobsClock() throws -> Instance {
    var alice = makeInstance()
    _ = alice.start(now: at(0))
    let out = alice.onDatagram(
        bytes(bobHeartbeat, from: bob), from: bobEndpoint, receivedAt: at(10), now: at(10), viaGroup: true)
    let probe = try #require(
        out.unicasts.compactMap { if case .probe(let probe) = $0.0.payload { probe } else { nil } }.first)
    let reply = ClockProbeReply(
        token: probe.token, originWall: probe.originWall, receiveWall: at(10.05).wall, transmitWall: at(10.06).wall)
    _ = alice.onDatagram(
        bytes(.probeReply(reply), from: bob, sequence: 2), from: bobEndpoint, receivedAt: at(10.1), now: at(10.1),
        viaGroup: true)
    try #require(alice.clockEstimate(of: bobID, at: at(10.1).monotonic) != nil)
    return alice
}
let bobHeartbeat = Payload.heartbeat(Announcement(unicastPort: bobEndpoint.port, name: "bob"))
let bobHello = Payload.hello(Announcement(unicastPort: bobEndpoint.port, name: "bob"))

extension Array where Element == Directive {
    var events: [Event] { compactMap { if case .emit(let event) = $0 { event } else { nil } } }
    var multicasts: [Datagram] { compactMap { if case .multicast(let datagram) = $0 { datagram } else { nil } } }
    var unicasts: [(Datagram, Endpoint)] {
        compactMap { if case .unicast(let datagram, let to) = $0 { (datagram, to) } else { nil } }
    }
    var wake: MonotonicInstant? { compactMap { if case .wake(let at) = $0 { at } else { nil } }.last }
}

/// The repository's Tests/Vectors folder.
let vectorsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Vectors")
