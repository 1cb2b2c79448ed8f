/// Why a received datagram was not acted on.
public enum DropReason: String, CaseIterable, Hashable, Sendable {
    // The decoder's verdicts (see `DecodeError.Kind`).
    case tooShort, tooLong, badMagic, unsupportedVersion, unknownType, badFlags, lengthMismatch, malformedPayload,
        unauthenticated
    /// Well formed, but for another session on the same group.
    case otherSession
    /// Carries this agent's id with another incarnation: two agents share an id.
    case idConflict
    /// From a membership that has left or was declared dead.
    case fromDeparted
    /// From an incarnation older than the one known for that id.
    case staleIncarnation
    /// From an unknown peer while the peer table is full.
    case peerTableFull
    /// Arrived while this agent is not joined.
    case notJoined
    /// A probe reply matching no outstanding probe (late, duplicated or forged).
    case unexpectedProbeReply
    /// A probe reply whose timestamps cannot be right.
    case implausibleProbeReply
    /// A message that only makes sense from a known peer, from an unknown one.
    case unknownSender
    /// A command arrived while too many were waiting for their predecessors (it will be repaired).
    case pendingFull
    /// A command waits on more of an origin's commands than any agent keeps for repair.
    case unrepairableGap
    /// With a group key: a datagram without a tag.
    case missingTag
    /// With a group key: a tag that is not right (forged, or another key).
    case badTag
    /// With a group key: a sequence number already accepted from that sender (a replay).
    case replayed
    /// With a group key: sent too long before it arrived (a recording replayed, a relay's stale
    /// backlog), or stamped too far ahead, or without a send time (`Freshness`).
    case stale
    /// An incarnation far beyond what this agent's clock allows (a takeover attempt).
    case implausibleIncarnation
    /// From a source no network has: a relay endpoint, on a socket.
    case forgedSource
    /// A snapshot whose parts cannot be true (disagreeing parts, a winner beyond the frontier, a
    /// frontier implausibly far ahead): the transfer was dropped.
    case badState
    /// A snapshot part not wanted now: another transfer is under way, the part came twice, or the
    /// sender's clock is not known yet (the transfer starts again).
    case stateNotWanted

    /// Whether a drop of this kind says something is wrong (garbage, a misconfigured or hostile
    /// sender) and deserves a diagnostic line, rather than being the normal echo of loss,
    /// reordering and departures, which is only counted.
    public var isWorthADiagnostic: Bool {
        switch self {
        case .tooShort, .tooLong, .badMagic, .unsupportedVersion, .unknownType, .badFlags, .lengthMismatch,
            .malformedPayload, .unauthenticated, .idConflict, .peerTableFull, .implausibleProbeReply, .missingTag,
            .badTag, .stale, .implausibleIncarnation, .forgedSource, .badState:
            true
        case .otherSession, .fromDeparted, .staleIncarnation, .notJoined, .unexpectedProbeReply, .unknownSender,
            .pendingFull, .unrepairableGap, .replayed, .stateNotWanted:
            false
        }
    }

    init(_ kind: DecodeError.Kind) {
        switch kind {
        case .tooShort: self = .tooShort
        case .tooLong: self = .tooLong
        case .badMagic: self = .badMagic
        case .unsupportedVersion: self = .unsupportedVersion
        case .unknownType: self = .unknownType
        case .badFlags: self = .badFlags
        case .lengthMismatch: self = .lengthMismatch
        case .malformedPayload: self = .malformedPayload
        case .unauthenticated: self = .unauthenticated
        }
    }
}

