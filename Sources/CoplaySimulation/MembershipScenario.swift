import CoplayCore
import Foundation

/// A seeded membership and clock-sync scenario: 2 to 8 agents with skewed, drifting clocks join
/// at random times on a lossy, duplicating, reordering network; partitions come and heal; agents
/// crash, restart and leave. `run()` checks the invariants along the way and at the end.
public struct MembershipScenario: Sendable {
    public struct Outcome: Sendable {
        public var seed: UInt64
        /// Every invariant that did not hold, in words.
        public var failures: [String] = []
        /// Errors of all synced offset estimates at the end, in nanoseconds.
        public var offsetErrorsNanos: [Int64] = []
        /// Time from a start until each live peer listed the new agent (lossless scenarios).
        public var discoveryNanos: [Int64] = []
        /// Time from a crash until each live peer dropped the crashed agent.
        public var crashDetectionNanos: [Int64] = []
        public var eventsProcessedOK = true
        public var summary = ""
    }

    public let seed: UInt64
    /// Print every node's events and the faults when the run ends (to study a failing seed).
    public var trace = false
    public init(seed: UInt64, trace: Bool = false) {
        self.seed = seed
        self.trace = trace
    }

    /// An estimate further off than this at the end of a run has not converged. (The quality
    /// target, p99 ≤ 100 µs, applies to the distribution over many runs, since six seconds of
    /// samples over a jittery path cannot always average the asymmetry below 100 µs.) Nor can any
    /// four-timestamp estimate be sure of better than half its smallest round trip (the path's
    /// unknown asymmetry), so on a slow path the bound is that, plus `offsetErrorMarginNanos` for
    /// carrying the sample forward by the fitted drift.
    public static let offsetErrorGrossNanos: Int64 = 250_000
    public static let offsetErrorMarginNanos: Int64 = 100_000

    private enum Fault {
        case partition(start: Int64, end: Int64, groups: [[Int]])
        case crash(node: Int, at: Int64, restartAt: Int64?)
        case leave(node: Int, at: Int64, rejoinAt: Int64?)
    }

