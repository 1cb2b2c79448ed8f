import CoplayCore
import Foundation

/// A large group with agents that fall behind. N agents (64 to 256) start within half a second
/// on a LAN that loses 1% of datagrams; one in 32 is starved of CPU for the whole run (each
/// input takes it 1–3 ms, a slow machine under load, with a bounded receive buffer that drops
/// the rest), and one is paused for 10 s (SIGSTOP, then SIGCONT). `run()` checks:
/// - the group forms: every agent that keeps up lists every other within `formationBound`;
/// - the traffic is bounded whatever N: in the idle window no agent receives more than
///   `receivedPerSecondMax` datagrams a second;
/// - no positive feedback: the seconds after the paused agent wakes carry at most
///   `wakeTrafficRatioMax` times the idle window's traffic;
/// - the woken agent reports no `peer-left` (it reads what waited before it judges anyone);
/// - at the end, every agent — the starved ones and the woken one too — lists every other.
public struct ScaleScenario: Sendable {
    public struct Outcome: Sendable {
        public var seed: UInt64
        public var agents: Int
        public var failures: [String] = []
        /// From the first start until every agent that keeps up listed every other.
        public var formationNanos: Int64?
        /// Datagrams received a second in the idle window: the most of any agent.
        public var receivedPerSecondMax = 0.0
        /// The group's datagrams a second in the 3 s after the pause over those of the idle window.
        public var wakeTrafficRatio = 0.0
        /// The agent that received the most in the idle window, and the median agent's rate.
        public var busiest = ""
        /// The idle window's datagrams by type, most first, and the wake-up window's.
        public var idleByType: [String] = []
        public var wakeByType: [String] = []
        public var summary = ""
    }

    public static let formationBound: Int64 = 3_000_000_000
    /// 500 ms heartbeats from 16 peers are 32 a second, and a larger group's heartbeats stay
    /// near that (RTCP's rule); the clock probes and their replies add at most 32 × 16 / N of
    /// each a second while the warm-ups last (21 among 24, 16 among 32, fewer in larger groups).
    public static let receivedPerSecondMax = 80.0
    public static let wakeTrafficRatioMax = 2.0

    /// The group sizes the soak tier runs in turn.
    public static let sizes = [64, 96, 128, 192, 256]

    public let seed: UInt64
    public let agents: Int
    public init(seed: UInt64, agents: Int) {
        self.seed = seed
        self.agents = max(3, agents)
    }

    /// The datagrams received since `before`, by type, most first.
    static func byType(_ now: [UInt8: Int], since before: [UInt8: Int]) -> [String] {
        now.map { ($0.key, $0.value - (before[$0.key] ?? 0)) }.filter { $0.1 > 0 }.sorted { $0.1 > $1.1 }.map {
            "\(MessageType(rawValue: $0.0).map { "\($0)" } ?? "?\($0.0)") \($0.1)"
        }
    }

