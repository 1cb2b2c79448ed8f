import CoplayCore

extension Settings {
    /// What an agent shows on its player's own screen (mpv's on-screen display).
    public enum OnScreen {
        /// How long a line stays up: a short message read once.
        public static let showMillis = 4000
        /// The most lines shown in `window`: a person reads no faster, and a flood of messages
        /// from the network must not become a flood of commands to the player. The rest are
        /// dropped and counted.
        public static let perWindowMax = 3
        public static let window: Duration = .seconds(1)
        /// The longest line shown, in bytes: two lines of a television's screen.
        public static let textBytesMax = 160
    }
}

/// Who did what, on the player's own screen: "paused by Ann at 12:34", "Ben joined", "Ann:
/// popcorn?". Said for what another participant did (a person sees their own action happen), and
/// never for the follower's own corrections. Text from the network is shown as text: mpv's IPC
/// does not expand `${…}` in a command's arguments, and control characters become spaces.
struct OnScreen {
    private var windowStarted: MonotonicInstant?
    private var shownInWindow = 0
    /// Lines not shown because too many came at once.
    private(set) var dropped = 0

    /// Whether a line may be shown now (`Settings.OnScreen.perWindowMax` per window); counts a drop
    /// when not.
    mutating func admit(now: MonotonicInstant) -> Bool {
        if let started = windowStarted, now - started < Settings.OnScreen.window {
            guard shownInWindow < Settings.OnScreen.perWindowMax else {
                dropped += 1
                return false
            }
        } else {
            windowStarted = now
            shownInWindow = 0
        }
        shownInWindow += 1
        return true
    }

    /// The line an event is worth on the player's screen, if any.
    static func text(for event: Event) -> String? {
        switch event {
        case .playing(let report)
        where !report.originator.isLocal && ["play", "start", "play-now"].contains(report.reason):
            return shown("played by \(report.originator.name)")
        case .paused(let report) where !report.originator.isLocal && report.reason == "pause":
            return shown("paused by \(report.originator.name) at \(clock(report.position))")
        case .timeJumped(let report) where !report.originator.isLocal && report.reason == "seek":
            return shown("\(report.originator.name) jumped to \(clock(report.position))")
        case .rateChanged(let report) where !report.originator.isLocal && report.reason == "rate":
            return shown("speed \(rate(report.rate))× by \(report.originator.name)")
        case .activityChanged(let activity, let originator) where !originator.isLocal:
            let name = activity.title.isEmpty ? Party.filmName(of: activity.url) : activity.title
            return shown("\(originator.name) shared \(name.isEmpty ? "a film" : name)")
        case .peerJoined(let peer):
            return shown("\(peer.name) joined")
        case .peerLeft(let peer, let reason):
            switch reason {
            case .left, .shutdown: return shown("\(peer.name) left")
            case .timeout: return shown("\(peer.name) went silent")
            case .restarted: return nil
            }
        case .message(let message) where !message.from.isLocal:
            return shown("\(message.from.name): \(message.text)")
        case .session(let report):
            guard case .invalidated(.ended(let by, let reason)) = report.state else { return nil }
            return shown("\(by) ended the session" + (reason.isEmpty ? "" : ": \(reason)"))
        default:
            return nil
        }
    }

    /// The line as the screen gets it: control characters as spaces, at most `textBytesMax`
    /// bytes, cut between characters.
    static func shown(_ text: String) -> String {
        var line = String(
            String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
        if line.utf8.count > Settings.OnScreen.textBytesMax {
            while line.utf8.count > Settings.OnScreen.textBytesMax - 3 { line.removeLast() }
            line += "…"
        }
        return line
    }

    private static func rate(_ value: Double) -> String {
        var text = String(format3: value, decimals: 2)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    private static func clock(_ seconds: Double) -> String {
        seconds.isFinite && seconds >= 0 && seconds < 1e7 ? OwnCopies.clock(seconds) : "?"
    }
}
