/// One reason this participant is separated from the group's playback (AVCoordinatedPlaybackSuspension).
public struct Suspension: Hashable, Sendable {
    public var id: UInt32
    /// A built-in reason (`Suspension.builtInReasons`) or any other string.
    public var reason: String
    public var began: MonotonicInstant

    public static let stallRecovery = "stallRecovery"
    public static let whatHappened = "whatHappened"
    public static let playingInterstitial = "playingInterstitial"
    /// The reasons AVFoundation defines; any other string is a custom reason.
    public static let builtInReasons = [
        "audioSessionInterrupted", "stallRecovery", "playingInterstitial", "coordinatedPlaybackNotPossible",
        "userActionRequired", "userIsChangingCurrentTime",
    ]
}

/// A time proposed with `resume <id> at=<seconds>` while other suspensions remained: it is sent
/// to the group when the last one ends, unless a group command for the item arrived meanwhile.
struct PendingProposal: Hashable, Sendable {
    var position: Double
    var item: String
    /// The item's winning command when the proposal was made.
    var winner: Dot?
}

/// This participant's active suspensions: their ids, their order, the limit, and a time proposed
/// for when the last ends. What a suspension does to the player is playback's business; this
/// machine only keeps the books, so that every rule about "while suspended" reads one truth.
struct Suspensions: Sendable {
    /// Oldest first. At most `Announcement.suspensionsMax` begun by a person (`isFull` refuses
    /// more), plus the built-in `stallRecovery` and `whatHappened`, each at most once (their callers
    /// check `contains`): never more than `suspensionsMax + 2`. Announcements carry the first
    /// `suspensionsMax`.
    private(set) var active: [Suspension] = []
    private var nextID: UInt32 = 1
    /// Set by `resume … at=` and taken when the last suspension ends.
    var proposal: PendingProposal?
    /// The player could not load the current item (`PlayerReport.loadFailed`): announced as
    /// `cannotPlay:<kind>` after the suspensions, so that everyone sees why this participant is
    /// not watching, until another item is loaded. Not a suspension: this participant's commands
    /// still drive the group.
    var cannotPlay: PlaybackProblem?
    /// The player plays another encode of the current item (`PlayerReport.anotherEncode`):
    /// announced as `Suspensions.anotherEncode` after the rest, until another item is loaded. Not
    /// a suspension either: peers take it out of the list (`PeerRecord.copy`) and wait for this
    /// participant as for any other.
    var playsAnotherEncode = false
    /// How an announcement says that its player plays another encode of the item.
    public static let anotherEncode = "copy:anotherEncode"

    var isSuspended: Bool { !active.isEmpty }
    var reasons: [String] { active.map { $0.reason } }
    var isFull: Bool { active.count >= Announcement.suspensionsMax }
    func contains(_ reason: String) -> Bool { active.contains { $0.reason == reason } }
    func find(id: UInt32) -> Suspension? { active.first { $0.id == id } }

    /// Begins a suspension (the caller checked `isFull` where a person asked for it). None is
    /// ever dropped to make room: each ends only with its own end event.
    mutating func begin(_ reason: String, now: MonotonicInstant) -> Suspension {
        let suspension = Suspension(id: nextID, reason: reason, began: now)
        nextID &+= 1
        if nextID == 0 { nextID = 1 }
        active.append(suspension)
        return suspension
    }

    /// Ends a suspension; returns it if it was active.
    mutating func end(_ suspension: Suspension) -> Suspension? {
        guard let index = active.firstIndex(of: suspension) else { return nil }
        return active.remove(at: index)
    }

    /// Ends the oldest suspension with this reason, if any.
    mutating func end(reason: String) -> Suspension? {
        guard let suspension = active.first(where: { $0.reason == reason }) else { return nil }
        return end(suspension)
    }

    /// What announcements carry: each reason cut to the wire's limit, the player's problem last
    /// (in the last place when the suspensions fill the list).
    var announced: [String] {
        let problem = (cannotPlay.map { [$0.announcedReason] } ?? []) + (playsAnotherEncode ? [Self.anotherEncode] : [])
        return active.prefix(Announcement.suspensionsMax - problem.count).map {
            String($0.reason.utf8.prefix(Announcement.suspensionReasonBytesMax)) ?? "custom"
        } + problem
    }
}
