import CoplayCore
import Glibc

/// `coplay dump FILE|-`: every coplay datagram of a capture, one line (or JSON object) each.
public enum Dump {
    public struct Totals: Equatable, Sendable {
        public var packets = 0
        public var coplay = 0
        /// Coplay datagrams (they start with "CPLY") that did not decode.
        public var malformed = 0
        /// Packets that are not coplay (other protocols, other UDP).
        public var skipped = 0
        /// Where the file is cut off inside its last record, if it is (that record is not decoded).
        public var truncatedAt: Int?
        /// With a key file: datagrams whose tag is wrong (forged, or another key) or missing.
        public var forged = 0
        public var untagged = 0
        /// Frames of a relay (`--relay`) found in the capture's NATS connections, and how many of
        /// them did not open under the key file (or were not opened: no key file).
        public var relayFrames = 0
        public var relaySealed = 0
    }

    /// The lines for a whole capture, and the totals.
    /// With `keys`, each datagram's tag is checked (under the key derived for its session) and
    /// the line says `tag=valid`, `tag=FORGED` or `tag=absent`.
    public static func lines(for bytes: [UInt8], json: Bool, keys: [[UInt8]]? = nil) throws(CaptureError) -> (
        lines: [String], totals: Totals
    ) {
        var sessionKeys: [SessionID: GroupKeys] = [:]
        var totals = Totals()
        var names: [PeerID: String] = [:]
        var lines: [String] = []
        let contents = try CaptureFile.read(bytes)
        totals.truncatedAt = contents.truncatedAt
        var streams = RelayStreams()
        // The relay's seal does not depend on the session: any key file's frames open here.
        let seal = keys.map { RelaySeal(keys: $0, sessionName: "") }
        for packet in contents.packets {
            totals.packets += 1
            var found: [CapturedDatagram] = []
            if let datagram = PacketDecoder.udpDatagram(in: packet) {
                if datagram.payload.starts(with: WireFormat.magic) { found.append(datagram) }
            } else if let segment = PacketDecoder.tcpSegment(in: packet) {
                for frame in streams.add(segment) where frame.subject.hasPrefix("coplay.") {
                    totals.relayFrames += 1
                    guard let opened = seal?.open(frame.payload, subject: frame.subject) else {
                        totals.relaySealed += 1
                        lines.append(describeSealed(frame, keyed: seal != nil, json: json))
                        continue
                    }
                    found.append(
                        CapturedDatagram(
                            timestampNanos: frame.timestampNanos, source: frame.source, destination: frame.destination,
                            payload: opened, relaySubject: frame.subject))
                }
            }
            if found.isEmpty { totals.skipped += 1 }
            for datagram in found {
                describeDatagram(
                    datagram, keys: keys, sessionKeys: &sessionKeys, names: &names, totals: &totals, lines: &lines,
                    json: json)
            }
        }
        return (lines, totals)
    }

    /// One coplay datagram, from the network or opened from the relay: decoded, its tag checked.
    private static func describeDatagram(
        _ datagram: CapturedDatagram, keys: [[UInt8]]?, sessionKeys: inout [SessionID: GroupKeys],
        names: inout [PeerID: String], totals: inout Totals, lines: inout [String], json: Bool
    ) {
        totals.coplay += 1
        switch Result(catching: { () throws(DecodeError) -> Datagram in try WireFormat.decode(datagram.payload) }) {
        case .success(let decoded):
            if case .hello(let announcement) = decoded.payload { names[decoded.sender.id] = announcement.name }
            if case .heartbeat(let announcement) = decoded.payload { names[decoded.sender.id] = announcement.name }
            var verdict: String?
            if let keys {
                if sessionKeys[decoded.session] == nil, sessionKeys.count < 64 {
                    sessionKeys[decoded.session] = GroupKeys(keys: keys, session: decoded.session)
                }
                let groupKeys = sessionKeys[decoded.session] ?? GroupKeys(keys: keys, session: decoded.session)
                if decoded.authTag.isEmpty {
                    verdict = "absent"
                    totals.untagged += 1
                } else if decoded.authTag.count == GroupKeys.tagBytes, groupKeys.verifies(Array(datagram.payload)) {
                    verdict = "valid"
                } else {
                    verdict = "forged"
                    totals.forged += 1
                }
            }
            lines.append(
                describe(decoded, at: datagram, name: names[decoded.sender.id], tag: verdict, json: json))
        case .failure(let error):
            totals.malformed += 1
            lines.append(describeMalformed(error, at: datagram, json: json))
        }
    }

