/// Whether the group's multicast reaches this agent promptly and completely. On Wi-Fi it often
/// does not: an access point holds multicast and broadcast frames until its next DTIM beacon
/// (every 102.4 ms, or 307 ms), then sends them once, at the basic rate, unacknowledged, and
/// some stations miss them (RFC 9119, sections 3 and 4). Then this agent asks, in its own
/// announcements, for the time-critical datagrams (commands, ready, end) by unicast too —
/// RFC 9119's multicast-to-unicast, done by the senders — and the rest stays multicast.
///
/// It judges from the peers' group announcements, which carry their number and when they were
/// sent (`PathStamp`): the one-way delay of those that came by multicast (read through the
/// sender's clock offset, once known) and the gaps in their numbers. Slow when the 75th
/// percentile of the last `multicastPathSamples` delays passes `multicastSlowDelay`, or lossy
/// when more than `multicastLossyLoss` of them did not arrive; back to prompt below
/// `multicastPromptDelay` and `multicastCompleteLoss` (hysteresis: a verdict does not flap).
struct MulticastPath: Sendable {
    enum Output: Hashable, Sendable {
        /// The verdict changed: say so in an announcement now.
        case changed(wantsUnicast: Bool)
    }

    private let settings: SharedSettings
    /// The last one-way delays of group announcements, oldest first (at most `multicastPathSamples`).
    private var delays: [Int64] = []
    /// Whether each of the last expected group announcements arrived (at most `multicastPathSamples`).
    private var arrivals: [Bool] = []
    /// The highest announcement number that came by multicast from each peer's membership. At most
    /// `Settings.peersMax` entries (a member's is dropped when it leaves).
    private var highest: [PeerID: (member: Member, number: UInt32)] = [:]
    private(set) var wantsUnicast = false
    /// Group announcements this agent has made in its current incarnation.
    private var announced: UInt32 = 0
    /// When the last one-way delay was sampled.
    private var delaySampledAt: MonotonicInstant?
    /// When the verdict last changed.
    private var changedAt: MonotonicInstant?

    init(settings: Settings) { self.settings = SharedSettings(settings) }

    /// The stamp of this agent's next group announcement, sent at `now`.
    mutating func nextStamp(now: WallInstant) -> PathStamp {
        announced &+= 1
        if announced == 0 { announced = 1 }
        return PathStamp(number: announced, sentAt: now)
    }

    /// A new incarnation: its announcements are numbered from 1.
    mutating func onNewIncarnation() { announced = 0 }

    /// An announcement of member `sender` arrived. Only a group one that came by the network's
    /// multicast is judged (the relay's copies are carried by TCP, held by no access point), and
    /// its delay is read (`offsetNanos`, the sender's clock offset) for at most one announcement
    /// every `multicastDelaySampleInterval`.
    mutating func onAnnouncement(
        _ path: PathStamp?, from sender: Member, viaNetworkGroup: Bool, receivedAt: WallInstant,
        offsetNanos: () -> Int64?, now: MonotonicInstant
    ) -> [Output] {
        guard viaNetworkGroup, let path else { return [] }
        let offset = takesDelaySample(now: now) ? offsetNanos() : nil
        return onGroupAnnouncement(path, from: sender, receivedAt: receivedAt, offsetNanos: offset, now: now)
    }

    /// Whether the next group announcement's delay is to be read (at most one every
    /// `multicastDelaySampleInterval`).
    private mutating func takesDelaySample(now: MonotonicInstant) -> Bool {
        if let last = delaySampledAt, now - last < settings.value.multicastDelaySampleInterval { return false }
        delaySampledAt = now
        return true
    }

    /// A group announcement of member `sender` arrived by multicast, stamped `path`, at
    /// `receivedAt`; `offsetNanos`: how far the sender's clock is ahead of this agent's (nil:
    /// not known yet, the delay cannot be read).
    mutating func onGroupAnnouncement(
        _ path: PathStamp, from sender: Member, receivedAt: WallInstant, offsetNanos: Int64?, now: MonotonicInstant
    ) -> [Output] {
        let limits = settings.value
        if let offsetNanos {
            let delay = max(0, receivedAt.unixNanos &- (path.sentAt.unixNanos &- offsetNanos))
            delays.append(min(delay, 60_000_000_000))
            if delays.count > limits.multicastPathSamples {
                delays.removeFirst(delays.count - limits.multicastPathSamples)
            }
        }
        if let last = highest[sender.id], last.member == sender {
            guard path.number > last.number else { return [] }  // a late one: counted lost already
            // The ones skipped did not arrive by multicast (at most a window's worth counted).
            // Compared before converting: a forged stamp skips up to 2^32, past a 32-bit Int.
            let skipped = Int(min(UInt64(path.number - last.number - 1), UInt64(limits.multicastPathSamples)))
            arrivals += Array(repeating: false, count: skipped)
        } else if highest.count >= limits.peersMax {
            return []
        }
        arrivals.append(true)
        if arrivals.count > limits.multicastPathSamples {
            arrivals.removeFirst(arrivals.count - limits.multicastPathSamples)
        }
        highest[sender.id] = (sender, path.number)
        if let changedAt, now - changedAt < limits.multicastVerdictHoldoff { return [] }
        let verdict = judge()
        if !verdict.isEmpty { changedAt = now }
        return verdict
    }

    mutating func onPeerLeft(_ peer: PeerID) { highest[peer] = nil }

    /// The 75th percentile of the recent one-way delays, when there are enough of them.
    var delayP75: Duration? {
        guard delays.count >= settings.value.multicastPathSamplesMin else { return nil }
        return .nanoseconds(delays.ordered()[delays.count * 3 / 4])
    }

    /// The share of recent group announcements that did not arrive by multicast.
    var loss: Double? {
        guard arrivals.count >= settings.value.multicastPathSamplesMin else { return nil }
        return Double(arrivals.count { !$0 }) / Double(arrivals.count)
    }

    private mutating func judge() -> [Output] {
        let limits = settings.value
        let (delay, loss) = (delayP75, loss)
        let verdict: Bool
        if wantsUnicast {
            // Prompt again only when both say so.
            let prompt = delay.map { $0 < limits.multicastPromptDelay } ?? true
            let complete = loss.map { $0 < limits.multicastCompleteLoss } ?? true
            verdict = !(prompt && complete)
        } else {
            let slow = delay.map { $0 > limits.multicastSlowDelay } ?? false
            let lossy = loss.map { $0 > limits.multicastLossyLoss } ?? false
            verdict = slow || lossy
        }
        guard verdict != wantsUnicast else { return [] }
        wantsUnicast = verdict
        return [.changed(wantsUnicast: verdict)]
    }
}
