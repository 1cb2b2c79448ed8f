import CoplayCore
import CoplayHarness
import CoplaySimulation
import Foundation

/// What the link model itself allows a pause: an ideal protocol whose agents take no time sends,
/// at the press, one unicast frame from the pressing host to each other host (on `wifi` and
/// `wan`, where coplay sends commands so: the air holds multicast, and no multicast crosses
/// sites) and one multicast frame, on an otherwise idle link; each other host
/// has it when its first copy arrives. No protocol that starts from the pressing host does
/// better on the model: every frame it sends crosses that host's uplink, one FIFO queue, and a
/// frame held there by retries (2% of frames, 20–120 ms) holds every copy behind it.
enum LinkFloor {
    /// Press → each other host has the pause, ms, over `trials` presses at random instants.
    static func pause(link: LinkKind, hosts: Int, dtim: Int, trials: Int = 20_000) -> Distribution {
        Distribution(pauseDelays(link: link, hosts: hosts, dtim: dtim, trials: trials))
    }

    /// The delays of `pause`, press by press (each press's receivers in turn), unsorted.
    static func pauseDelays(link: LinkKind, hosts: Int, dtim: Int, trials: Int) -> [Double] {
        var delays: [Double] = []
        delays.reserveCapacity(trials * (hosts - 1))
        let receivers = Array(1..<hosts)
        for trial in 0..<trials {
            var model = LinkModel(link, hosts: hosts, dtimPeriod: dtim, seed: 0xF100_0000 &+ UInt64(trial))
            // Any instant: the beacons' phase is drawn from the seed.
            let pressed: Int64 = 1_000_000_000
            var first: [Int: Int64] = [:]
            if link != .wired {
                for receiver in receivers {
                    for (host, at) in model.deliver(from: 0, to: [receiver], isGroup: false, at: pressed) {
                        first[host] = min(first[host] ?? .max, at)
                    }
                }
            }
            for (host, at) in model.deliver(from: 0, to: receivers, isGroup: true, at: pressed) {
                first[host] = min(first[host] ?? .max, at)
            }
            // A host that got no copy at all (some 1 in 10,000) waits for a repair, counted here
            // as a second: it moves the maximum, no percentile shown.
            for receiver in receivers {
                delays.append(Double((first[receiver] ?? pressed + 1_000_000_000) - pressed) / 1e6)
            }
        }
        return delays
    }

    /// How often the ideal protocol itself meets "p95 ≤ `factor` × the floor's p95" in a run of
    /// `presses` presses (the benchmark's `--trials`), over `runs` runs: where the floor's p95
    /// lies near the share at which held frames begin, a run's p95 falls on either side of it by
    /// chance, and a protocol at the floor meets such a target only this often.
    static func runsMeeting(factor: Double, link: LinkKind, hosts: Int, dtim: Int, presses: Int, runs: Int = 2_000)
        -> (share: Double, floorP95: Double)
    {
        let all = pauseDelays(link: link, hosts: hosts, dtim: dtim, trials: presses * runs)
        let floorP95 = Distribution(all).percentile(0.95)
        let perRun = presses * (hosts - 1)
        let met = stride(from: 0, to: all.count, by: perRun).count { start in
            Distribution(Array(all[start..<start + perRun])).percentile(0.95) <= factor * floorP95
        }
        return (Double(met) / Double(runs), floorP95)
    }

