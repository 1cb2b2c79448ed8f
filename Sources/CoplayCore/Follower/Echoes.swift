/// The changes a follower asked of its player (a pause, a rate) that the player may still report
/// back, so that its own changes are told apart from the person's by more than their value.
///
/// A player reports every change of a property in one stream, its own and the follower's alike:
/// in the order they happened, but late (mpv's events are read apart from its answers, and a
/// frozen mpv sends a second's worth at once, the answers first) and coalesced (a change undone
/// before it was read is never reported). A report was compared with the last value asked alone,
/// and the echo of an older ask that came after a newer one (the catch-up's 1.05 after the 1.0 that
/// ended it; the pause of a seek after the unpause that followed it) was taken for the person's:
/// a group command nobody typed.
///
/// So every ask is remembered in order, with when the player answered it (mpv answers each
/// `set_property` with its request id; a player that answers nothing counts as answering at once).
/// A report is an echo when an ask not yet echoed has its value: the earliest such ask, and every
/// older one with it, is then echoed (a stream in order cannot echo them later). A report that no
/// ask explains is the person's (or the platform's); what had been answered before it can no
/// longer echo. An ask is forgotten once a newer one was answered `grace` ago (its echo would have
/// come by then), and at most `max` are kept: while an ask forgotten for that bound may still echo
/// (a player stopped while the follower asked on), a report no ask explains counts as an echo too.
///
/// A report explained by an ask older than the last leaves the player short of the last: its echo
/// is still to come. If it has not come `grace` after the last ask was answered, the follower asks
/// the last value again (`settleDue`) rather than take the state for the person's: a person's
/// change that no event showed (made within the window, and coalesced with the follower's own) is
/// the one case this cannot tell, and a lost key press is better than a command nobody typed.
struct Echoes: Sendable {
    private struct Ask: Sendable {
        var value: Double
        var answeredAt: MonotonicInstant?
    }

    /// Asks not yet echoed, oldest first.
    private var asks: [Ask] = []
    /// The last report was an older ask's echo: the last ask's is still to come.
    private(set) var awaitingLast = false
    /// Asks were forgotten for the bound, and their echoes may still come.
    private var forgotten = false

    /// The follower asked for `value`; `answered` when the player answers no asks.
    mutating func asked(_ value: Double, now: MonotonicInstant, answered: Bool, max: Int) {
        asks.append(Ask(value: value, answeredAt: answered ? now : nil))
        if asks.count > max {
            asks.removeFirst(asks.count - max)
            forgotten = true
        }
    }

    /// The player answered the oldest ask it had not answered (it has made that change).
    mutating func answered(now: MonotonicInstant) {
        for index in asks.indices where asks[index].answeredAt == nil {
            asks[index].answeredAt = now
            return
        }
    }

    /// The player says its value is now `value`: whether that is the echo of an ask.
    mutating func heard(_ value: Double, now: MonotonicInstant, grace: Duration) -> Bool {
        // Forgotten: every ask older than one answered `grace` ago.
        var past = 0
        for index in asks.indices {
            if let answered = asks[index].answeredAt, now - answered >= grace { past = index }
        }
        if past > 0 {
            asks.removeFirst(past)
            forgotten = false
        }
        for index in asks.indices where abs(asks[index].value - value) <= Self.sameWithin {
            // Older asks, the forgotten ones too, can no longer echo.
            (awaitingLast, forgotten) = (index < asks.count - 1, false)
            asks.removeFirst(index + 1)
            return true
        }
        if forgotten {
            // Perhaps a forgotten ask's: the last one's echo is awaited, or the value asked again.
            awaitingLast = !asks.isEmpty
            return true
        }
        // The person's: what was answered before it can no longer echo.
        var kept = 0
        for index in asks.indices where asks[index].answeredAt == nil {
            asks[kept] = asks[index]
            kept += 1
        }
        asks.removeLast(asks.count - kept)
        awaitingLast = false
        return false
    }

    /// When the last ask's echo, still to come after an older one's, is overdue: then the value
    /// is asked again.
    func settleDue(grace: Duration) -> MonotonicInstant? {
        guard awaitingLast, let answered = asks.last?.answeredAt else { return nil }
        return answered + grace
    }

    /// The last ask's echo is given up (the value is asked again, as a new ask).
    mutating func settled() {
        (awaitingLast, forgotten) = (false, false)
        asks.removeAll()
    }

    /// mpv writes a number with six decimals (`%f`): a rate it reports is the one asked within this.
    static let sameWithin = 1e-6
}
