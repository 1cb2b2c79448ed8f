import CoplayCore
import Glibc

/// VLC 3, driven through coplay's interface script inside it (`VlcScript`), which speaks lines of
/// text on VLC's standard input and output: one end of a socket pair the agent made.
///
/// An adapter only, as `MpvPlayer` is: how VLC follows the group's timeline is the core's
/// `PlayerFollower`. This turns the follower's actions into the script's commands and what the
/// script says into observations:
///
/// - VLC's clock is its input's `time`, which VLC 3 sets from the demuxer every 250 ms; the script
///   watches it every 2 ms and carries it forward between steps at the rate (`time ID US`). A
///   reading is stamped at the middle of its request's round trip.
/// - `paused` and `rate` changes go to the follower, which knows which ones it asked for (each ask
///   is answered, `done ID`): the others are the person in front of VLC, its space bar or its
///   menus, and so group commands. A jump of the clock coplay did not ask for is the person's seek.
/// - A seek is exact (`no-input-fast-seek`); `restarted` once VLC's clock shows it.
/// - VLC shows no interstitial of its own: one is refused with the reason.
struct VlcPlayer: FollowingPlayer {
    let kind = "vlc"
    /// The VLC and its connection (started again after a crash: `VlcLink`).
    private let link: VlcLink
    private let settings: Settings
    var follower: PlayerFollower

    private enum Request {
        case sample(sentAt: Timestamp)
        case seek, load, other
        case asked(PlayerFollower.Asked)
    }

    private var requests: PendingRequests<Request>
    private var sampleRequest: Int64?
    /// The last load's request: its `loaded` is the item's (an earlier one's is not).
    private var loadRequest: Int64?
    private var item: LoadedItem?
    private var fileLoaded = false
    /// Seeks sent whose `restarted` has not come yet.
    private var ownSeeks = 0
    private(set) var openFile: String?
    /// The version the script said (`hello`).
    private(set) var version: String?
    /// When the script last said anything (it says an empty line once a second at least), and
    /// whether its silence was said: a VLC stopped or hung stands aside as a stall of this
    /// participant (`Settings.Players.silenceMax`), and follows again when it speaks.
    private var heardAt: MonotonicInstant?
    private var silent = false
    /// Lines the script said that the driver does not understand (a script of another version, or
    /// something else on VLC's standard output): counted, the first said.
    private(set) var unknownLines = 0
    private var notes: [String] = []
    /// VLC crashed with an item loaded and is being started again: the follower was told of a
    /// stall, and hears it is over once the new VLC has the item loaded.
    private var standingAside = false

    init(link: VlcLink, settings: Settings) {
        self.link = link
        self.settings = settings
        self.requests = PendingRequests(limit: settings.playerRequestsMax)
        self.follower = PlayerFollower(.vlc, settings: settings)
    }

    // MARK: The follower's actions

    mutating func carryOut(_ action: PlayerFollower.Action, now: Timestamp) -> [PlayerReport] {
        switch action {
        case .load(let item):
            (self.item, fileLoaded, ownSeeks) = (item, false, 0)
            loadRequest = send("load", Self.uri(of: item.url), as: .load)
        case .seek(let position), .reload(let position):
            ownSeeks += 1
            send("seek", Self.micros(position), as: .seek)
        case .pause: send("pause", as: .asked(.pause))
        case .play: send("play", as: .asked(.pause))
        case .setRate(let rate):
            send("rate", String(Int64((min(max(rate, 0), 64) * 1_000_000).rounded())), as: .asked(.rate))
        case .readPosition: sampleRequest = send("time", as: .sample(sentAt: now))
        case .unload:
            (item, fileLoaded, loadRequest) = (nil, false, nil)
            send("stop", as: .other)
        case .interstitial(let interstitial):
            return [.interstitialFailed("VLC shows no interstitial of coplay's: \(interstitial.url) is not shown")]
        case .endInterstitial: break
        }
        return []
    }

    // MARK: Timer

    func nextEvent(now: Timestamp) -> MonotonicInstant? {
        let silence = silent ? nil : heardAt.map { $0 + Settings.Players.silenceMax }
        return [follower.nextWake(now: now), silence].compactMap { $0 }.min()
    }