/// What an instance has counted since it was created. 64 bits wide everywhere: where `Int` is
/// 32 bits (WebAssembly), a busy participant's counts pass 2^31 in days (bytes in hours).
public struct Counters: Hashable, Sendable {
    public var datagramsReceived: Int64 = 0
    public var datagramsSent: Int64 = 0
    public var bytesSent: Int64 = 0
    /// Own multicast datagrams looped back by the kernel (expected, not an error).
    public var ownEchoes: Int64 = 0
    /// Datagrams dropped unread: strangers past their share of a turn of reading (`ReceiveTurn`).
    public var receiveQueueDrops: Int64 = 0
    /// Relay frames that did not open under the group's keys (another key, or tampering), or
    /// held no datagram (`RelayCarriage`).
    public var relayFramesRefused: Int64 = 0
    /// A party with an audience (`Audience`): viewers not counted because this stage member's
    /// table was full, and commands this stage member carried to the audience on its clock.
    public var viewersRefused: Int64 = 0
    public var commandsCarried: Int64 = 0
    /// Seats on the stage this speaker granted to viewers that asked (a viewer whose answer was
    /// lost and that asks again is granted again), and the seat this agent took itself, having
    /// heard no stage in time (0 or 1: `AudienceSettings.Role.firstCome`).
    public var seatsGranted: Int64 = 0
    public var seatsTakenAlone: Int64 = 0
    /// Datagrams a viewer heard on the LAN and left unread (its one path is the relay).
    public var lanIgnoredAsViewer: Int64 = 0
    public var drops: [DropReason: Int64] = [:]
    /// Datagrams decoded, and datagrams built here, by type (a multicast is built once, whoever
    /// receives it): what the traffic is made of, which the totals do not say. At most one key
    /// per `MessageType`.
    public var receivedByType: [MessageType: Int64] = [:]
    public var builtByType: [MessageType: Int64] = [:]
    public var commandErrors: Int64 = 0
    /// Commands delivered (each exactly once), applied to the player, or outranked by a
    /// concurrent command already in force; commands received again; nacks sent.
    public var commandsDelivered: Int64 = 0
    public var commandsApplied: Int64 = 0
    public var commandsSuperseded: Int64 = 0
    public var duplicateCommands: Int64 = 0
    public var nacksSent: Int64 = 0
    /// State transfer: requests sent, snapshots (or resumed parts of one) sent, snapshots adopted
    /// and the commands they stood for that this agent had not delivered.
    public var stateRequestsSent: Int64 = 0
    public var statesSent: Int64 = 0
    public var statesAdopted: Int64 = 0
    public var commandsCoveredByState: Int64 = 0
    /// Times the player was re-anchored to the group's timeline as the clocks drifted.
    public var driftCorrections: Int64 = 0
    /// Position samples the player reported while playing; rate nudges and seeks they caused.
    public var playerSamples: Int64 = 0
    public var rateNudges: Int64 = 0
    public var seekCorrections: Int64 = 0
    /// App messages sent, delivered here, and given up (parts missing or over the limits).
    public var messagesSent: Int64 = 0
    public var messagesReceived: Int64 = 0
    public var messagesIncomplete: Int64 = 0
    /// Queue adds not taken in because the queue held `Settings.queueEntriesMax` entries.
    public var queueAddsRefused: Int64 = 0
    /// Group interstitials not scheduled because the item had `Settings.interstitialsScheduledMax`.
    public var interstitialsRefused: Int64 = 0

    public init() {}

    /// What a machine counts: it says so in an output, and the router adds it here.
    public enum Tally: Hashable, Sendable {
        case commandsApplied, commandsSuperseded, driftCorrections, playerSamples, rateNudges, seekCorrections,
            messagesSent, messagesReceived, messagesIncomplete, queueAddsRefused, interstitialsRefused
    }

    mutating func add(_ tally: Tally) {
        switch tally {
        case .commandsApplied: commandsApplied += 1
        case .commandsSuperseded: commandsSuperseded += 1
        case .driftCorrections: driftCorrections += 1
        case .playerSamples: playerSamples += 1
        case .rateNudges: rateNudges += 1
        case .seekCorrections: seekCorrections += 1
        case .messagesSent: messagesSent += 1
        case .messagesReceived: messagesReceived += 1
        case .messagesIncomplete: messagesIncomplete += 1
        case .queueAddsRefused: queueAddsRefused += 1
        case .interstitialsRefused: interstitialsRefused += 1
        }
    }

    public var dropsTotal: Int64 { drops.values.reduce(0, +) }

    /// Counts a drop and returns how many of that reason there have been.
    @discardableResult
    mutating func drop(_ reason: DropReason) -> Int64 {
        drops[reason, default: 0] += 1
        return drops[reason]!
    }

    /// Counts a dropped datagram, and says so (`from`: where it came from; nil for a timer) for
    /// the first `Settings.dropDiagnosticsFirst` of a reason worth it, then every
    /// `dropDiagnosticEvery`th: a flood of junk prints a line now and then, not one per datagram.
    mutating func drop(
        _ reason: DropReason, detail: String, from source: Endpoint?, settings: Settings
    ) -> String? {
        let count = drop(reason)
        guard reason.isWorthADiagnostic,
            count <= Int64(settings.dropDiagnosticsFirst) || count % Int64(max(1, settings.dropDiagnosticEvery)) == 0
        else { return nil }
        return
            "dropped datagram \(source.map { "from \($0)" } ?? "(timer)"): \(reason.rawValue) (\(detail)); \(count) so far"
    }
}
