import CoplayHarness
import CoplaySimulation

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
            }
        }
    }
}
