import CoplayCore

/// The datagrams behind Tests/Vectors/wire-v1.txt, by name. The file holds their bytes in hex;
/// the Swift codec tests and the Wireshark dissector test both decode it.
enum WireVectors {
    static let sender = Member(id: PeerID(0x0123_4567_89AB_CDEF), incarnation: Incarnation(0x0102_0304))
    static let session = SessionID(name: "living-room")

    static let valid: [(name: String, datagram: Datagram)] = [
        (
            "hello",
            Datagram(
                session: session, sender: sender, sequence: 1,
                payload: .hello(Announcement(unicastPort: 40_001, name: "alice")))
        ),
        (
            "hello-reply",
            Datagram(
                session: session, sender: sender, sequence: 2,
                payload: .hello(Announcement(isReply: true, unicastPort: 40_001, name: "alice")))
        ),
        (
            "heartbeat",
            Datagram(
                session: session, sender: sender, sequence: 3,
                payload: .heartbeat(Announcement(unicastPort: 40_001, name: "zoë")))
        ),
        ("leave", Datagram(session: session, sender: sender, sequence: 4, payload: .leave(.left))),
        ("leave-shutdown", Datagram(session: session, sender: sender, sequence: 5, payload: .leave(.shutdown))),
        (
            "probe",
            Datagram(
                session: session, sender: sender, sequence: 6,
                payload: .probe(
                    ClockProbe(
                        token: 0xFEED_F00D_0000_0001, originWall: WallInstant(unixNanos: 1_780_000_000_123_456_789))))
        ),
        (
            "probe-reply",
            Datagram(
                session: session, sender: sender, sequence: 7,
                payload: .probeReply(
                    ClockProbeReply(
                        token: 0xFEED_F00D_0000_0001, originWall: WallInstant(unixNanos: 1_780_000_000_123_456_789),
                        receiveWall: WallInstant(unixNanos: 1_780_000_000_623_500_000),
                        transmitWall: WallInstant(unixNanos: 1_780_000_000_623_510_000))))
        ),
        (
            "tagged-heartbeat",
            Datagram(
                session: session, sender: sender, sequence: 8,
                payload: .heartbeat(Announcement(unicastPort: 40_001, name: "alice")),
                authTag: Array(repeating: 0xAB, count: 16))
        ),
        (
            "heartbeat-with-digest",
            Datagram(
                session: session, sender: sender, sequence: 9,
                payload: .heartbeat(
                    Announcement(
                        unicastPort: 40_001, name: "alice", item: "bbb", isWaiting: true, isReady: true,
                        suspensions: ["stallRecovery"],
                        digest: VectorClock([sender: 2, other: 5]))))
        ),
        (
            "heartbeat-waits-out",
            Datagram(
                session: session, sender: sender, sequence: 9,
                payload: .heartbeat(
                    Announcement(
                        unicastPort: 40_001, name: "alice", item: "bbb", isWaiting: true, waitsOutSuspensions: true)))
        ),
        (
            "heartbeat-path",
            Datagram(
                session: session, sender: sender, sequence: 10,
                payload: .heartbeat(
                    Announcement(
                        unicastPort: 40_001, name: "alice",
                        path: PathStamp(number: 7, sentAt: WallInstant(unixNanos: 1_780_000_000_123_456_789)),
                        wantsUnicast: true)))
        ),
        (
            "command-share",
            Datagram(
                session: session, sender: sender, sequence: 10,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 1), lamport: 1, dependencies: VectorClock(),
                        command: Command(
                            item: "bbb",
                            operation: .share(
                                Activity(
                                    url: "https://example.com/bbb.mp4", itemID: "bbb", title: "Big Buck Bunny",
                                    subtitle: "2008", type: "movie", fallbackURL: "https://example.org/bbb-480p.mp4",
                                    durationSeconds: 596.5)))),
                    isRepair: false))
        ),
        (
            "command-share-live",
            Datagram(
                session: session, sender: sender, sequence: 12,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 3), lamport: 8, dependencies: VectorClock(),
                        command: Command(
                            item: "news",
                            operation: .share(
                                Activity(url: "http://tv.example/news/live.m3u8", itemID: "news", live: true)))),
                    isRepair: false))
        ),
        (
            "command-play",
            Datagram(
                session: session, sender: sender, sequence: 11,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 2), lamport: 7, dependencies: VectorClock([other: 5]),
                        command: Command(
                            item: "bbb",
                            operation: .play(
                                rate: 1, position: 12.5, requestedAt: WallInstant(unixNanos: 1_780_000_000_000_000_000))
                        )), isRepair: false))
        ),
        (
            "command-start-repair",
            Datagram(
                session: session, sender: sender, sequence: 12,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 3), lamport: 8, dependencies: VectorClock([other: 5]),
                        command: Command(
                            item: "bbb",
                            operation: .start(
                                rate: 1, position: 12.5, at: WallInstant(unixNanos: 1_780_000_000_060_000_000),
                                trigger: Dot(origin: sender, counter: 2)))), isRepair: true))
        ),
        (
            "command-pause",
            Datagram(
                session: session, sender: sender, sequence: 13,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 4), lamport: 9, dependencies: VectorClock([other: 6]),
                        command: Command(
                            item: "bbb",
                            operation: .pause(position: 42.25, at: WallInstant(unixNanos: 1_780_000_030_000_000_000)))),
                    isRepair: false))
        ),
        (
            "command-seek",
            Datagram(
                session: session, sender: sender, sequence: 14,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 5), lamport: 10, dependencies: VectorClock(),
                        command: Command(
                            item: "bbb",
                            operation: .seek(
                                position: 90, resumeRate: 1,
                                requestedAt: WallInstant(unixNanos: 1_780_000_031_000_000_000)))), isRepair: false))
        ),
        (
            "command-play-now",
            Datagram(
                session: session, sender: sender, sequence: 15,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 6), lamport: 11, dependencies: VectorClock(),
                        command: Command(
                            item: "bbb",
                            operation: .playNow(
                                rate: 2, position: 90, at: WallInstant(unixNanos: 1_780_000_032_000_000_000)))),
                    isRepair: false))
        ),
        (
            "command-rate",
            Datagram(
                session: session, sender: sender, sequence: 16,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 7), lamport: 12, dependencies: VectorClock(),
                        command: Command(
                            item: "bbb",
                            operation: .rate(
                                rate: 0.5, position: 91, at: WallInstant(unixNanos: 1_780_000_033_000_000_000)))),
                    isRepair: false))
        ),
        (
            "nack",
            Datagram(
                session: session, sender: sender, sequence: 17,
                payload: .nack([MissingRange(origin: other, from: 3, to: 5)]))
        ),
        (
            "ready",
            Datagram(
                session: session, sender: sender, sequence: 18, payload: .ready(trigger: Dot(origin: other, counter: 4))
            )
        ),
        ("end", Datagram(session: session, sender: sender, sequence: 19, payload: .end(reason: "movie over"))),
        (
            "command-message",
            Datagram(
                session: session, sender: sender, sequence: 20,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 8), lamport: 13, dependencies: VectorClock(),
                        command: Command(
                            item: MessagePart.itemMarker,
                            operation: .message(
                                MessagePart(
                                    messageID: 1, index: 0, count: 1, recipients: [other],
                                    bytes: Array("pizza is here".utf8))))),
                    isRepair: false))
        ),
        (
            "command-queue-add",
            queueCommand(
                sequence: 26, counter: 9, item: QueueChange.itemMarker,
                .add(
                    QueueItem(id: "ep2", url: "https://example.com/ep2.mp4", title: "Episode 2", durationSeconds: 1320),
                    at: QueuePosition([
                        .init(digit: 7, site: 0x0123_4567_89AB_CDEF, counter: 3),
                        .init(digit: 19, site: 0x0123_4567_89AB_CDEF, counter: 14),
                    ])))
        ),
        (
            "command-queue-remove",
            queueCommand(
                sequence: 27, counter: 10, item: QueueChange.itemMarker,
                .remove(id: "ep2", added: Dot(origin: other, counter: 4)))
        ),
        (
            "command-queue-move",
            queueCommand(
                sequence: 28, counter: 11, item: QueueChange.itemMarker,
                .move(id: "ep1", to: QueuePosition([.init(digit: 3, site: 0xFEDC_BA98_7654_3210, counter: 20)])))
        ),
        (
            "command-queue-clear",
            queueCommand(
                sequence: 29, counter: 12, item: QueueChange.itemMarker,
                .clear(covering: VectorClock([other: 6, sender: 11])))
        ),
        (
            "command-advance",
            queueCommand(
                sequence: 30, counter: 13, item: "ep2",
                .advance(
                    from: "ep1", to: QueueItem(id: "ep2", url: "https://example.com/ep2.mp4"), rate: 1,
                    requestedAt: WallInstant(unixNanos: 1_780_000_000_123_456_789)))
        ),
        (
            "command-queue-entry",
            queueCommand(
                sequence: 31, counter: 14, item: QueueChange.itemMarker,
                .placed(
                    QueueItem(id: "ep3", url: "https://example.com/ep3.mp4"),
                    at: QueuePosition([.init(digit: 40, site: 0xFEDC_BA98_7654_3210, counter: 21)]),
                    added: Dot(origin: other, counter: 5)))
        ),
        (
            "command-interstitial-at",
            command(
                sequence: 32, counter: 15, item: "ep2",
                .scheduleInterstitial(
                    Interstitial(id: "0a1b2c-i1", url: "https://example.com/ad.mp4", durationSeconds: 15),
                    at: 300))
        ),
        (
            "command-interstitial",
            command(
                sequence: 33, counter: 16, item: "ep2",
                .interstitial(
                    Interstitial(id: "0a1b2c-i1", url: "https://example.com/ad.mp4", durationSeconds: 15),
                    position: 300, rate: 1, requestedAt: WallInstant(unixNanos: 1_780_000_300_000_000_000)))
        ),
        (
            "unreliable-message",
            Datagram(
                session: session, sender: sender, sequence: 21,
                payload: .unreliableMessage(
                    MessagePart(messageID: 2, index: 1, count: 2, recipients: [], bytes: Array(" and cold".utf8))))
        ),
        (
            "peer-list",
            Datagram(
                session: session, sender: sender, sequence: 22,
                payload: .peerList([
                    PeerEntry(member: other, endpoint: Endpoint(address: 0x0A4D_0003, port: 47_800)),
                    PeerEntry(
                        member: Member(id: PeerID(0x1234), incarnation: Incarnation(9)),
                        endpoint: Endpoint(address: IPAddress.parse("fd77::3")!, port: 47_801)),
                ]))
        ),
        (
            "state-request",
            Datagram(session: session, sender: sender, sequence: 23, payload: .stateRequest(StateRequest()))
        ),
        (
            "state-request-resume",
            Datagram(
                session: session, sender: sender, sequence: 24,
                payload: .stateRequest(StateRequest(snapshot: 0x5EED_0000_C0FF_EE01, wanted: 0b110, base: 33)))
        ),
        (
            "state",
            Datagram(
                session: session, sender: sender, sequence: 25,
                payload: .state(
                    StatePart(
                        snapshot: 0x5EED_0000_C0FF_EE01, index: 0, count: 3, lamport: 42,
                        frontier: VectorClock([sender: 9, other: 30]),
                        winners: [
                            CommandEnvelope(
                                dot: Dot(origin: other, counter: 30), lamport: 42, dependencies: VectorClock(),
                                command: Command(
                                    item: "movie-42",
                                    operation: .pause(
                                        position: 754.25, at: WallInstant(unixNanos: 1_780_000_001_000_000_000)))),
                            CommandEnvelope(
                                dot: Dot(origin: sender, counter: 9), lamport: 40, dependencies: VectorClock(),
                                command: Command(
                                    item: MessagePart.itemMarker,
                                    operation: .message(
                                        MessagePart(
                                            messageID: 3, index: 0, count: 1, recipients: [other],
                                            bytes: Array("hi".utf8))))),
                        ])))
        ),
        (
            "timed-tagged-heartbeat",
            Datagram(
                session: session, sender: sender, sequence: 8,
                payload: .heartbeat(Announcement(unicastPort: 40_001, name: "alice")),
                sentAt: WallInstant(unixNanos: 1_780_000_000_123_456_789), authTag: Array(repeating: 0xAB, count: 16))
        ),
        (
            "command-play-ready",
            Datagram(
                session: session, sender: sender, sequence: 17,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: sender, counter: 8), lamport: 13, dependencies: VectorClock(),
                        command: Command(
                            item: "bbb",
                            operation: .playReady(
                                rate: 1, position: 42.5, at: WallInstant(unixNanos: 1_780_000_033_000_000_000)))),
                    isRepair: false))
        ),
        (
            "hello-viewer",
            Datagram(
                session: session, sender: sender, sequence: 2,
                payload: .hello(Announcement(unicastPort: 40_001, name: "alice", isViewer: true)))
        ),
        (
            // A viewer asking for a seat on the stage; a stage member's reply granting one.
            "hello-viewer-seat",
            Datagram(
                session: session, sender: sender, sequence: 3,
                payload: .hello(Announcement(unicastPort: 40_001, name: "alice", isViewer: true, seat: true)))
        ),
        (
            "hello-reply-seat",
            Datagram(
                session: session, sender: sender, sequence: 4,
                payload: .hello(Announcement(isReply: true, unicastPort: 40_001, name: "alice", seat: true)))
        ),
        (
            // A stage member's count: 412 viewers of its own, 998 in the audience it knows of.
            "audience",
            Datagram(
                session: session, sender: sender, sequence: 5,
                payload: .audience(AudienceSummary(viewers: 412, audience: 998)))
        ),
    ]

    /// The state vector with `mutate` applied to its bytes.
    static func queueCommand(
        sequence: UInt32, counter: UInt32, item: String, _ operation: QueueOperation
    ) -> Datagram {
        command(sequence: sequence, counter: counter, item: item, .queue(operation))
    }

    static func command(sequence: UInt32, counter: UInt32, item: String, _ operation: Operation)
        -> Datagram
    {
        Datagram(
            session: session, sender: sender, sequence: sequence,
            payload: .command(
                CommandEnvelope(
                    dot: Dot(origin: sender, counter: counter), lamport: UInt64(counter) + 10,
                    dependencies: VectorClock([other: 6]), command: Command(item: item, operation: operation)),
                isRepair: false))
    }

    static func state(_ mutate: (inout [UInt8]) -> Void) -> [UInt8] {
        var bytes = WireFormat.encode(valid.first { $0.name == "state" }!.datagram)
        mutate(&bytes)
        return bytes
    }

    static let other = Member(id: PeerID(0xFEDC_BA98_7654_3210), incarnation: Incarnation(7))

    /// The command-play vector with `mutate` applied to its bytes.
    static func commandPlay(_ mutate: (inout [UInt8]) -> Void) -> [UInt8] {
        var bytes = WireFormat.encode(valid.first { $0.name == "command-play" }!.datagram)
        mutate(&bytes)
        return bytes
    }

    /// Corruptions of valid datagrams, each with the verdict the decoder must give.
    static var invalid: [(name: String, bytes: [UInt8], kind: DecodeError.Kind)] {
        let hello = WireFormat.encode(valid[0].datagram)
        func patched(_ offset: Int, _ value: UInt8) -> [UInt8] {
            var copy = hello
            copy[offset] = value
            return copy
        }
        return [
            ("truncated-header", Array(hello.prefix(20)), .tooShort),
            ("oversized", hello + Array(repeating: 0, count: 1200), .tooLong),
            ("bad-magic", patched(0, 0x58), .badMagic),
            ("version-2", patched(4, 2), .unsupportedVersion),
            ("unknown-type", patched(5, 0x7F), .unknownType),
            ("reserved-flag", patched(6, 0x80), .badFlags),
            ("tag-length-without-flag", patched(7, 4), .badFlags),
            ("time-flag-without-time", patched(6, 0x02), .lengthMismatch),
            ("payload-length-too-long", patched(33, UInt8(hello.count - 34 + 1)), .lengthMismatch),
            ("truncated-payload", Array(hello.dropLast()), .lengthMismatch),
            ("zero-port", patched(36, 0).enumerated().map { $0.offset == 35 ? 0 : $0.element }, .malformedPayload),
            ("name-overrun", patched(37, 200), .malformedPayload),
            ("invalid-utf8-name", patched(38, 0xFF), .malformedPayload),
            // Every announcement flag bit has a meaning (0x80 is the seat): one field past its bound.
            ("announcement-suspensions-over-limit", patched(44, 9), .malformedPayload),
            (
                "announcement-number-0",
                {
                    var stamped = WireFormat.encode(valid[10].datagram)
                    stamped.replaceSubrange(stamped.count - 12..<stamped.count - 8, with: [0, 0, 0, 0])
                    return stamped
                }(), .malformedPayload
            ),
            (
                "leave-reason-9",
                {
                    var leave = WireFormat.encode(valid[3].datagram)
                    leave[34] = 9
                    return leave
                }(), .malformedPayload
            ),
            (
                "command-nan-rate",
                commandPlay {
                    $0.replaceSubrange($0.count - 24..<$0.count - 16, with: [0x7F, 0xF8, 0, 0, 0, 0, 0, 0])
                }, .malformedPayload
            ),
            (
                "command-zero-rate-play",
                commandPlay { $0.replaceSubrange($0.count - 24..<$0.count - 16, with: [0, 0, 0, 0, 0, 0, 0, 0]) },
                .malformedPayload
            ),
            ("command-unknown-operation", commandPlay { $0[$0.count - 25] = 0x63 }, .malformedPayload),
            (
                "audience-fewer-than-its-own",
                {
                    var summary = WireFormat.encode(valid.first { $0.name == "audience" }!.datagram)
                    summary[summary.count - 2] = 0  // the audience, 998 → 230, under its 412 own
                    return summary
                }(), .malformedPayload
            ),
            (
                "command-subnormal-rate",  // 5e-324: once a trap in "when does it reach the end"
                commandPlay { $0.replaceSubrange($0.count - 24..<$0.count - 16, with: [0, 0, 0, 0, 0, 0, 0, 1]) },
                .malformedPayload
            ),
            (
                "command-instant-before-1970",
                commandPlay { $0.replaceSubrange($0.count - 8..<$0.count, with: [0x80, 0, 0, 0, 0, 0, 0, 0]) },
                .malformedPayload
            ),
            (
                "probe-reply-instant-before-1970",  // extreme timestamps once overflowed offset arithmetic
                {
                    var reply = WireFormat.encode(valid.first { $0.name == "probe-reply" }!.datagram)
                    reply.replaceSubrange(34 + 16..<34 + 24, with: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
                    return reply
                }(), .malformedPayload
            ),
            (
                "command-lamport-max",  // 2^64 - 1: once an overflow in the causal log
                commandPlay {
                    // dot (member 12 + counter 4) then the Lamport timestamp, after the header and flags
                    $0.replaceSubrange(34 + 1 + 16..<34 + 1 + 24, with: [UInt8](repeating: 0xFF, count: 8))
                }, .malformedPayload
            ),
            ("state-part-beyond-count", state { $0[34 + 8] = 3 }, .malformedPayload),
            ("state-zero-parts", state { $0[34 + 9] = 0 }, .malformedPayload),
            (
                "queue-position-ending-in-zero",
                WireFormat.encode(
                    queueCommand(
                        sequence: 40, counter: 20, item: QueueChange.itemMarker,
                        .move(id: "ep1", to: QueuePosition([.init(digit: 0, site: 1, counter: 1)])))),
                .malformedPayload
            ),
            (
                "queue-advance-to-another-item",
                WireFormat.encode(
                    queueCommand(
                        sequence: 41, counter: 21, item: "ep9",
                        .advance(
                            from: nil, to: QueueItem(id: "ep2", url: "https://example.com/ep2.mp4"), rate: 0,
                            requestedAt: WallInstant(unixNanos: 1)))),
                .malformedPayload
            ),
            (
                "interstitial-of-no-duration",
                WireFormat.encode(
                    command(
                        sequence: 42, counter: 22, item: "ep2",
                        .scheduleInterstitial(
                            Interstitial(id: "x", url: "https://example.com/ad.mp4", durationSeconds: 0), at: 1))),
                .malformedPayload
            ),
            (
                "state-lamport-max",
                state { $0.replaceSubrange(34 + 10..<34 + 18, with: [UInt8](repeating: 0xFF, count: 8)) },
                .malformedPayload
            ),
            (
                "state-winner-above-lamport",  // the snapshot's clock is 42; make it 41
                state { $0[34 + 17] = 41 }, .malformedPayload
            ),
            (
                "state-winner-with-dependencies",
                {
                    var part = valid.first { $0.name == "state" }!.datagram
                    guard case .state(var body) = part.payload else { return [] }
                    body.winners[0].dependencies = VectorClock([sender: 1])
                    part.payload = .state(body)
                    return WireFormat.encode(part)
                }(), .malformedPayload
            ),
            (
                "digest-out-of-order",
                {
                    var heartbeat = WireFormat.encode(valid[8].datagram)
                    heartbeat.swapAt(heartbeat.count - 32, heartbeat.count - 16)
                    return heartbeat
                }(), .malformedPayload
            ),
            (
                "message-recipients-in-later-part",
                {
                    var bytes = WireFormat.encode(valid.first { $0.name == "unreliable-message" }!.datagram)
                    bytes[34 + 8] = 1  // a recipient count in part 1
                    return bytes
                }(), .malformedPayload
            ),
        ]
    }
}