    mutating func advance(now: Timestamp) -> [PlayerReport] {
        var reports: [PlayerReport] = []
        if !silent, let heardAt, now.monotonic - heardAt >= Settings.Players.silenceMax {
            silent = true
            notes.append(
                "VLC has said nothing for \(Settings.Players.silenceMax) (stopped or hung): standing aside until it speaks"
            )
            reports += observe(.starved(true), now: now)
        }
        return reports + carry(follower.advance(now: now), now: now)
    }

    mutating func takeNotes() -> [String] {
        defer { notes.removeAll() }
        return notes
    }

    // MARK: What the script says

    mutating func receive(line: [UInt8], at now: Timestamp) -> [PlayerReport] {
        heardAt = now.monotonic
        var reports: [PlayerReport] = []
        if silent {
            silent = false
            notes.append("VLC speaks again: following the group")
            reports = observe(.starved(false), now: now)
        }
        return reports + interpret(line, now: now)
    }

    private mutating func interpret(_ line: [UInt8], now: Timestamp) -> [PlayerReport] {
        let words = line.split(separator: UInt8(ascii: " "), maxSplits: 3).map { String(decoding: $0, as: UTF8.self) }
        guard let verb = words.first else { return [] }  // the script's heartbeat
        func number(_ index: Int) -> Int64? { index < words.count ? Int64(words[index]) : nil }
        switch verb {
        case "hello":
            version = words.count > 3 ? String(words[3].prefix(64)) : nil
        case "done", "nosuch":
            guard let id = number(1), let request = forget(id) else { return [] }
            switch request {
            case .asked(let asked): return observe(.answered(asked), now: now)
            case .seek where verb == "nosuch":
                ownSeeks = max(0, ownSeeks - 1)
                return ownSeeks == 0 ? observe(.seekRefused, now: now) : []
            case .sample where verb == "nosuch":
                guard id == sampleRequest else { return [] }
                sampleRequest = nil
                return observe(.positionUnavailable, now: now)
            default: return []
            }
        case "time":
            guard let id = number(1), let request = forget(id), case .sample(let sentAt) = request,
                id == sampleRequest
            else { return [] }
            sampleRequest = nil
            guard let micros = number(2), micros >= 0, micros <= Self.microsMax else {
                return observe(.positionUnavailable, now: now)
            }
            let middle = WallInstant(
                unixNanos: sentAt.wall.unixNanos &+ (now.wall.unixNanos &- sentAt.wall.unixNanos) / 2)
            return observe(.position(Double(micros) / 1e6, at: middle), now: now)
        case "loaded":
            guard let id = number(1), id == loadRequest, item != nil else { return [] }
            fileLoaded = true
            if standingAside {
                // A VLC started again after a crash has the group's item: the stall is over, and
                // the follower takes it to where the group is.
                standingAside = false
                notes.append("VLC is back: following the group")
                return observe(.starved(false), now: now)
            }
            // VLC opened it paused, at its start: as mpv's `playback-restart` after a load, unless
            // the follower seeks on from there.
            let reports = observe(.loaded, now: now)
            return ownSeeks == 0 ? reports + observe(.restarted, now: now) : reports
        case "restarted":
            if ownSeeks > 0 { ownSeeks -= 1 }
            return ownSeeks == 0 && fileLoaded ? observe(.restarted, now: now) : []
        case "jump":
            // The clock moved where coplay did not send it: the person seeked in VLC.
            guard let micros = number(1), micros >= 0, micros <= Self.microsMax, ownSeeks == 0, fileLoaded else {
                return []
            }
            return observe(.personSeekBegan, now: now) + observe(.personSeekLanded(Double(micros) / 1e6), now: now)
        case "paused":
            guard words.count > 1, words[1] == "0" || words[1] == "1" else { return [] }
            return observe(.paused(words[1] == "1"), now: now)
        case "rate":
            guard let millionths = number(1), millionths > 0, millionths <= 64_000_000 else { return [] }
            return observe(.rate(Double(millionths) / 1e6), now: now)
        case "length":
            guard let micros = number(1), micros > 0, micros <= Self.microsMax else { return [] }
            return observe(.duration(Double(micros) / 1e6), now: now)
        case "path":
            // A file on this disk that VLC has open (looked at for an item known by its content).
            guard words.count > 1, words[1].utf8.count <= Settings.OwnCopies.pathBytesMax,
                words[1].hasPrefix("file:///"), let path = Self.percentDecoded(String(words[1].dropFirst(7)))
            else { return [] }
            openFile = path
        case "ended":
            guard item != nil, fileLoaded else { return [] }
            return observe(.ended, now: now)
        case "failed":
            guard let item else { return [] }
            fileLoaded = false
            return [MpvPlayer.loadFailure(url: item.url, fileError: "it could not open it", player: "VLC")]
        default:
            unknownLines += 1
            if unknownLines == 1 {
                let shown = String(decoding: line.prefix(80), as: UTF8.self).map {
                    $0.isASCII && !$0.isNewline ? $0 : "?"
                }
                notes.append("VLC's script said a line coplay does not know (counted; the first): " + String(shown))
            }
        }
        return []
    }