    /// The same press made by a protocol that also sends routine frames (on `wifi`): each host
    /// sends `routinePerSecond` unicast frames to the others in turn and `groupPerSecond` group
    /// frames, at random instants over the 300 ms before the press (a frame held by retries
    /// waits 120 ms at most); the pressing host then sends its pause's unicast copies, with the
    /// group copy before them when `groupFirst`, all of them in the expedited access category
    /// when `expedited` (the routine frames never are). What the routine traffic, the order and
    /// the marking cost or save above the floor.
    static func pauseWithRoutine(
        hosts: Int, dtim: Int, routinePerSecond: Double, groupPerSecond: Double, groupFirst: Bool,
        expedited: Bool = false, trials: Int = 20_000
    ) -> Distribution {
        var delays: [Double] = []
        delays.reserveCapacity(trials * (hosts - 1))
        let receivers = Array(1..<hosts)
        let pressed: Int64 = 1_000_000_000
        let span: Int64 = 300_000_000
        for trial in 0..<trials {
            var model = LinkModel(.wifi, hosts: hosts, dtimPeriod: dtim, seed: 0xF200_0000 &+ UInt64(trial))
            var random = SplitMix64(seed: 0xF300_0000 &+ UInt64(trial))
            // Every host's routine frames, in the order they were sent.
            var frames: [(at: Int64, from: Int, to: Int?)] = []
            for host in 0..<hosts {
                for (rate, isGroup) in [(routinePerSecond, false), (groupPerSecond, true)] where rate > 0 {
                    var at = pressed - span
                    while true {
                        at += Int64(-log(1 - random.nextUnit()) / rate * 1e9)
                        guard at < pressed else { break }
                        let others = (0..<hosts).filter { $0 != host }
                        frames.append((at, host, isGroup ? nil : others[Int(random.next() % UInt64(others.count))]))
                    }
                }
            }
            for frame in frames.sorted(by: { $0.at < $1.at }) {
                let to = frame.to.map { [$0] } ?? Array(0..<hosts).filter { $0 != frame.from }
                _ = model.deliver(from: frame.from, to: to, isGroup: frame.to == nil, at: frame.at)
            }
            var first: [Int: Int64] = [:]
            func group() {
                for (host, at) in model.deliver(
                    from: 0, to: receivers, isGroup: true, expedited: expedited, at: pressed)
                {
                    first[host] = min(first[host] ?? .max, at)
                }
            }
            if groupFirst { group() }
            for receiver in receivers {
                for (host, at) in model.deliver(
                    from: 0, to: [receiver], isGroup: false, expedited: expedited, at: pressed)
                {
                    first[host] = min(first[host] ?? .max, at)
                }
            }
            if !groupFirst { group() }
            for receiver in receivers {
                delays.append(Double((first[receiver] ?? pressed + 1_000_000_000) - pressed) / 1e6)
            }
        }
        return Distribution(delays)
    }

    static func report(links: [String], hosts: [Int], dtim: Int) {
        print("the link model's floor for a pause (an ideal protocol, agents and players taking no time):")
        for name in links {
            guard let link = LinkKind(rawValue: name) else { continue }
            for count in hosts {
                let floor = pause(link: link, hosts: count, dtim: dtim)
                print("  \(name), \(count) hosts: \(floor.summary(unit: "ms"))")
                print("    tail: \(floor.tail(above: 20, unit: "ms"))")
                guard link == .wifi else { continue }
                let (share, floorP95) = runsMeeting(factor: 1.25, link: link, hosts: count, dtim: dtim, presses: 60)
                print(
                    "    runs of 60 presses whose p95 is at most 1.25 × the floor's (\((floorP95 * 10).rounded() / 10) ms),"
                        + " the ideal protocol's own: \(Int((share * 100).rounded()))% of 2,000")
                // coplay's routine traffic on the air among 3 hosts: 2 probes and 2 probe replies
                // a second (a probe a second each way to each peer), 2 heartbeats.
                for (groupFirst, expedited) in [(true, false), (false, false), (false, true)] {
                    let routine = pauseWithRoutine(
                        hosts: count, dtim: dtim, routinePerSecond: 4, groupPerSecond: 2, groupFirst: groupFirst,
                        expedited: expedited)
                    let order =
                        (groupFirst ? "group copy first" : "unicast copies first")
                        + (expedited ? ", the pause expedited (DSCP EF)" : "")
                    print(
                        "    with 4 unicast and 2 group routine frames a second from each host, \(order): "
                            + routine.tail(above: 20, unit: "ms"))
                }
            }
        }
    }
}
