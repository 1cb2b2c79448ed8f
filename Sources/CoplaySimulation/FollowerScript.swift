import CoplayCore

/// Runs the follower's cases (`Tests/Vectors/follower-cases.json`): scripted commands and
/// observations at given milliseconds, each step's actions and reports checked against the lines
/// the case expects. The same runner is compiled into the agent's tests and into the `.wasm`
/// (`coplay_follower_cases`), so that one suite proves the follower behaves alike in both.
///
/// A case: `{"name", "player": "mpv"|"video", "skipsOnly"?, "checksRate"?, "readsInSteps"?, "standsAfterStart"?,
/// "startLateness"? (seconds), "deadBand"?,
/// "steps": [...]}`; a
/// step: `{"at": ms, "command"|"observe": "words", "expect"?: [lines], "wake"?: ms}` or
/// `{"at": ms, "advance": true, ...}`. Commands: `load URL POS`, `prepare POS`,
/// `play RATE POS AT-MS`, `rate RATE`, `pause POS`, `unload`. Observations: `loaded`,
/// `restarted`, `position POS AT-MS`, `paused BOOL`, `starved BOOL`, `hidden BOOL`, `ended`,
/// `playRefused`, `seekRefused`, `rate RATE`, `duration SECONDS`, `answered pause|rate`. Lines: `seek 1.234`, `pause`,
/// `play`, `rate 1.0050`, `read`, `load URL`, `reload 1.234`, `unload`, and reports `ready 1.234`,
/// `sample 1.234 1.0000 AT-MS`, `stalled 1.234`, `stallEnded 1.234`, `ended 1.234`,
/// `user pause`, `user play 1.0000`, `user seek 1.234`, `failed`, `duration 1.234`.
public enum FollowerScript {
    /// What the cases found: how many steps ran, and each step whose lines differ.
    public struct Result: Sendable {
        public var cases = 0
        public var steps = 0
        public var failures: [String] = []
    }

    /// The epoch of every case: both clocks at 0 ms.
    static let origin = Timestamp(
        monotonic: MonotonicInstant(nanos: 1_000_000_000), wall: WallInstant(unixNanos: 1_780_000_000_000_000_000))

    public static func run(_ json: [UInt8]) -> Result {
        var result = Result()
        guard let cases = (try? JSONParser.parse(json))?["cases"]?.array else {
            result.failures.append("the cases are not a JSON object with \"cases\"")
            return result
        }
        for entry in cases {
            result.cases += 1
            let name = entry["name"]?.string ?? "case \(result.cases)"
            var capabilities: PlayerFollower.Capabilities = entry["player"]?.string == "video" ? .video : .mpv
            if entry["skipsOnly"]?.bool == true { capabilities.steersByRate = false }
            if entry["checksRate"]?.bool == true { capabilities.checksRate = true }
            if entry["readsInSteps"]?.bool == true { capabilities.readsInSteps = true }
            if entry["standsAfterStart"]?.bool == true { capabilities.standsAfterStart = true }
            capabilities.startLateness = entry["startLateness"]?.number ?? 0
            capabilities.rateDeadBand = entry["deadBand"]?.number ?? capabilities.rateDeadBand
            var follower = PlayerFollower(capabilities, settings: Settings())
            for (index, step) in (entry["steps"]?.array ?? []).enumerated() {
                result.steps += 1
                let now = instant(step["at"]?.number ?? 0)
                var output = PlayerFollower.Output()
                if let words = step["command"]?.string {
                    guard let command = command(words) else {
                        result.failures.append("\(name), step \(index + 1): cannot read the command \"\(words)\"")
                        continue
                    }
                    output = follower.command(command, now: now)
                } else if let words = step["observe"]?.string {
                    guard let observation = observation(words) else {
                        result.failures.append("\(name), step \(index + 1): cannot read the observation \"\(words)\"")
                        continue
                    }
                    output = follower.observe(observation, now: now)
                } else if step["advance"] != nil {
                    output = follower.advance(now: now)
                }
                let lines = output.actions.map(line) + output.reports.map(line)
                if let expected = step["expect"]?.array?.compactMap({ $0.string }), expected != lines {
                    let (want, got) = (expected.map(JSONObject.quoted), lines.map(JSONObject.quoted))
                    result.failures.append(
                        "\(name), step \(index + 1): expected \(JSONObject.array(want)), got \(JSONObject.array(got))")
                }
                if let wake = step["wake"] {
                    let got = follower.nextWake(now: now).map { milliseconds($0 - origin.monotonic) }
                    let want = wake.number.map { JSONObject.fixed($0, decimals: 1) }
                    if got != want {
                        result.failures.append(
                            "\(name), step \(index + 1): wake expected \(want ?? "none"), got \(got ?? "none")")
                    }
                }
            }
        }
        return result
    }

