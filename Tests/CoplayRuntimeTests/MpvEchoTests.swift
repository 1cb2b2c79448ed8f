import CoplayCore
import Foundation
import Testing

@testable import CoplayRuntime

/// The mpv driver against a scripted mpv that hiccups, on a simulated clock: its `pause` and
/// `speed` reports come 50-500 ms after each change, some with the value of the moment they were
/// read (an older ask's, after a newer one was answered) and some coalesced (the value at the
/// moment they are sent, nothing when that is the value last reported); each property's reports in
/// order, as mpv's one event queue keeps them, but not in order with its answers or with each
/// other's. Every 0.5-2 s it stops for 50-600 ms (SIGSTOP), then sends what it held. Meanwhile the
/// core's commands come as they do from a group whose player hiccups: nudges, catch-ups, seeks
/// back onto the timeline (a pause, a seek, an unpause), re-anchors. In ten minutes of that,
/// nothing the follower asked may reach the group as a person's command; the person's own `]`
/// and space afterwards must.
@Suite struct MpvEchoTests {
    /// SplitMix64: the same hiccups for the same seed.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func uniform(_ range: ClosedRange<Double>) -> Double {
            range.lowerBound + Double(next() >> 11) / Double(1 << 53) * (range.upperBound - range.lowerBound)
        }
        mutating func milliseconds(_ range: ClosedRange<Double>) -> Duration { .milliseconds(Int64(uniform(range))) }
    }

    /// The scripted mpv: its state, and the lines it has still to send, each when it is due.
    final class HiccupingMpv {
        let fake = MpvPlayerTests.FakeMpv()
        var random: Random
        var paused = true
        var speed = 1.0
        var position = 0.0
        /// Lines due, in the order they are sent (`due` never decreasing within a property's).
        var outgoing: [(due: MonotonicInstant, order: Int, line: () -> String?)] = []
        var order = 0
        var lastDue: [String: MonotonicInstant] = [:]
        var lastReported: [String: Double] = ["pause": 1, "speed": 1]
        var frozenUntil: MonotonicInstant?
        var nextFreeze: MonotonicInstant
        /// Reports that carried another value than the one the follower had asked last.
        var staleReports = 0
        var askedLast: [String: Double] = ["pause": 1, "speed": 1]
        var reports: [PlayerReport] = []

        init(seed: UInt64) {
            random = Random(state: seed)
            nextFreeze = fake.now.monotonic + .seconds(1)
        }

        var now: MonotonicInstant { fake.now.monotonic }

        func send(after delay: Duration, property: String? = nil, _ line: @escaping () -> String?) {
            var due = now + delay
            if let property, let last = lastDue[property], last > due { due = last }
            if let property { lastDue[property] = due }
            order += 1
            outgoing.append((due, order, line))
        }

        /// Each property's values, with when they were made (newest last), and when the last
        /// report read it: a report never reads an older state than the one before it.
        var history: [String: [(at: MonotonicInstant, value: Double)]] = [:]
        var lastRead: [String: MonotonicInstant] = [:]

        /// A change of `property` to `value`: reported 50-500 ms later, as read then or as it
        /// stands when sent (whichever is later than the last report's reading).
        func changed(_ property: String, to value: Double) {
            let snapshot = random.uniform(0...1) < 0.5
            let changedAt = now
            history[property, default: []].append((changedAt, value))
            if history[property]!.count > 64 { history[property]!.removeFirst() }
            let format: (Double) -> String =
                property == "pause" ? { $0 == 1 ? "true" : "false" } : { String(format: "%f", $0) }
            send(after: random.milliseconds(50...500), property: property) { [unowned self] in
                let readAt = max(lastRead[property] ?? changedAt, snapshot ? changedAt : now)
                lastRead[property] = readAt
                let reported = history[property]!.last { $0.at <= readAt }?.value ?? value
                guard abs(reported - (lastReported[property] ?? .nan)) > 1e-9 else { return nil }
                lastReported[property] = reported
                if abs(reported - (askedLast[property] ?? .nan)) > 1e-6 { staleReports += 1 }
                return #"{"event":"property-change","name":"\#(property)","data":\#(format(reported))}"#
            }
        }

        /// What the driver sent, carried out as mpv would.
        func carryOut() {
            for command in fake.sent() {
                let id = command.last as? Int ?? 0
                let name = command.first as? String ?? ""
                var answer = #"{"request_id":\#(id),"error":"success"}"#
                switch name {
                case "set_property" where command.count >= 4:
                    let property = command[1] as? String ?? ""
                    if property == "pause", let value = command[2] as? Bool {
                        askedLast["pause"] = value ? 1 : 0
                        if value != paused {
                            paused = value
                            changed("pause", to: value ? 1 : 0)
                        }
                    } else if property == "speed", let value = (command[2] as? NSNumber)?.doubleValue {
                        askedLast["speed"] = value
                        if abs(value - speed) > 1e-12 {
                            speed = value
                            changed("speed", to: value)
                        }
                    }
                case "get_property" where command.count >= 3:
                    if command[1] as? String == "audio-pts" {
                        let position = self.position
                        answer = #"{"request_id":\#(id),"error":"success","data":\#(String(format: "%f", position))}"#
                    }
                case "seek" where command.count >= 3:
                    position = (command[1] as? NSNumber)?.doubleValue ?? position
                    send(after: .milliseconds(5)) { #"{"event":"seek"}"# }
                    send(after: random.milliseconds(20...60)) { #"{"event":"playback-restart"}"# }
                case "loadfile":
                    position = 0
                    answer = #"{"request_id":\#(id),"error":"success","data":{"playlist_entry_id":1}}"#
                    send(after: .milliseconds(2)) { #"{"event":"start-file","playlist_entry_id":1}"# }
                    send(after: .milliseconds(20)) { #"{"event":"file-loaded"}"# }
                    send(after: .milliseconds(30)) { #"{"event":"playback-restart"}"# }
                default:
                    break
                }
                send(after: random.milliseconds(0...3)) { answer }
            }
        }

        /// One step of `step` on the simulated clock.
        func run(_ step: Duration) {
            fake.now = fake.now.advanced(by: step)
            if let until = frozenUntil, until <= now { frozenUntil = nil }
            if frozenUntil == nil, nextFreeze <= now {
                frozenUntil = now + random.milliseconds(50...600)
                nextFreeze = now + random.milliseconds(500...2000)
            }
            guard frozenUntil == nil else {
                // Stopped, its media does not move; what was due waits.
                reports += fake.player.advance(now: fake.now)
                return
            }
            if !paused { position += speed * step.seconds }
            carryOut()
            // What is due, in the order it was written.
            let due = outgoing.filter { $0.due <= now }.sorted { $0.order < $1.order }
            outgoing.removeAll { $0.due <= now }
            for entry in due {
                guard let line = entry.line() else { continue }
                reports += fake.player.receive(line: Array(line.utf8), at: fake.now)
            }
            reports += fake.player.advance(now: fake.now)
        }

        func perform(_ command: PlayerCommand) {
            reports += fake.player.perform(command, now: fake.now)
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func tenMinutesOfHiccups_issueNoGroupCommand(seed: UInt64) throws {
        let mpv = HiccupingMpv(seed: seed)
        let step = Duration.milliseconds(5)
        mpv.perform(.load(LoadedItem(url: "/media/film.mkv"), position: 0))
        for _ in 0..<40 { mpv.run(step) }
        #expect(mpv.reports.contains { if case .ready = $0 { true } else { false } }, "\(mpv.reports)")
        var anchor = (position: 0.0, at: mpv.fake.now.wall + .milliseconds(100))
        mpv.perform(.play(rate: 1, position: anchor.position, at: anchor.at))
        var nextCommand = mpv.now + .seconds(1)
        let end = mpv.now + .seconds(600)
        var commands = 0
        while mpv.now < end {
            mpv.run(step)
            guard mpv.now >= nextCommand else { continue }
            nextCommand = mpv.now + mpv.random.milliseconds(200...2000)
            commands += 1
            let timeline = anchor.position + (mpv.fake.now.wall - anchor.at).seconds
            switch mpv.random.next() % 4 {
            case 0:  // a nudge
                mpv.perform(.adjustRate(1 + mpv.random.uniform(-0.005...0.005), at: mpv.fake.now.wall))
            case 1:  // the core's catch-up of an error past 5 ms
                mpv.perform(.adjustRate(mpv.random.next() % 2 == 0 ? 1.05 : 0.95, at: mpv.fake.now.wall))
            case 2:  // a seek back onto the timeline, the player more than a second off after a stop
                anchor = (timeline, mpv.fake.now.wall)
                mpv.perform(.play(rate: 1, position: timeline + 1.5, at: mpv.fake.now.wall))
                anchor = (timeline + 1.5, mpv.fake.now.wall)
            default:  // a re-anchor where the player is thought to be
                anchor = (timeline, mpv.fake.now.wall)
                mpv.perform(.play(rate: 1, position: mpv.position, at: mpv.fake.now.wall))
            }
        }
        let persons = mpv.reports.filter { if case .userAction = $0 { true } else { false } }
        #expect(persons.isEmpty, "seed \(seed): \(persons.count) commands nobody typed: \(persons.prefix(5))")
        #expect(commands > 500, "the core's commands came")
        #expect(mpv.staleReports > 50, "seed \(seed): older asks were reported after newer ones (\(mpv.staleReports))")

        // The person, once the player is quiet: `]` multiplies the speed by 1.1, space pauses.
        mpv.perform(.play(rate: 1, position: mpv.position, at: mpv.fake.now.wall))
        mpv.nextFreeze = mpv.now + .seconds(3600)
        for _ in 0..<600 { mpv.run(step) }  // 3 s: every echo in, the window past
        mpv.reports.removeAll()
        mpv.speed *= 1.1
        mpv.changed("speed", to: mpv.speed)
        for _ in 0..<120 { mpv.run(step) }
        let plays = mpv.reports.compactMap { report -> Double? in
            if case .userAction(.play(let rate)) = report { rate } else { nil }
        }
        #expect(plays.count == 1 && abs((plays.first ?? 0) - 1.1) < 1e-3, "the person's ] is the group's: \(plays)")
        mpv.reports.removeAll()
        mpv.paused = true
        mpv.changed("pause", to: 1)
        for _ in 0..<120 { mpv.run(step) }
        #expect(
            mpv.reports.contains { if case .userAction(.pause) = $0 { true } else { false } },
            "the person's space is the group's pause: \(mpv.reports)")
    }
}
