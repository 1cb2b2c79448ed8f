import CoplayCore
import Foundation

/// CPU per received datagram, by type: one agent's core (`Instance.onDatagram`, decoding
/// included, no sockets) in a group of `members` peers, each datagram as a running group sends
/// it. The best of five rounds per type, so a busy machine's noise counts least.
enum DatagramCost {
    static func run(members: Int) {
        let session = SessionID(name: "cost")
        let peers = (1...members).map { Member(id: PeerID(UInt64(0x1000 + $0)), incarnation: Incarnation(100)) }
        func endpoint(_ index: Int) -> Endpoint { Endpoint(address: 0x0A00_0000 + UInt32(index + 2), port: 40_000) }
        var clock = Timestamp(
            monotonic: MonotonicInstant(nanos: 1_000_000_000), wall: WallInstant(unixNanos: 1_780_000_000_000_000_000))
        var instance = Instance(
            identity: LocalIdentity(id: PeerID(0xA11CE), name: "alice", sessionName: "cost", unicastPort: 40_000),
            seed: 1, now: clock)
        _ = instance.start(now: clock)
        var sequences = [UInt32](repeating: 0, count: members)
        func bytes(_ payload: Payload, from index: Int) -> [UInt8] {
            sequences[index] &+= 1
            return WireFormat.encode(
                Datagram(session: session, sender: peers[index], sequence: sequences[index], payload: payload))
        }
        func announcement(_ index: Int) -> Announcement {
            Announcement(unicastPort: 40_000, name: "peer\(index)", item: "film", digest: VectorClock())
        }
        // Each peer says hello and answers alice's clock probes, until she has every peer's
        // offset (commands wait for their sender's clock: without it they would only be held).
        var probes: [(ClockProbe, Int)] = []
        func collect(_ directives: [Directive]) {
            for case .unicast(let datagram, let to) in directives {
                guard case .probe(let probe) = datagram.payload,
                    let index = peers.indices.first(where: { endpoint($0) == to })
                else { continue }
                probes.append((probe, index))
            }
        }
        for index in peers.indices {
            collect(
                instance.onDatagram(
                    bytes(.hello(announcement(index)), from: index), from: endpoint(index), receivedAt: clock,
                    now: clock, viaGroup: true))
        }
        for _ in 0..<400 where !peers.allSatisfy({ instance.isClockSynced($0.id) }) {
            clock = clock.advanced(by: .milliseconds(50))
            collect(instance.onTick(now: clock))
            let due = probes
            probes.removeAll()
            for (probe, index) in due {
                let reply = ClockProbeReply(
                    token: probe.token, originWall: probe.originWall, receiveWall: clock.wall, transmitWall: clock.wall)
                let answered = clock.advanced(by: .microseconds(200))
                collect(
                    instance.onDatagram(
                        bytes(.probeReply(reply), from: index), from: endpoint(index), receivedAt: answered,
                        now: answered, viaGroup: true))
            }
            if peers.indices.allSatisfy({ sequences[$0] % 10 == 0 }) {
                for index in peers.indices {
                    collect(
                        instance.onDatagram(
                            bytes(.heartbeat(announcement(index)), from: index), from: endpoint(index),
                            receivedAt: clock, now: clock, viaGroup: true))
                }
            }
        }
        let synced = peers.filter { instance.isClockSynced($0.id) }.count
        _ = instance.onCommand(
            .share(Activity(url: "u", itemID: "film"), durationSeconds: 100_000, bufferSeconds: 0), now: clock)
        print(
            "per received datagram, \(instance.peers.count) members known, \(synced) with their clock offset (release: swift build -c release):"
        )

        /// Feeds `count` datagrams made by `make(i)` from the peers in turn; the best of five
        /// rounds, in µs per datagram (making the bytes is not timed).
        func measure(_ name: String, count: Int = 20_000, _ make: (Int) -> (bytes: [UInt8], from: Int)) {
            var best = Double.infinity
            for _ in 0..<5 {
                let inputs = (0..<count).map(make)
                let start = ContinuousClock.now
                for input in inputs {
                    clock = clock.advanced(by: .microseconds(50))
                    _ = instance.onDatagram(
                        input.bytes, from: endpoint(input.from), receivedAt: clock, now: clock, viaGroup: true)
                }
                best = min(best, (ContinuousClock.now - start) / .seconds(1) / Double(count) * 1e6)
            }
            print("  \(name.padding(toLength: 44, withPad: " ", startingAt: 0)) \(String(format: "%7.2f", best)) µs")
        }
        measure("junk (not coplay)") { index in
            (Array("not a coplay datagram at all, just noise".utf8), index % members)
        }
        measure("heartbeat of a known member") { index in
            (bytes(.heartbeat(announcement(index % members)), from: index % members), index % members)
        }
        measure("probe (answered with a reply)") { index in
            (
                bytes(.probe(ClockProbe(token: UInt64(index), originWall: clock.wall)), from: index % members),
                index % members
            )
        }
        measure("probe reply matching no probe (dropped)") { index in
            let reply = ClockProbeReply(
                token: UInt64(index), originWall: clock.wall, receiveWall: clock.wall, transmitWall: clock.wall)
            return (bytes(.probeReply(reply), from: index % members), index % members)
        }
        var counters = [UInt32](repeating: 0, count: members)
        var lamport: UInt64 = 10
        measure("command (a pause, delivered and applied)", count: 5_000) { index in
            let peer = index % members
            counters[peer] += 1
            lamport += 1
            let envelope = CommandEnvelope(
                dot: Dot(origin: peers[peer], counter: counters[peer]), lamport: lamport,
                dependencies: VectorClock(),
                command: Command(item: "film", operation: .pause(position: 1, at: clock.wall)))
            return (bytes(.command(envelope, isRepair: false), from: peer), peer)
        }
        let delivered = instance.counters.commandsDelivered
        measure("command again (a duplicate)", count: 5_000) { index in
            let peer = index % members
            let envelope = CommandEnvelope(
                dot: Dot(origin: peers[peer], counter: 1), lamport: 11, dependencies: VectorClock(),
                command: Command(item: "film", operation: .pause(position: 1, at: clock.wall)))
            return (bytes(.command(envelope, isRepair: false), from: peer), peer)
        }
        print(
            "  (commands delivered in the measurement: \(delivered); a run that delivers none measured only holding them)"
        )
    }
}
