import CoplayCore

/// A player whose sound leaves its speaker `latency` seconds after its media clock says (a
/// Bluetooth headset, a soundbar: 150-300 ms), aimed early by as much so that the sound is heard
/// with everyone else's (`--audio-latency MS`). The group's timeline crosses this boundary
/// shifted: a command's position goes to the player `latency` × the group's rate ahead, and a
/// report's position comes back as far behind, so the core and the other participants see this
/// one on the group's timeline while its own clock leads by the latency. With no latency every
/// command and report passes through untouched.
struct OutputLatencyPlayer<Inner: PlayerDriver>: PlayerDriver {
    var inner: Inner
    /// Seconds of wall time between the player's clock and its sound (at most `AgentConfiguration.audioLatencyMaxMilliseconds`).
    let latency: Double
    /// The group's rate of the last start: media runs `rate` seconds a second, so the sound
    /// `latency` late is `latency × rate` of media behind.
    private var rate = 1.0
    var kind: String { inner.kind }
    var openFile: String? { inner.openFile }

    init(_ inner: Inner, latency: Double) {
        self.inner = inner
        self.latency = latency
    }

    /// How far ahead of the group's timeline the player's media clock runs.
    private var lead: Double { latency * rate }

    mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        guard latency > 0 else { return inner.perform(command, now: now) }
        if case .play(let rate, _, _) = command, rate.isFinite, rate > 0 { self.rate = rate }
        return behind(inner.perform(command.shifted(by: lead), now: now))
    }

    /// The player's reports, their positions moved back onto the group's timeline.
    private func behind(_ reports: [PlayerReport]) -> [PlayerReport] {
        guard latency > 0 else { return reports }
        return reports.map { $0.shifted(by: -lead) }
    }

    func nextEvent(now: Timestamp) -> MonotonicInstant? { inner.nextEvent(now: now) }
    mutating func advance(now: Timestamp) -> [PlayerReport] { behind(inner.advance(now: now)) }
    mutating func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] { behind(inner.receive(line: line, at: at)) }
    mutating func connected(now: Timestamp) -> [PlayerReport] { behind(inner.connected(now: now)) }
    mutating func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) {
        let (reports, leave) = inner.disconnected(now: now)
        return (behind(reports), leave)
    }
    mutating func close() { inner.close() }
    mutating func takeNotes() -> [String] { inner.takeNotes() }
    mutating func acceptOffer() -> [PlayerReport]? { inner.acceptOffer().map(behind) }
    mutating func show(_ text: String) { inner.show(text) }
}

extension PlayerCommand {
    /// The command with its position moved by `offset` seconds (a player's media time against
    /// the group's timeline: a live stream's program dates, a speaker's latency).
    func shifted(by offset: Double) -> PlayerCommand {
        switch self {
        case .load(let item, let position): .load(item, position: position + offset)
        case .prepare(let position): .prepare(position: position + offset)
        case .play(let rate, let position, let at): .play(rate: rate, position: position + offset, at: at)
        case .pause(let position): .pause(position: position + offset)
        default: self
        }
    }
}

extension PlayerReport {
    /// The report with its position moved by `offset` seconds (`PlayerCommand.shifted`'s way
    /// back), never before the item's start (a player aimed early reads its lead at 0).
    func shifted(by offset: Double) -> PlayerReport {
        let moved = { (position: Double) in max(0, position + offset) }
        return switch self {
        case .ready(let position): .ready(position: moved(position))
        case .stalled(let position): .stalled(position: moved(position))
        case .stallEnded(let position): .stallEnded(position: moved(position))
        case .ended(let position): .ended(position: moved(position))
        case .sample(let position, let rate, let at): .sample(position: moved(position), rate: rate, at: at)
        case .userAction(.seek(let position)): .userAction(.seek(position: moved(position)))
        default: self
        }
    }
}