    /// A relay frame that was not opened: no key file, or another key.
    static func describeSealed(_ frame: RelayStreams.Frame, keyed: Bool, json: Bool) -> String {
        let why = keyed ? "does not open under the key file" : "sealed (--key-file opens it)"
        if json {
            return JSONValue.object([
                ("time", .int(frame.timestampNanos)), ("source", .string(frame.source.description)),
                ("destination", .string(frame.destination.description)), ("relaySubject", .string(frame.subject)),
                ("sealedBytes", .int(Int64(frame.payload.count))), ("opened", .bool(false)),
            ]).serialized
        }
        return
            "\(timeText(frame.timestampNanos)) \(frame.source) > \(frame.destination) relay \(frame.subject) \(frame.payload.count) bytes \(why)"
    }

    /// The largest capture read whole (1 GiB: a bound, not a limit anyone meets).
    static let capturedBytesMax = 1 << 30

    /// Runs the command: reads the file (or standard input for "-"), prints, returns the exit status.
    public static func run(path: String, json: Bool, keys: [[UInt8]]? = nil) -> Int32 {
        let name = path == "-" ? "standard input" : "'\(path)'"
        guard let bytes = readAll(path, bytesMax: capturedBytesMax) else {
            StandardStreams.writeError("coplay: cannot read \(name): \(String(cString: strerror(errno)))")
            return 1
        }
        guard bytes.count <= capturedBytesMax else {
            StandardStreams.writeError("coplay: \(name) is over \(capturedBytesMax >> 30) GiB: cut the capture first")
            return 1
        }
        do throws(CaptureError) {
            let (lines, totals) = try Self.lines(for: bytes, json: json, keys: keys)
            for line in lines { StandardStreams.writeOutput(line) }
            StandardStreams.writeError(
                "coplay dump: \(totals.packets) packets, \(totals.coplay) coplay datagrams (\(totals.malformed) malformed), \(totals.skipped) other packets skipped"
                    + (keys == nil ? "" : "; tags: \(totals.forged) forged, \(totals.untagged) absent")
                    + (totals.relayFrames == 0
                        ? "" : "; \(totals.relayFrames) relay frames, \(totals.relaySealed) not opened")
                    + (totals.truncatedAt.map { "; the last record, at offset \($0), is cut off (not decoded)" } ?? ""))
            return 0
        } catch {
            StandardStreams.writeError("coplay: \(path): \(error)")
            return 1
        }
    }

    /// The whole file (or standard input, `-`), up to `bytesMax`: past it, what was read so far
    /// plus one byte, so that the caller sees it is too long without reading the rest.
    static func readAll(_ path: String, bytesMax: Int = 1 << 30) -> [UInt8]? {
        let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { if fd != STDIN_FILENO { close(fd) } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 { if errno == EINTR { continue } else { return nil } }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > bytesMax { return bytes }
        }
    }

    // MARK: Description

    static func timeText(_ nanos: Int64) -> String {
        let seconds = nanos / 1_000_000_000
        let micros = (nanos % 1_000_000_000) / 1000
        let day = seconds % 86_400
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let fraction = String(micros)
        return
            "\(two(day / 3600)):\(two(day / 60 % 60)):\(two(day % 60)).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
    }