    public func run() -> Outcome {
        var random = SplitMix64(seed: seed)
        var outcome = Outcome(seed: seed)
        let nodeCount = 2 + Int(random.next() % 7)
        let clocks = (0..<nodeCount).map { _ in SimulatedClock.random(using: &random) }
        let lossless = random.next() % 4 == 0
        let conditions = NetworkConditions.randomLAN(lossy: !lossless, using: &random)
        var simulation = Simulation(seed: seed, clocks: clocks, conditions: conditions)
        let starts = (0..<nodeCount).map { _ in Int64(random.next() % 1_000_000_000) }
        for (node, start) in starts.enumerated() { simulation.schedule(.start(node: node), at: start) }

        // Faults, between 2 s and 6 s, at most one of each kind, on different nodes.
        var faults: [Fault] = []
        var victims = Array(0..<nodeCount)
        if random.next() % 3 == 0, nodeCount >= 2 {
            let start = 2_000_000_000 + Int64(random.next() % 2_000_000_000)
            let end = start + 300_000_000 + Int64(random.next() % 2_700_000_000)
            let cut = 1 + Int(random.next() % UInt64(nodeCount - 1))
            let shuffled = (0..<nodeCount).map { ($0, random.next()) }.sorted { $0.1 < $1.1 }.map(\.0)
            faults.append(
                .partition(start: start, end: end, groups: [Array(shuffled[..<cut]), Array(shuffled[cut...])]))
        }
        if random.next() % 2 == 0, nodeCount >= 3 {
            let node = victims.remove(at: Int(random.next() % UInt64(victims.count)))
            let at = 2_000_000_000 + Int64(random.next() % 3_000_000_000)
            faults.append(
                .crash(
                    node: node, at: at,
                    restartAt: random.next() % 2 == 0 ? at + 200_000_000 + Int64(random.next() % 1_800_000_000) : nil))
        }
        if random.next() % 3 == 0, nodeCount >= 3 {
            let node = victims.remove(at: Int(random.next() % UInt64(victims.count)))
            let at = 2_000_000_000 + Int64(random.next() % 3_000_000_000)
            faults.append(
                .leave(
                    node: node, at: at,
                    rejoinAt: random.next() % 2 == 0 ? at + 100_000_000 + Int64(random.next() % 1_000_000_000) : nil))
        }
        var checkpoints: [(at: Int64, check: Check)] = []
        var faultsEnd: Int64 = 1_500_000_000
        var partitionSpans: [(Int64, Int64)] = []
        for fault in faults {
            switch fault {
            case .partition(let start, let end, let groups):
                simulation.schedule(.partition(groups), at: start)
                simulation.schedule(.heal, at: end)
                partitionSpans.append((start, end))
                faultsEnd = max(faultsEnd, end)
            case .crash(let node, let at, let restartAt):
                simulation.schedule(.crash(node: node), at: at)
                checkpoints.append((at - 1, .crashWitnesses(node: node, crashedAt: at)))
                if let restartAt {
                    simulation.schedule(.start(node: node), at: restartAt)
                    faultsEnd = max(faultsEnd, restartAt)
                }
                faultsEnd = max(faultsEnd, at)
            case .leave(let node, let at, let rejoinAt):
                simulation.schedule(.command(node: node, .leave), at: at)
                // A leave is seen within 100 ms when it arrives; if every copy is lost, or a
                // partition keeps it from the others, silence gives it away within 1.5 s.
                var checkAt = at + (conditions.lossProbability == 0 ? 100_000_000 : 1_500_000_000)
                for case .partition(let start, let end, _) in faults where start <= at && at < end {
                    checkAt = max(checkAt, start + 1_500_000_000)
                }
                checkpoints.append((checkAt, .goneFromEveryView(node: node, reason: "left at \(at)")))
                if let rejoinAt {
                    simulation.schedule(.command(node: node, .join), at: rejoinAt)
                    faultsEnd = max(faultsEnd, rejoinAt)
                }
                faultsEnd = max(faultsEnd, at)
            }
        }
        let end = faultsEnd + 6_000_000_000
        checkpoints.append((end, .converged))
        checkpoints.sort { $0.at < $1.at }

        var crashWatch: [(node: Int, member: Member, crashedAt: Int64, witnesses: Set<Int>)] = []
        for (at, check) in checkpoints {
            outcome.eventsProcessedOK = simulation.run(until: at) && outcome.eventsProcessedOK
            switch check {
            case .crashWitnesses(let node, let crashedAt):
                guard let member = simulation.nodes[node].instance?.member else { continue }
                let witnesses = Set(simulation.liveIndices.filter { simulation.view(of: $0).contains(member) })
                crashWatch.append((node, member, crashedAt, witnesses))
            case .goneFromEveryView(let node, let reason):
                for observer in simulation.liveIndices where observer != node {
                    if simulation.view(of: observer).contains(where: { $0.id == simulation.nodes[node].id }),
                        simulation.nodes[node].instance?.state.isJoined != true
                    {
                        outcome.failures.append("node\(observer) still lists node\(node) after it \(reason)")
                    }
                }
            case .converged:
                for observer in simulation.liveIndices {
                    let view = simulation.view(of: observer)
                    let expected = simulation.expectedView(of: observer)
                    if view != expected {
                        outcome.failures.append(
                            "node\(observer) sees \(view.sorted { $0.id < $1.id }), expected \(expected.sorted { $0.id < $1.id })"
                        )
                    }
                }
                for error in simulation.offsetErrors() where error.synced {
                    outcome.offsetErrorsNanos.append(error.errorNanos)
                    let bound = max(Self.offsetErrorGrossNanos, error.delayNanos / 2 + Self.offsetErrorMarginNanos)
                    if abs(error.errorNanos) > bound {
                        outcome.failures.append(
                            "node\(error.observer)'s offset estimate for node\(error.peer) is off by \(error.errorNanos) ns (its minimum round trip \(error.delayNanos) ns)"
                        )
                    }
                }
            }
        }
        guard outcome.eventsProcessedOK else {
            outcome.failures.append("the event budget ran out: a livelock")
            return outcome
        }

        // Crash detection: each peer that saw the crashed agent drops it within 1.5 s, unless a
        // partition or its own departure makes the question moot.
        for watch in crashWatch {
            let overlapsPartition = partitionSpans.contains {
                $0.0 < watch.crashedAt + 1_500_000_000 && $0.1 > watch.crashedAt - 1_500_000_000
            }
            for witness in watch.witnesses {
                // The first event after the crash that removes the crashed agent from the
                // witness's table: its peerLeft, or the witness's own leave or restart.
                let dropped = simulation.nodes[witness].events.first { entry in
                    guard entry.atNanos >= watch.crashedAt else { return false }
                    switch entry.event {
                    case .peerLeft(let info, _): return info.member == watch.member
                    case .session: return true
                    default: return false
                    }
                }
                if let dropped, case .session = dropped.event { continue }
                guard let dropped else {
                    if !overlapsPartition, simulation.nodes[witness].instance?.state.isJoined == true {
                        outcome.failures.append("node\(witness) never dropped crashed node\(watch.node)")
                    }
                    continue
                }
                let latency = dropped.atNanos - watch.crashedAt
                if !overlapsPartition { outcome.crashDetectionNanos.append(latency) }
                if latency > 1_500_000_000, !overlapsPartition {
                    outcome.failures.append(
                        "node\(witness) took \(latency / 1_000_000) ms to drop crashed node\(watch.node)")
                }
            }
        }

        // Discovery: in lossless scenarios, every agent that was already up lists a newcomer within 300 ms.
        if lossless {
            for (node, start) in starts.enumerated() {
                let member = simulation.nodes[node].events.first { if case .session = $0.event { true } else { false } }
                guard member != nil else { continue }
                for observer in 0..<nodeCount where observer != node && starts[observer] < start {
                    guard
                        let seen = simulation.nodes[observer].events.first(where: { entry in
                            if case .peerJoined(let info) = entry.event {
                                info.member.id == simulation.nodes[node].id
                            } else {
                                false
                            }
                        })
                    else { continue }
                    let latency = seen.atNanos - start
                    outcome.discoveryNanos.append(latency)
                    if latency > 300_000_000 {
                        outcome.failures.append("node\(observer) saw node\(node) after \(latency / 1_000_000) ms")
                    }
                }
            }
        }

        // Every agent's peer events alternate joined/left per membership.
        for node in simulation.nodes {
            var present: Set<Member> = []
            for entry in node.events {
                switch entry.event {
                case .peerJoined(let info):
                    if !present.insert(info.member).inserted {
                        outcome.failures.append("node\(node.index) announced \(info.member) joined twice")
                    }
                case .peerLeft(let info, _):
                    if present.remove(info.member) == nil {
                        outcome.failures.append("node\(node.index) announced \(info.member) left without a join")
                    }
                case .session:
                    present.removeAll()  // a new life, or the end of one: the table starts empty
                default:
                    break
                }
            }
        }
        if trace {
            print("faults: \(faults)")
            for node in simulation.nodes {
                for entry in node.events {
                    print(
                        String(
                            format: "%8.3f s node%d %@", Double(entry.atNanos) / 1e9, node.index,
                            "\(entry.event)" as NSString as CVarArg))
                }
            }
        }
        outcome.summary =
            "\(nodeCount) agents, loss \(Int(conditions.lossProbability * 100))%, dup \(Int(conditions.duplicationProbability * 100))%, "
            + "faults \(faults.count), \(simulation.datagramsSent) datagrams sent"
        return outcome
    }

    private enum Check {
        case crashWitnesses(node: Int, crashedAt: Int64)
        case goneFromEveryView(node: Int, reason: String)
        case converged
    }
}
