import CoplayCore

/// A seeded fuzz of the whole core, not only the decoder: one agent (alice) that knows a peer
/// (bob) receives well-formed datagrams full of extreme values — the largest and smallest
/// numbers each field can carry, forged senders (strangers, bob with other incarnations, alice's
/// own id), huge nack ranges, dependency gaps near 2^32 — interleaved with console lines with
/// extreme arguments and timer ticks. No input may trap or hang; afterwards every table is within
/// its bound. `run` returns what was violated (empty when all held).
public struct HostileFuzz: Sendable {
    public let seed: UInt64
    public let inputs: Int

    public init(seed: UInt64, inputs: Int) {
        self.seed = seed
        self.inputs = inputs
    }

    public struct Outcome: Sendable {
        public var seed: UInt64
        public var failures: [String] = []
        public var datagramsDropped = 0
        public var datagramsFed = 0
    }

    public func run() -> Outcome {
        var outcome = Outcome(seed: seed)
        var settings = Settings()
        settings.peersMax = 32  // small tables, so the fuzz reaches their bounds
        settings.pendingCommandsMax = 64
        settings.storedCommandsMax = 128
        settings.partialMessagesMax = 8
        settings.commandsAwaitingClockMax = 16
        let alice = PeerID(0xA11CE)
        let bob = Member(id: PeerID(0xB0B), incarnation: Incarnation(100))
        let bobEndpoint = Endpoint(address: 0x0A00_0002, port: 40_000)
        var clock = Timestamp(
            monotonic: MonotonicInstant(nanos: 1_000_000_000),
            wall: WallInstant(unixNanos: 1_780_000_000_000_000_000))
        var instance = Instance(
            identity: LocalIdentity(id: alice, name: "alice", sessionName: "fuzz", unicastPort: 40_000),
            settings: settings, seed: seed, now: clock)
        let session = SessionID(name: "fuzz")
        _ = instance.start(now: clock)
        func feed(_ payload: Payload, from sender: Member, sequence: UInt32 = 1) {
            let datagram = Datagram(session: session, sender: sender, sequence: sequence, payload: payload)
            // Either socket: unicast arrivals can switch on unicast reach (and its peer lists).
            _ = instance.onDatagram(
                WireFormat.encode(datagram), from: bobEndpoint, receivedAt: clock, now: clock,
                viaGroup: sequence % 2 == 0)
            outcome.datagramsFed += 1
        }
        feed(.hello(Announcement(unicastPort: 40_000, name: "bob")), from: bob)
        _ = instance.onCommand(
            .share(Activity(url: "u", itemID: "movie"), durationSeconds: 600, bufferSeconds: 0), now: clock)

        var values = FuzzValues(random: SplitMix64(seed: seed))
        for _ in 0..<inputs {
            clock = clock.advanced(by: .nanoseconds(Int64(values.random.next() % 50_000_000)))
            switch values.random.next() % 10 {
            case 0:
                _ = instance.onTick(now: clock)
            case 1:
                _ = instance.onConsoleLine(values.consoleLine(), now: clock)
            default:
                let sender = values.sender(bob: bob, alice: alice)
                feed(values.payload(bob: bob), from: sender, sequence: values.uint32())
            }
            if let problem = boundsProblem(instance, settings) {
                outcome.failures.append(problem)
                break
            }
        }
        outcome.datagramsDropped = Int(instance.counters.dropsTotal)
        return outcome
    }

    private func boundsProblem(_ instance: Instance, _ settings: Settings) -> String? {
        if instance.peers.count > settings.peersMax { return "peers \(instance.peers.count) > \(settings.peersMax)" }
        if instance.log.pendingCount > settings.pendingCommandsMax {
            return "pending \(instance.log.pendingCount) > \(settings.pendingCommandsMax)"
        }
        if instance.log.storedCount > settings.storedCommandsMax {
            return "stored \(instance.log.storedCount) > \(settings.storedCommandsMax)"
        }
        if instance.items.count > settings.itemsMax { return "items \(instance.items.count) > \(settings.itemsMax)" }
        if instance.namedEndpoints.count > settings.gossipedEndpointsMax {
            return "named endpoints \(instance.namedEndpoints.count) > \(settings.gossipedEndpointsMax)"
        }
        if instance.suspensions.count > Announcement.suspensionsMax + 2 {
            return "suspensions \(instance.suspensions.count)"
        }
        return nil
    }
}

/// Extreme values for every field type.
struct FuzzValues {
    var random: SplitMix64

    mutating func pick<T>(_ choices: [T]) -> T { choices[Int(random.next() % UInt64(choices.count))] }