    static func describeMalformed(_ error: DecodeError, at datagram: CapturedDatagram, json: Bool) -> String {
        if json {
            return JSONValue.object([
                ("time", .int(datagram.timestampNanos)), ("source", .string(datagram.source.description)),
                ("destination", .string(datagram.destination.description)), ("malformed", .string(error.kind.rawValue)),
                ("detail", .string(error.detail)),
            ]).serialized
        }
        return "\(timeText(datagram.timestampNanos)) \(datagram.source) > \(datagram.destination) MALFORMED \(error)"
    }

    static func describe(
        _ datagram: Datagram, at captured: CapturedDatagram, name: String?, tag: String? = nil, json: Bool
    ) -> String {
        let (words, fields) = payloadDescription(datagram.payload)
        if json {
            var members: [(String, JSONValue)] = [
                ("time", .int(captured.timestampNanos)), ("source", .string(captured.source.description)),
                ("destination", .string(captured.destination.description)),
                ("type", .string(datagram.payload.type.description)),
                ("session", .string(datagram.session.description)), ("sender", .string(datagram.sender.id.description)),
                ("incarnation", .int(Int64(datagram.sender.incarnation.rawValue))),
                ("sequence", .int(Int64(datagram.sequence))),
            ]
            if let name { members.append(("senderName", .string(name))) }
            if let sentAt = datagram.sentAt {
                members.append(("sentTimeUnixNanos", .int(sentAt.unixNanos)))
                members.append(("ageNanos", .int(captured.timestampNanos &- sentAt.unixNanos)))
            }
            if !datagram.authTag.isEmpty { members.append(("authTagBytes", .int(Int64(datagram.authTag.count)))) }
            if let tag { members.append(("tag", .string(tag))) }
            if let subject = captured.relaySubject { members.append(("relaySubject", .string(subject))) }
            return JSONValue.object(members + fields).serialized
        }
        let who = name.map { "\($0) " } ?? ""
        let via = captured.relaySubject.map { " relay \($0)" } ?? ""
        // The send time as an age: how long before the capture the sender stamped it, by the two
        // machines' clocks (a replayed recording shows its true age here).
        let age = datagram.sentAt.map { " age=\(ageText(captured.timestampNanos &- $0.unixNanos))" } ?? ""
        return
            "\(timeText(captured.timestampNanos)) \(captured.source) > \(captured.destination)\(via) \(datagram.payload.type) session=\(datagram.session.description.prefix(8)) from \(who)\(datagram.sender) seq=\(datagram.sequence)\(age) \(words)"
            + (tag.map { " tag=\($0 == "forged" ? "FORGED" : $0)" } ?? "")
    }

    /// An age in milliseconds with a sign, three decimals: `+0.412ms`, `-1.000ms`, `+86400000.000ms`.
    static func ageText(_ nanos: Int64) -> String {
        let magnitude = nanos.magnitude
        let micros = magnitude / 1000
        return "\(nanos < 0 ? "-" : "+")\(micros / 1000).\(String(micros % 1000 + 1000).dropFirst())ms"
    }

    static func clock(_ clock: VectorClock) -> JSONValue {
        .array(
            clock.sorted.map {
                .object([
                    ("id", .string($0.member.id.description)),
                    ("incarnation", .int(Int64($0.member.incarnation.rawValue))), ("count", .int(Int64($0.count))),
                ])
            })
    }

    static func dot(_ dot: Dot) -> JSONValue {
        .object([
            ("id", .string(dot.origin.id.description)), ("incarnation", .int(Int64(dot.origin.incarnation.rawValue))),
            ("counter", .int(Int64(dot.counter))),
        ])
    }