    public func run() -> Outcome {
        var random = SplitMix64(seed: seed)
        var outcome = Outcome(seed: seed, agents: agents)
        let clocks = (0..<agents).map { _ in SimulatedClock.random(using: &random) }
        var conditions = NetworkConditions.randomLAN(lossy: false, using: &random)
        conditions.lossProbability = 0.01
        var simulation = Simulation(seed: seed, clocks: clocks, conditions: conditions)
        var order = Array(0..<agents)
        for index in order.indices.reversed() { order.swapAt(index, Int(random.next() % UInt64(index + 1))) }
        let starved = Array(order.prefix(max(1, agents / 32)))
        let paused = order[starved.count]
        let keepingUp = Set(0..<agents).subtracting(starved)
        for node in 0..<agents { simulation.schedule(.start(node: node), at: Int64(random.next() % 500_000_000)) }
        for node in starved {
            simulation.schedule(
                .starve(node: node, perInput: .microseconds(1_000 + Int64(random.next() % 2_000))), at: 0)
        }
        let second: Int64 = 1_000_000_000
        // The idle window spans two of the group's heartbeat intervals (500 ms × N / 16), at
        // least 3 s: a shorter one would catch most heartbeats of a large group, or none.
        let idleSeconds = max(3, Int64(agents) / 8)
        let (idleFrom, pauseFor) = (7 * second, Duration.seconds(10))
        let pauseAt = idleFrom + idleSeconds * second
        simulation.schedule(.pause(node: paused, for: pauseFor), at: pauseAt)

        // Formation, looked at every 50 ms; what was missing at the bound is kept for the report.
        var at: Int64 = 0
        var missingAtBound: [String] = []
        while at < 6 * second, outcome.formationNanos == nil {
            at += 50_000_000
            simulation.run(until: at)
            if keepingUp.allSatisfy({ simulation.view(of: $0) == simulation.expectedView(of: $0) }) {
                outcome.formationNanos = at
            } else if at == Self.formationBound {
                var nodeOf: [Member: Int] = [:]
                for node in 0..<agents {
                    if let member = simulation.nodes[node].instance?.member { nodeOf[member] = node }
                }
                missingAtBound = keepingUp.sorted().flatMap { node in
                    let missing = simulation.expectedView(of: node).subtracting(simulation.view(of: node))
                    return missing.map { member in
                        let peerName =
                            nodeOf[member].map { "node\($0)\(starved.contains($0) ? " (starved)" : "")" } ?? "?"
                        return "node\(node) lacked \(peerName)"
                    }.sorted()
                }
            }
        }
        if outcome.formationNanos.map({ $0 > Self.formationBound }) ?? true {
            outcome.failures.append(
                "the group had not formed \(Self.formationBound / 1_000_000) ms after the first start (\(missingAtBound.count) pairs missing then: \(missingAtBound.prefix(4).joined(separator: ", ")))"
            )
        }

        // The idle window.
        simulation.run(until: idleFrom)
        let idleBefore = simulation.nodes.map(\.datagramsReceived)
        var typesBefore = simulation.receivedByType
        simulation.run(until: pauseAt)
        outcome.idleByType = Self.byType(simulation.receivedByType, since: typesBefore)
        let idle = zip(simulation.nodes.map(\.datagramsReceived), idleBefore).map { $0 - $1 }
        outcome.receivedPerSecondMax = Double(idle.max() ?? 0) / Double(idleSeconds)
        if let busiest = idle.indices.max(by: { idle[$0] < idle[$1] }) {
            outcome.busiest =
                "node\(busiest)\(starved.contains(busiest) ? " (starved)" : busiest == paused ? " (to be paused)" : ""), median \(idle.sorted()[idle.count / 2] / Int(idleSeconds))/s"
        }
        if outcome.receivedPerSecondMax > Self.receivedPerSecondMax {
            outcome.failures.append(
                "an agent received \(outcome.receivedPerSecondMax) datagrams a second when idle (bound \(Self.receivedPerSecondMax))"
            )
        }

        // The pause, and the 3 s after the paused agent wakes.
        let wokeAt = pauseAt + pauseFor.nanoseconds
        simulation.run(until: wokeAt - 1)  // not past the wake-up itself
        let eventsBefore = simulation.nodes[paused].events.count
        let wakeBefore = simulation.nodes.map(\.datagramsReceived)
        typesBefore = simulation.receivedByType
        simulation.run(until: wokeAt + 3 * second)
        outcome.wakeByType = Self.byType(simulation.receivedByType, since: typesBefore)
        let wake = zip(simulation.nodes.map(\.datagramsReceived), wakeBefore).map { $0 - $1 }
        outcome.wakeTrafficRatio =
            Double(wake.reduce(0, +)) / 3 / (Double(max(1, idle.reduce(0, +))) / Double(idleSeconds))
        if outcome.wakeTrafficRatio > Self.wakeTrafficRatioMax {
            outcome.failures.append(
                "the 3 s after node\(paused) woke carried \(String(format: "%.2f", outcome.wakeTrafficRatio))× the idle traffic"
            )
        }
        let departures = simulation.nodes[paused].events.dropFirst(eventsBefore).filter {
            if case .peerLeft = $0.event { true } else { false }
        }
        if !departures.isEmpty {
            outcome.failures.append("node\(paused), woken after 10 s, reported \(departures.count) peer-left")
        }

        // The end: everyone, starved and woken included, lists everyone.
        simulation.run(until: wokeAt + 8 * second)
        for observer in 0..<agents {
            let (view, expected) = (simulation.view(of: observer), simulation.expectedView(of: observer))
            if view != expected {
                func role(_ node: Int) -> String {
                    starved.contains(node) ? " (starved)" : node == paused ? " (paused)" : ""
                }
                let missing = expected.subtracting(view).compactMap { member in
                    simulation.nodes.firstIndex { $0.id == member.id }.map { "node\($0)\(role($0))" }
                }
                // What the observer last made of the first one missing (to study a failing seed).
                let story = expected.subtracting(view).first.map { member in
                    simulation.nodes[observer].events.compactMap { entry -> String? in
                        let (info, what): (PeerInfo, String)
                        switch entry.event {
                        case .peerJoined(let peer): (info, what) = (peer, "joined")
                        case .peerLeft(let peer, let reason): (info, what) = (peer, "left (\(reason))")
                        case .peerUnresponsive(let peer): (info, what) = (peer, "unresponsive")
                        case .peerResponsive(let peer): (info, what) = (peer, "responsive")
                        default: return nil
                        }
                        return info.member.id == member.id ? "\(what) at \(entry.atNanos / 1_000_000) ms" : nil
                    }.suffix(4).joined(separator: ", ")
                }
                outcome.failures.append(
                    "node\(observer)\(role(observer)) lists \(view.intersection(expected).count) of \(expected.count) at the end (not \(missing.prefix(3).joined(separator: ", ")): \(story ?? "")), and \(view.subtracting(expected).count) that are not there"
                )
            }
        }
        let drops = starved.map { simulation.nodes[$0].receiveBufferDrops }.reduce(0, +)
        outcome.summary =
            "\(agents) agents (idle: \(outcome.idleByType.prefix(4).joined(separator: ", "))): formed in \(outcome.formationNanos.map { "\($0 / 1_000_000) ms" } ?? "never"), idle \(String(format: "%.1f", outcome.receivedPerSecondMax)) received/s at most (\(outcome.busiest)), wake traffic ×\(String(format: "%.2f", outcome.wakeTrafficRatio)) (\(outcome.wakeByType.prefix(5).joined(separator: ", "))), \(drops) datagrams lost by the \(starved.count) starved agents' buffers"
        return outcome
    }
}
