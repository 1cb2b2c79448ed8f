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
    ]

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
            ("payload-length-too-long", patched(33, UInt8(hello.count - 34 + 1)), .lengthMismatch),
            ("truncated-payload", Array(hello.dropLast()), .lengthMismatch),
            ("zero-port", patched(36, 0).enumerated().map { $0.offset == 35 ? 0 : $0.element }, .malformedPayload),
            ("name-overrun", patched(37, 200), .malformedPayload),
            ("invalid-utf8-name", patched(38, 0xFF), .malformedPayload),
            (
                "leave-reason-9",
                {
                    var leave = WireFormat.encode(valid[3].datagram)
                    leave[34] = 9
                    return leave
                }(), .malformedPayload
            ),
        ]
    }
}