    mutating func uint32() -> UInt32 {
        pick([0, 1, 2, UInt32.max, UInt32.max - 1, UInt32(truncatingIfNeeded: random.next()), 1 << 31])
    }
    mutating func uint64() -> UInt64 { pick([0, 1, UInt64.max, 1 << 53, (1 << 53) + 1, 1 << 63, random.next()]) }
    mutating func int64() -> Int64 {
        pick([
            0, 1, -1, .min, .max, 1 << 62, (1 << 62) + 1, 1_780_000_000_000_000_000, Int64(bitPattern: random.next()),
        ])
    }
    mutating func double() -> Double {
        pick([
            0, .leastNonzeroMagnitude, 1e-9, 0.009, 0.01, 1, 2, 64, 64.000_1, 1e9, 1e9 + 1, 1e300, -1, -0.0, .nan,
            .infinity,
        ])
    }
    mutating func wall() -> WallInstant { WallInstant(unixNanos: int64()) }
    mutating func text(_ maxBytes: Int) -> String {
        let length = Int(random.next() % UInt64(maxBytes + 1))
        return pick(["", "x", String(repeating: "é", count: length / 2), String(repeating: "a", count: length)])
    }
    mutating func member() -> Member {
        Member(id: PeerID(pick([1, 2, 0xB0B, random.next()])), incarnation: Incarnation(uint32()))
    }
    mutating func dot() -> Dot { Dot(origin: member(), counter: max(1, uint32())) }
    mutating func clock() -> VectorClock {
        var entries: [Member: UInt32] = [:]
        for _ in 0..<Int(random.next() % 6) { entries[member()] = uint32() }
        return VectorClock(entries)
    }

    mutating func sender(bob: Member, alice: PeerID) -> Member {
        pick([
            bob, bob, bob, Member(id: bob.id, incarnation: Incarnation(uint32())), member(),
            Member(id: alice, incarnation: Incarnation(uint32())),
        ])
    }

    mutating func queueItem() -> QueueItem {
        QueueItem(
            id: pick(["ep1", "ep2", "movie", text(128)]).isEmpty ? "ep1" : pick(["ep1", "ep2", "movie"]),
            url: pick(["u", "https://example.com/x.mp4"]), title: text(128),
            durationSeconds: pick([nil, 1, 1e9, 0.001]))
    }

    mutating func position() -> QueuePosition {
        QueuePosition(
            (0..<(1 + Int(random.next() % UInt64(QueuePosition.depthMax)))).map { _ in
                QueuePosition.Identifier(
                    digit: pick([0, 1, 2, UInt16.max, UInt16(truncatingIfNeeded: random.next())]), site: uint64(),
                    counter: uint32())
            })
    }

    mutating func queueOperation() -> QueueOperation {
        switch random.next() % 6 {
        case 0: .add(queueItem(), at: position())
        case 1: .remove(id: pick(["ep1", "ep2", "nope"]), added: dot())
        case 2: .move(id: pick(["ep1", "ep2", "nope"]), to: position())
        case 3: .clear(covering: clock())
        case 4: .advance(from: pick([nil, "ep1", "nope"]), to: queueItem(), rate: double(), requestedAt: wall())
        default: .placed(queueItem(), at: position(), added: dot())
        }
    }

    mutating func interstitial() -> Interstitial {
        Interstitial(
            id: pick(["ad", "intro"]), url: pick(["u", "https://example.com/ad.mp4"]),
            durationSeconds: pick([0.001, 1, Interstitial.durationMax]))
    }

    mutating func operation() -> Operation {
        if random.next() % 5 == 0 { return .queue(queueOperation()) }
        if random.next() % 8 == 0 {
            return random.next() % 2 == 0
                ? .scheduleInterstitial(interstitial(), at: double())
                : .interstitial(interstitial(), position: double(), rate: double(), requestedAt: wall())
        }
        return switch random.next() % 8 {
        case 0:
            .share(Activity(url: pick(["u", "v", text(512)]).isEmpty ? "u" : "v", itemID: pick(["movie", "other"])))
        case 1: .play(rate: double(), position: double(), requestedAt: wall())
        case 2: .seek(position: double(), resumeRate: double(), requestedAt: wall())
        case 3: .start(rate: double(), position: double(), at: wall(), trigger: dot())
        case 4: .playNow(rate: double(), position: double(), at: wall())
        case 5: .pause(position: double(), at: wall())
        case 6: .rate(rate: double(), position: double(), at: wall())
        default:
            .message(
                MessagePart(
                    messageID: uint32(), index: UInt16(random.next() % 3), count: UInt16(1 + random.next() % 3),
                    recipients: random.next() % 2 == 0 ? [member()] : [], bytes: Array(text(64).utf8)))
        }
    }