    /// The payload in words, and as JSON fields.
    static func payloadDescription(_ payload: Payload) -> (String, [(String, JSONValue)]) {
        switch payload {
        case .hello(let a), .heartbeat(let a):
            var flags: [String] = []
            if a.isReply { flags.append("reply") }
            if a.isWaiting { flags.append("waiting") }
            if a.isReady { flags.append("ready") }
            if a.waitsOutSuspensions { flags.append("waits-out") }
            if a.wantsUnicast { flags.append("wants-unicast") }
            let stamp = a.path.map { " number=\($0.number) sent=\($0.sentAt.unixNanos)" } ?? ""
            let words =
                "name=\(a.name) port=\(a.unicastPort) item=\(a.item ?? "-")\(flags.isEmpty ? "" : " " + flags.joined(separator: ","))"
                + "\(a.suspensions.isEmpty ? "" : " suspensions=" + a.suspensions.joined(separator: ",")) digest=\(a.digest)"
                + stamp
            return (
                words,
                [
                    ("name", .string(a.name)), ("unicastPort", .int(Int64(a.unicastPort))), ("reply", .bool(a.isReply)),
                    ("waiting", .bool(a.isWaiting)), ("ready", .bool(a.isReady)),
                    ("waitsOutSuspensions", .bool(a.waitsOutSuspensions)),
                    ("item", a.item.map { .string($0) } ?? .null),
                    ("suspensions", .array(a.suspensions.map { .string($0) })), ("digest", clock(a.digest)),
                    ("wantsUnicast", .bool(a.wantsUnicast)),
                ]
                    + (a.path.map {
                        [("number", .int(Int64($0.number))), ("sentAtUnixNanos", .int($0.sentAt.unixNanos))]
                    } ?? [])
            )
        case .leave(let reason):
            return ("reason=\(reason)", [("reason", .string(reason.description))])
        case .probe(let probe):
            return (
                "token=\(probe.token) t1=\(probe.originWall.unixNanos)",
                [("token", .string(String(probe.token))), ("t1", .int(probe.originWall.unixNanos))]
            )
        case .probeReply(let reply):
            return (
                "token=\(reply.token) t1=\(reply.originWall.unixNanos) t2=\(reply.receiveWall.unixNanos) t3=\(reply.transmitWall.unixNanos)",
                [
                    ("token", .string(String(reply.token))), ("t1", .int(reply.originWall.unixNanos)),
                    ("t2", .int(reply.receiveWall.unixNanos)),
                    ("t3", .int(reply.transmitWall.unixNanos)),
                ]
            )
        case .command(let envelope, let isRepair):
            let (operation, operationFields) = operationDescription(envelope.command.operation)
            return (
                "\(envelope.command.operation.name) item=\(envelope.command.item) \(operation) dot=\(envelope.dot) lamport=\(envelope.lamport) deps=\(envelope.dependencies)\(isRepair ? " (repair)" : "")",
                [
                    ("operation", .string(envelope.command.operation.name)), ("item", .string(envelope.command.item)),
                    ("dot", dot(envelope.dot)), ("lamport", .int(Int64(envelope.lamport))),
                    ("dependencies", clock(envelope.dependencies)),
                    ("repair", .bool(isRepair)),
                ] + operationFields
            )
        case .nack(let ranges):
            return (
                "missing " + ranges.map { "\($0.origin):\($0.from)...\($0.to)" }.joined(separator: " "),
                [
                    (
                        "ranges",
                        .array(
                            ranges.map {
                                .object([
                                    ("id", .string($0.origin.id.description)),
                                    ("incarnation", .int(Int64($0.origin.incarnation.rawValue))),
                                    ("from", .int(Int64($0.from))), ("to", .int(Int64($0.to))),
                                ])
                            })
                    )
                ]
            )
        case .ready(let trigger):
            return ("for \(trigger)", [("trigger", dot(trigger))])
        case .end(let reason):
            return ("reason=\(reason)", [("reason", .string(reason))])
        case .audience(let summary):
            return (
                "viewers=\(summary.viewers) audience=\(summary.audience)",
                [("viewers", .int(Int64(summary.viewers))), ("audience", .int(Int64(summary.audience)))]
            )
        case .unreliableMessage(let part):
            let (words, fields) = partDescription(part)
            return (words, fields)
        case .peerList(let entries):
            return (
                entries.isEmpty ? "no peers" : entries.map { "\($0.member)@\($0.endpoint)" }.joined(separator: " "),
                [
                    (
                        "peers",
                        .array(
                            entries.map {
                                .object([
                                    ("id", .string($0.member.id.description)),
                                    ("incarnation", .int(Int64($0.member.incarnation.rawValue))),
                                    ("address", .string($0.endpoint.description)),
                                ])
                            })
                    )
                ]
            )
        case .stateRequest(let request):
            let wanted = (0..<32).filter { request.wanted & (1 << UInt32($0)) != 0 }
            return (
                request.snapshot == 0
                    ? "whole snapshot"
                    : "snapshot \(String(request.snapshot, radix: 16)) parts \(wanted.map { String($0 + 1) }.joined(separator: ","))",
                [
                    ("snapshot", .string(String(request.snapshot, radix: 16))),
                    ("wanted", .array(wanted.map { .int(Int64($0)) })),
                ]
            )
        case .state(let part):
            let winners = part.winners.map { winner -> JSONValue in
                let (_, operationFields) = operationDescription(winner.command.operation)
                return .object(
                    [
                        ("operation", .string(winner.command.operation.name)), ("item", .string(winner.command.item)),
                        ("dot", dot(winner.dot)), ("lamport", .int(Int64(winner.lamport))),
                    ] + operationFields)
            }
            return (
                "snapshot \(String(part.snapshot, radix: 16)) part \(part.index + 1)/\(part.count) lamport=\(part.lamport) frontier=\(part.frontier) winners="
                    + (part.winners.isEmpty
                        ? "none"
                        : part.winners.map { "\($0.command.operation.name):\($0.command.item)@\($0.dot)" }.joined(
                            separator: ",")),
                [
                    ("snapshot", .string(String(part.snapshot, radix: 16))), ("index", .int(Int64(part.index))),
                    ("count", .int(Int64(part.count))), ("lamport", .int(Int64(part.lamport))),
                    ("frontier", clock(part.frontier)), ("winners", .array(winners)),
                ]
            )
        }
    }