    static func instant(_ milliseconds: Double) -> Timestamp {
        origin.advanced(by: .nanoseconds(Int64(saturating: (milliseconds * 1e6).rounded(), limit: 1 << 62)))
    }

    static func milliseconds(_ interval: Duration) -> String { JSONObject.fixed(interval.seconds * 1000, decimals: 1) }

    static func command(_ words: String) -> PlayerCommand? {
        let parts = words.split(separator: " ").map(String.init)
        let numbers = parts.dropFirst().compactMap(Double.init)
        switch (parts.first, numbers.count) {
        case ("load", _) where parts.count == 3:
            guard let position = Double(parts[2]) else { return nil }
            return .load(LoadedItem(url: parts[1]), position: position)
        case ("prepare", 1): return .prepare(position: numbers[0])
        case ("play", 3):
            return .play(rate: numbers[0], position: numbers[1], at: instant(numbers[2]).wall)
        case ("rate", 1): return .adjustRate(numbers[0], at: origin.wall)
        case ("pause", 1): return .pause(position: numbers[0])
        case ("unload", 0): return .unload
        default: return nil
        }
    }

    static func observation(_ words: String) -> PlayerFollower.Observation? {
        let parts = words.split(separator: " ").map(String.init)
        let numbers = parts.dropFirst().compactMap(Double.init)
        let flag = parts.count == 2 ? Bool(parts[1]) : nil
        switch (parts.first, numbers.count) {
        case ("loaded", 0): return .loaded
        case ("restarted", 0): return .restarted
        case ("position", 2): return .position(numbers[0], at: instant(numbers[1]).wall)
        case ("paused", _): return flag.map { .paused($0) }
        case ("starved", _): return flag.map { .starved($0) }
        case ("hidden", _): return flag.map { .hidden($0) }
        case ("ended", 0): return .ended
        case ("playRefused", 0): return .playRefused
        case ("seekRefused", 0): return .seekRefused
        case ("rate", 1): return .rate(numbers[0])
        case ("duration", 1): return .duration(numbers[0])
        case ("answered", 0) where parts.count == 2:
            return parts[1] == "pause" ? .answered(.pause) : parts[1] == "rate" ? .answered(.rate) : nil
        default: return nil
        }
    }

    static func line(_ action: PlayerFollower.Action) -> String {
        switch action {
        case .load(let item): "load \(item.url)"
        case .seek(let position): "seek \(JSONObject.fixed(position, decimals: 3))"
        case .pause: "pause"
        case .play: "play"
        case .setRate(let rate): "rate \(JSONObject.fixed(rate, decimals: 4))"
        case .readPosition: "read"
        case .reload(let position): "reload \(JSONObject.fixed(position, decimals: 3))"
        case .unload: "unload"
        case .interstitial(let interstitial): "interstitial \(interstitial.url)"
        case .endInterstitial: "endInterstitial"
        }
    }

    static func line(_ report: PlayerReport) -> String {
        let f = { (value: Double) in JSONObject.fixed(value, decimals: 3) }
        switch report {
        case .ready(let position): return "ready \(f(position))"
        case .sample(let position, let rate, let at):
            return "sample \(f(position)) \(JSONObject.fixed(rate, decimals: 4)) \(milliseconds(at - origin.wall))"
        case .stalled(let position): return "stalled \(f(position))"
        case .stallEnded(let position): return "stallEnded \(f(position))"
        case .ended(let position): return "ended \(f(position))"
        case .userAction(.pause): return "user pause"
        case .userAction(.play(let rate)): return "user play \(JSONObject.fixed(rate, decimals: 4))"
        case .userAction(.seek(let position)): return "user seek \(f(position))"
        case .userAction(.next): return "user next"
        case .userAction(.previous): return "user previous"
        case .failed: return "failed"
        case .duration(let seconds): return "duration \(f(seconds))"
        case .liveWindow, .loadFailed, .interstitialFailed, .copyFound, .anotherEncode: return "other"
        }
    }
}