    mutating func payload(bob: Member) -> Payload {
        switch random.next() % 13 {
        case 0, 1:
            let announcement = Announcement(
                isReply: random.next() % 2 == 0, unicastPort: UInt16(truncatingIfNeeded: max(1, random.next())),
                name: text(64), item: pick([nil, "movie", "other"]), isWaiting: random.next() % 2 == 0,
                isReady: random.next() % 2 == 0, waitsOutSuspensions: random.next() % 2 == 0,
                suspensions: pick([[], ["stallRecovery"], ["userActionRequired", "x"]]), digest: clock())
            return random.next() % 2 == 0 ? .hello(announcement) : .heartbeat(announcement)
        case 2: return .leave(pick([.left, .shutdown]))
        case 3: return .probe(ClockProbe(token: uint64(), originWall: wall()))
        case 4:
            return .probeReply(
                ClockProbeReply(token: uint64(), originWall: wall(), receiveWall: wall(), transmitWall: wall()))
        case 5, 6:
            let command = Command(item: pick(["movie", "other", MessagePart.itemMarker]), operation: operation())
            return .command(
                CommandEnvelope(dot: dot(), lamport: max(1, uint64()), dependencies: clock(), command: command),
                isRepair: random.next() % 2 == 0)
        case 7:
            return .nack(
                (0..<Int(1 + random.next() % 4)).map { _ in
                    let from = max(1, uint32())
                    return MissingRange(origin: pick([bob, member()]), from: from, to: max(from, uint32()))
                })
        case 8: return .ready(trigger: dot())
        case 9:
            return .peerList(
                (0..<Int(random.next() % 33)).map { _ in
                    PeerEntry(
                        member: pick([bob, member()]),
                        endpoint: Endpoint(
                            address: pick([
                                IPAddress(ipv4: 0), IPAddress(ipv4: 0xEFFF_4D01), IPAddress(ipv4: 0xFFFF_FFFF),
                                IPAddress(ipv4: UInt32(truncatingIfNeeded: random.next())), IPAddress(high: 0, low: 0),
                                IPAddress(high: 0xFF12 << 48, low: 1),
                                IPAddress(high: random.next(), low: random.next()),
                            ]),
                            port: pick([0, 1, UInt16.max, UInt16(truncatingIfNeeded: random.next())])))
                })
        case 10:
            return .stateRequest(StateRequest(snapshot: pick([0, 1, uint64()]), wanted: uint32()))
        case 11:
            // Snapshot parts: counts and indexes at and past the limits, frontiers with extreme
            // entries, winners (with and without dependencies) above and below the part's clock.
            let count = UInt8(truncatingIfNeeded: pick([1, 2, 32, 33, 0, 255, random.next()]))
            return .state(
                StatePart(
                    snapshot: pick([1, 0xABC, uint64()]), index: UInt8(truncatingIfNeeded: random.next() % 40),
                    count: count, lamport: pick([0, 1, 1 << 53, uint64()]), frontier: clock(),
                    winners: (0..<Int(random.next() % 4)).map { _ in
                        CommandEnvelope(
                            dot: pick([dot(), Dot(origin: bob, counter: max(1, uint32()))]),
                            lamport: max(1, pick([1, 5, uint64()])),
                            dependencies: random.next() % 3 == 0 ? clock() : VectorClock(),
                            command: Command(item: pick(["movie", "other"]), operation: operation()))
                    }))
        default:
            return random.next() % 2 == 0
                ? .end(reason: text(128))
                : .unreliableMessage(
                    MessagePart(
                        messageID: uint32(), index: 0, count: UInt16(1 + random.next() % 4), recipients: [member()],
                        bytes: Array(text(100).utf8)))
        }
    }

    mutating func consoleLine() -> String {
        let number = pick([
            "0", "-0", "5e-324", "0.000000001", "0.009", "0.01", "64", "64.0001", "1e9", "1e300", "nan", "inf", "-1",
            "99999999999999999999",
        ])
        return pick([
            "play \(number)", "play-now \(number)", "rate \(number)", "seek \(number)", "stall \(number)",
            "what-happened \(number)", "resume \(number) at=\(number)", "suspend x", "pause", "status", "peers",
            "share https://a/b?x=\(number) id=movie duration=\(number) buffer=\(number)", "load u buffer=\(number)",
            "msg to=bob \(number)", "join", "leave", "end \(number)",
            "interstitial u duration=\(number) at=\(number)", "interstitial u duration=\(number) for=me",
            "queue add u duration=\(number)", "next", "previous",
        ])
    }
}