    static func partDescription(_ part: MessagePart) -> (String, [(String, JSONValue)]) {
        (
            "message \(part.messageID) part \(part.index + 1)/\(part.count) \(part.bytes.count) bytes\(part.recipients.isEmpty ? "" : " to \(part.recipients.count)")",
            [
                ("messageID", .int(Int64(part.messageID))), ("part", .int(Int64(part.index))),
                ("parts", .int(Int64(part.count))),
                ("recipients", .array(part.recipients.map { .string($0.description) })),
                ("bytes", .int(Int64(part.bytes.count))),
            ]
        )
    }

    static func operationDescription(_ operation: Operation) -> (String, [(String, JSONValue)]) {
        switch operation {
        case .share(let a):
            return (
                "url=\(a.url) title=\"\(a.title)\"\(a.durationSeconds.map { " duration=\($0)" } ?? "")",
                [
                    ("url", .string(a.url)), ("title", .string(a.title)), ("subtitle", .string(a.subtitle)),
                    ("itemType", .string(a.type)), ("fallbackURL", .string(a.fallbackURL)),
                    ("duration", a.durationSeconds.map { .double($0) } ?? .null),
                ]
            )
        case .play(let rate, let position, let requestedAt):
            return (
                "rate=\(rate) position=\(position)",
                [
                    ("rate", .double(rate)), ("position", .double(position)),
                    ("requestedAt", .int(requestedAt.unixNanos)),
                ]
            )
        case .seek(let position, let resumeRate, let requestedAt):
            return (
                "position=\(position) resume-rate=\(resumeRate)",
                [
                    ("position", .double(position)), ("resumeRate", .double(resumeRate)),
                    ("requestedAt", .int(requestedAt.unixNanos)),
                ]
            )
        case .start(let rate, let position, let at, let trigger):
            return (
                "rate=\(rate) position=\(position) at=\(at.unixNanos) for \(trigger)",
                [
                    ("rate", .double(rate)), ("position", .double(position)), ("at", .int(at.unixNanos)),
                    ("trigger", dot(trigger)),
                ]
            )
        case .playNow(let rate, let position, let at), .playReady(let rate, let position, let at),
            .rate(let rate, let position, let at):
            return (
                "rate=\(rate) position=\(position) at=\(at.unixNanos)",
                [("rate", .double(rate)), ("position", .double(position)), ("at", .int(at.unixNanos))]
            )
        case .pause(let position, let at):
            return (
                "position=\(position) at=\(at.unixNanos)",
                [("position", .double(position)), ("at", .int(at.unixNanos))]
            )
        case .message(let part):
            return partDescription(part)
        case .queue(let operation):
            return queueDescription(operation)
        case .scheduleInterstitial(let interstitial, let at):
            return (
                "\(interstitial.id) url=\(interstitial.url) duration=\(interstitial.durationSeconds) at=\(at)",
                interstitialFields(interstitial) + [("at", .double(at))]
            )
        case .interstitial(let interstitial, let position, let rate, let requestedAt):
            return (
                "\(interstitial.id) url=\(interstitial.url) duration=\(interstitial.durationSeconds) position=\(position) rate=\(rate)",
                interstitialFields(interstitial) + [
                    ("position", .double(position)), ("rate", .double(rate)),
                    ("requestedAt", .int(requestedAt.unixNanos)),
                ]
            )
        }
    }

