import CoplayCore
import Synchronization

/// A seeded replication scenario: 3 to 5 agents on a lossy, duplicating network, some of them
/// issuing a long history in bursts (up to `historyMax` commands, some for other items, some
/// app messages), one datagram type losing half of its datagrams besides, one or two agents
/// joining late (after the history was compacted), and sometimes the member a joiner is likely
/// to ask crashing during the transfer. After quiescence every live agent must hold the same
/// delivered commands (one by one or stood for by a snapshot), nothing waiting, and the same
/// group state for every item.
public struct ReplicationScenario: Sendable {
    public struct Outcome: Sendable {
        public var seed: UInt64
        public var failures: [String] = []
        public var commandsIssued = 0
        public var statesAdopted = 0
        public var summary = ""
    }

    public let seed: UInt64
    public let historyMax: Int
    public init(seed: UInt64, historyMax: Int = 3_000) {
        self.seed = seed
        self.historyMax = historyMax
    }

    public func run() -> Outcome {
        var random = SplitMix64(seed: seed)
        var outcome = Outcome(seed: seed)
        let nodeCount = 3 + Int(random.next() % 3)
        let clocks = (0..<nodeCount).map { _ in SimulatedClock.random(using: &random) }
        var conditions = NetworkConditions.randomLAN(lossy: true, using: &random)
        conditions.lossProbability = min(conditions.lossProbability, 0.15)
        var simulation = Simulation(seed: seed, clocks: clocks, conditions: conditions)
        // One datagram type loses half of its datagrams besides.
        let types: [MessageType] = [.heartbeat, .command, .nack, .ready, .probeReply, .stateRequest, .state]
        let unlucky = types[Int(random.next() % UInt64(types.count))].rawValue
        let coin = Mutex(SplitMix64(seed: seed ^ 0xD20B))
        simulation.drops = { bytes, _, _ in
            bytes.count > 5 && bytes[5] == unlucky && coin.withLock { $0.next() % 2 == 0 }
        }
        let late = nodeCount - 1 - Int(random.next() % 2)  // the last one or two join late
        func at(_ seconds: Double) -> Int64 { Int64(seconds * 1e9) }
        for node in 0..<late { simulation.schedule(.start(node: node), at: Int64(random.next() % 300_000_000)) }
        simulation.schedule(
            .command(node: 0, .share(Activity(url: "u", itemID: "A"), durationSeconds: 1e5, bufferSeconds: 0)),
            at: at(0.5))
        // The history: bursts from random residents, 0.1–2 ms apart.
        let history = 50 + Int(random.next() % UInt64(max(1, historyMax - 50)))
        var time = 0.7
        for index in 0..<history {
            time += (0.1 + random.nextUnit() * 1.9) / 1000
            if random.next() % 200 == 0 { time += 0.3 }  // a pause between bursts
            let node = Int(random.next() % UInt64(late))
            let command: ConsoleCommand
            switch random.next() % 20 {
            case 0: command = .load(LoadedItem(id: "B", url: "b"))
            case 1: command = .load(LoadedItem(id: "A", url: "u"))
            case 2: command = .message(to: nil, unreliable: false, text: "note \(index)")
            case 3, 4, 5: command = .seek(seconds: Double(random.next() % 600))
            default: command = random.next() % 2 == 0 ? .pause : .playNow(rate: 1)
            }
            simulation.schedule(.command(node: node, command), at: at(time))
            outcome.commandsIssued += 1
        }
        // Late joiners, after the residents had time to compact; sometimes node 0 crashes while
        // they catch up (it is the oldest member: often the one asked).
        let joinAt = time + 3 + random.nextUnit()
        for node in late..<nodeCount {
            simulation.schedule(.start(node: node), at: at(joinAt + Double(node - late) * random.nextUnit() * 0.2))
        }
        let crashes = random.next() % 3 == 0
        if crashes { simulation.schedule(.crash(node: 0), at: at(joinAt + 0.01 + random.nextUnit() * 0.2)) }
        // Everyone returns to A and a last pause settles the state of A.
        for node in 0..<nodeCount {
            simulation.schedule(.command(node: node, .load(LoadedItem(id: "A", url: "u"))), at: at(joinAt + 3))
        }
        simulation.schedule(.command(node: 1, .pause), at: at(joinAt + 3.5))
        guard simulation.run(until: at(joinAt + 9)) else {
            outcome.failures.append("the event budget ran out: a livelock")
            return outcome
        }
        let live = simulation.liveIndices
        if live.count != nodeCount - (crashes ? 1 : 0) { outcome.failures.append("only \(live.count) agents live") }
        guard let first = live.first, let reference = simulation.nodes[first].instance else {
            outcome.failures.append("no live agent")
            return outcome
        }
        for index in live {
            guard let instance = simulation.nodes[index].instance else { continue }
            outcome.statesAdopted += Int(
                instance.statusReport(now: simulation.nodes[index].clock.timestamp(atTrue: simulation.nowNanos))
                    .counters.statesAdopted)
            if !instance.log.hasDeliveredTheSame(as: reference.log) {
                outcome.failures.append(
                    "node\(index) holds \(instance.log.delivered), node\(first) \(reference.log.delivered)")
            }
            // Commands may wait only on what a crashed origin took with it (its later commands,
            // received by some, after one that reached nobody): never on a live member's.
            let liveMembers = Set(live.compactMap { simulation.nodes[$0].instance?.member })
            let waitedOn = instance.log.missing().filter { liveMembers.contains($0.origin) }
            if !waitedOn.isEmpty {
                outcome.failures.append("node\(index) has commands waiting on live members' \(waitedOn)")
            }
            if instance.activity?.dot != reference.activity?.dot {
                outcome.failures.append("node\(index)'s activity differs")
            }
            for (item, state) in reference.items where instance.items[item]?.winner.dot != state.winner.dot {
                outcome.failures.append(
                    "node\(index)'s \(item) is \(instance.items[item]?.winner.dot.description ?? "unknown"), node\(first)'s \(state.winner.dot)"
                )
            }
            if instance.player.item?.id != "A" || instance.player.rate != 0 {
                outcome.failures.append("node\(index) is not paused on A")
            }
        }
        outcome.summary =
            "\(nodeCount) agents (\(nodeCount - late) late), loss \(Int(conditions.lossProbability * 100))%, "
            + "half of 0x\(String(unlucky, radix: 16)) lost, \(history) commands\(crashes ? ", node0 crashed" : "")"
        return outcome
    }
}