    /// A line on VLC's on-screen display (`OnScreen`, which bounds it and makes control
    /// characters spaces), kept on one line of the script's.
    mutating func show(_ text: String) {
        link.send("osd " + String(text.map { $0.isNewline ? " " : $0 }))
    }

    // MARK: Sending

    @discardableResult
    private mutating func send(_ verb: String, _ argument: String? = nil, as request: Request) -> Int64 {
        let id = requests.add(request).id
        link.send([verb, String(id), argument].compactMap { $0 }.joined(separator: " "))
        return id
    }

    private mutating func forget(_ id: Int64) -> Request? { requests.take(id) }

    // MARK: Values

    /// The largest position the script's numbers carry: the core's position bound, in µs.
    static let microsMax: Int64 = 4_200_000_000 * 1_000_000

    static func micros(_ seconds: Double) -> String {
        String(Int64((min(max(seconds, 0), 4_200_000_000) * 1_000_000).rounded()))
    }

    /// An item's URL as one word of the script's line: a local path becomes a `file://` URI (every
    /// byte but letters, digits, `/`, `-`, `.`, `_` and `~` escaped); in a URL, every byte outside
    /// printable ASCII, and a space, is escaped.
    static func uri(of url: String) -> String {
        let local = url.hasPrefix("/")
        var out = local ? "file://" : ""
        for byte in url.utf8 {
            let plain =
                local
                ? (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                    || "/-._~".utf8.contains(byte)
                : byte > 0x20 && byte < 0x7F
            if plain {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// A URI's path with its `%XX` escapes decoded; nil for a bad escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count,
                    let value = UInt8(String(decoding: bytes[index + 1...index + 2], as: UTF8.self), radix: 16)
                else { return nil }
                out.append(value)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    // MARK: Ending

    /// VLC closed its end. The person quit it: the agent leaves and says why. It crashed or was
    /// killed: this participant stands aside while another VLC starts (`VlcLink`).
    mutating func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) {
        guard link.willRestart else {
            if standingAside { notes.append("VLC could not be started again: leaving") }
            return ([], true)
        }
        notes.append("VLC \(link.ending): standing aside while it starts again")
        requests.removeAll()
        (sampleRequest, loadRequest, fileLoaded, ownSeeks, silent, heardAt) = (nil, nil, false, 0, false, nil)
        guard item != nil, !standingAside else { return ([], false) }
        standingAside = true
        return (observe(.starved(true), now: now), false)
    }

    /// A VLC started again said hello: the group's item is loaded there again.
    mutating func connected(now: Timestamp) -> [PlayerReport] {
        heardAt = now.monotonic
        guard let item else { return [] }
        loadRequest = send("load", Self.uri(of: item.url), as: .load)
        return []
    }

    mutating func close() { link.close(patience: settings.mpvQuitPatience) }
}

extension Settings {
    /// How long a player coplay drives through a script of its own (VLC's) may keep it waiting.
    public enum Players {
        /// The script says a line once a second at least: two seconds of nothing is a VLC stopped
        /// or hung, which stands aside as a stall until it speaks.
        public static let silenceMax: Duration = .seconds(2)
        /// How many times a VLC that crashed or was killed is started again in an agent's life: a
        /// VLC that dies at each start (a broken file, a plugin) ends the agent rather than loop.
        public static let vlcRestartsMax = 10
        /// How long after a crash VLC is started again (what it left behind, its window, goes
        /// first), and how many starts are tried each time before the agent gives up and leaves.
        public static let vlcRestartDelay: Duration = .seconds(1)
        public static let vlcStartAttempts = 3
    }
}

extension PlayerFollower.Capabilities {
    /// VLC 3 through coplay's interface script: as mpv (its controls are the person's, its rate
    /// steers, each change asked is answered).
    static let vlc = PlayerFollower.Capabilities(answersAsks: true)
}