    static func interstitialFields(_ interstitial: Interstitial) -> [(String, JSONValue)] {
        [
            ("interstitial", .string(interstitial.id)), ("url", .string(interstitial.url)),
            ("duration", .double(interstitial.durationSeconds)),
        ]
    }

    static func queueDescription(_ operation: QueueOperation) -> (String, [(String, JSONValue)]) {
        func item(_ item: QueueItem) -> (String, [(String, JSONValue)]) {
            (
                "entry=\(item.id) url=\(item.url) title=\"\(item.title)\"\(item.durationSeconds.map { " duration=\($0)" } ?? "")",
                [
                    ("entry", .string(item.id)), ("url", .string(item.url)), ("title", .string(item.title)),
                    ("duration", item.durationSeconds.map { .double($0) } ?? .null),
                ]
            )
        }
        func position(_ position: QueuePosition) -> JSONValue {
            .array(
                position.identifiers.map {
                    .object([
                        ("digit", .int(Int64($0.digit))), ("site", .string(hex16($0.site))),
                        ("counter", .int(Int64($0.counter))),
                    ])
                })
        }
        switch operation {
        case .add(let entry, let at):
            let (words, fields) = item(entry)
            return ("\(words) at=\(at)", fields + [("position", position(at))])
        case .placed(let entry, let at, let added):
            let (words, fields) = item(entry)
            return ("\(words) at=\(at) added=\(added)", fields + [("position", position(at)), ("added", dot(added))])
        case .remove(let id, let added):
            return ("entry=\(id) added=\(added)", [("entry", .string(id)), ("added", dot(added))])
        case .move(let id, let to):
            return ("entry=\(id) to=\(to)", [("entry", .string(id)), ("position", position(to))])
        case .clear(let covering):
            return ("covering=\(covering)", [("covering", clock(covering))])
        case .advance(let from, let to, let rate, let requestedAt):
            let (words, fields) = item(to)
            return (
                "from=\(from ?? "-") to \(words) rate=\(rate)",
                [("from", from.map { .string($0) } ?? .null)] + fields + [
                    ("rate", .double(rate)), ("requestedAt", .int(requestedAt.unixNanos)),
                ]
            )
        }
    }

    private static func hex16(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
