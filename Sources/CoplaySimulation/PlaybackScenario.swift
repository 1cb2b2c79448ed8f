import CoplayCore

/// A seeded coordinated-playback scenario: 3 to 6 agents share an item and issue random
/// transport commands (some concurrent, some for another item) on a lossy, duplicating,
/// reordering network with a healing partition and a crash (and restart). After quiescence it
/// checks that every live agent holds the same log and the same group state for every item,
/// that players on the same item agree, that delivery was causal and exactly-once, and that no
/// command was applied to a non-matching item.
public struct PlaybackScenario: Sendable {
    public struct Outcome: Sendable {
        public var seed: UInt64
        public var failures: [String] = []
        public var commandsIssued = 0
        public var commandsDelivered = 0
        /// Largest position difference between players of the same item at the end, in seconds.
        public var positionSpreadSeconds = 0.0
        /// Reliable (message, recipient) deliveries checked.
        public var messagesChecked = 0
        public var summary = ""
    }

    public let seed: UInt64
    /// When set, the run ends by printing this node's deliveries and events (to study a seed).
    public var traceNode: Int?
    public init(seed: UInt64, traceNode: Int? = nil) {
        self.seed = seed
        self.traceNode = traceNode
    }

    /// How far apart two players on the same item may be at the end.
    public static let positionToleranceSeconds = 0.002

    public func run() -> Outcome {
        var random = SplitMix64(seed: seed)
        var outcome = Outcome(seed: seed)
        let nodeCount = 3 + Int(random.next() % 4)
        let clocks = (0..<nodeCount).map { _ in SimulatedClock.random(using: &random) }
        let conditions = NetworkConditions.randomLAN(lossy: true, using: &random)
        var settings = Settings()
        settings.recordsDeliveries = true
        var simulation = Simulation(seed: seed, clocks: clocks, settings: settings, conditions: conditions)
        func at(_ seconds: Double) -> Int64 { Int64(seconds * 1e9) }
        for node in 0..<nodeCount { simulation.schedule(.start(node: node), at: Int64(random.next() % 500_000_000)) }
        let buffer = Double(random.next() % 4) * 0.1
        simulation.schedule(
            .command(
                node: 0,
                .share(
                    Activity(url: "https://example.com/a.mp4", itemID: "A"), durationSeconds: nil, bufferSeconds: buffer
                )),
            at: at(1))

        // Faults: a partition that heals, and a crash (sometimes followed by a restart).
        var crashed: Int?
        if random.next() % 2 == 0 {
            let start = at(2 + random.nextUnit() * 3)
            let cut = 1 + Int(random.next() % UInt64(nodeCount - 1))
            simulation.schedule(.partition([Array(0..<cut), Array(cut..<nodeCount)]), at: start)
            simulation.schedule(.heal, at: start + at(0.5 + random.nextUnit() * 2))
        }
        if random.next() % 2 == 0 {
            let node = 1 + Int(random.next() % UInt64(nodeCount - 1))
            let when = at(2 + random.nextUnit() * 4)
            simulation.schedule(.crash(node: node), at: when)
            if random.next() % 2 == 0 {
                simulation.schedule(.start(node: node), at: when + at(0.3 + random.nextUnit() * 2))
            } else {
                crashed = node
            }
        }
        // Commands between 1.5 s and 8 s, from random agents; some in concurrent pairs.
        var time = 1.5
        while true {
            time += 0.1 + random.nextUnit() * 0.8
            if time >= 8 { break }
            let node = Int(random.next() % UInt64(nodeCount))
            let command: ConsoleCommand
            switch random.next() % 15 {
            case 0, 1: command = .play(rate: [1, 1, 1.5, 2][Int(random.next() % 4)])
            case 2, 3: command = .pause
            case 4: command = .seek(seconds: Double(random.next() % 600))
            case 5: command = .playNow(rate: 1)
            case 6: command = .rate([0.5, 1, 2][Int(random.next() % 3)])
            case 7: command = .load(LoadedItem(id: "B", url: "https://example.com/b.mp4"))  // local only: a mismatch
            case 8: command = .load(LoadedItem(id: "A", url: "https://example.com/a.mp4", bufferSeconds: buffer))
            case 9: command = .suspend(reason: Suspension.builtInReasons[Int(random.next() % 6)])
            case 10: command = .suspend(reason: "custom reason \(random.next() % 3)")
            case 11:  // resume one of the first few suspensions, sometimes proposing a time
                command = .resume(
                    id: UInt32(1 + random.next() % 4), at: random.next() % 2 == 0 ? Double(random.next() % 300) : nil)
            case 12: command = .stall(seconds: 0.2 + random.nextUnit())
            case 13: command = .whatHappened(seconds: 1 + Double(random.next() % 5))
            case 14:  // an app message: reliable or not, to everyone or to one agent, up to 3 datagrams
                let to: [String]? = random.next() % 2 == 0 ? nil : ["node\(random.next() % UInt64(nodeCount))"]
                let text = "m\(outcome.commandsIssued) " + String(repeating: "x", count: Int(random.next() % 3000))
                command = .message(to: to, unreliable: random.next() % 3 == 0, text: text)
            default: command = .pause
            }
            simulation.schedule(.command(node: node, command), at: at(time))
            outcome.commandsIssued += 1
            if random.next() % 5 == 0 {  // a concurrent command from another agent, within a millisecond
                let other = (node + 1 + Int(random.next() % UInt64(nodeCount - 1))) % nodeCount
                simulation.schedule(
                    .command(node: other, .play(rate: 1)), at: at(time) + Int64(random.next() % 1_000_000))
                outcome.commandsIssued += 1
            }
        }
        // Everyone ends every suspension, then returns to item A, so that players can be compared.
        for node in 0..<nodeCount {
            for id in 1...40 {
                simulation.schedule(.command(node: node, .resume(id: UInt32(id), at: nil)), at: at(8.4))
            }
        }
        for node in 0..<nodeCount {
            simulation.schedule(
                .command(
                    node: node, .load(LoadedItem(id: "A", url: "https://example.com/a.mp4", bufferSeconds: buffer))),
                at: at(8.5))
        }
        guard simulation.run(until: at(16)) else {
            outcome.failures.append("the event budget ran out: a livelock")
            return outcome
        }
        check(simulation, crashed: crashed, into: &outcome)
        if let traceNode, let instance = simulation.nodes[traceNode].instance {
            for envelope in instance.deliveries {
                print("delivered \(envelope.dot) lamport \(envelope.lamport) \(envelope.command.operation.name)")
            }
            for entry in simulation.nodes[traceNode].events { print("\(Double(entry.atNanos) / 1e9) \(entry.event)") }
        }
        outcome.summary =
            "\(nodeCount) agents, loss \(Int(conditions.lossProbability * 100))%, dup \(Int(conditions.duplicationProbability * 100))%, "
            + "\(outcome.commandsIssued) commands, \(simulation.datagramsSent) datagrams"
        return outcome
    }

    private func check(_ simulation: Simulation, crashed: Int?, into outcome: inout Outcome) {
        let live = simulation.liveIndices
        guard let first = live.first, let reference = simulation.nodes[first].instance else {
            outcome.failures.append("no live agent at the end")
            return
        }
        if live.count != simulation.nodes.count - (crashed == nil ? 0 : 1) {
            outcome.failures.append("only \(live.count) agents live at the end")
        }
        let trueNow = simulation.nowNanos
        outcome.commandsDelivered = reference.log.delivered.entries.values.reduce(0) { $0 + Int($1) }
        for index in live {
            guard let instance = simulation.nodes[index].instance else { continue }
            // 1. The same log and the same group state everywhere.
            if !instance.log.hasDeliveredTheSame(as: reference.log) {
                outcome.failures.append(
                    "node\(index) delivered \(instance.log.delivered), node\(first) \(reference.log.delivered)")
            }
            if instance.activity?.dot != reference.activity?.dot {
                outcome.failures.append("node\(index)'s activity differs from node\(first)'s")
            }
            for (item, state) in reference.items {
                guard let mine = instance.items[item] else {
                    outcome.failures.append("node\(index) has no group state for \(item)")
                    continue
                }
                if mine.winner.dot != state.winner.dot {
                    outcome.failures.append(
                        "node\(index)'s \(item) state is \(mine.winner.dot), node\(first)'s \(state.winner.dot)")
                }
            }
            // 2. Causal, exactly-once delivery.
            // An adopted snapshot counts every command at or below its frontier as delivered.
            // Dependencies are deltas from the origin's previous command: what a command depends
            // on in full is the union of its own and its predecessors' (`implied`).
            var seen = VectorClock()
            var dots = Set<Dot>()
            var implied: [Member: VectorClock] = [:]
            var adoptions = instance.adoptions[...]
            for (position, envelope) in instance.deliveries.enumerated() {
                while let adoption = adoptions.first, adoption.afterDeliveries <= position {
                    seen.merge(adoption.frontier)
                    adoptions.removeFirst()
                }
                implied[envelope.dot.origin, default: VectorClock()].merge(envelope.dependencies)
                for (member, needed) in implied[envelope.dot.origin]!.entries where seen[member] < needed {
                    outcome.failures.append(
                        "node\(index) delivered \(envelope.dot) before \(member)#\(needed), which an earlier command of its origin depended on"
                    )
                }
                if !dots.insert(envelope.dot).inserted {
                    outcome.failures.append("node\(index) delivered \(envelope.dot) twice")
                }
                if envelope.dot.counter != seen[envelope.dot.origin] + 1 {
                    outcome.failures.append(
                        "node\(index) delivered \(envelope.dot) after #\(seen[envelope.dot.origin])")
                }
                for (member, needed) in envelope.dependencies.entries where seen[member] < needed {
                    outcome.failures.append(
                        "node\(index) delivered \(envelope.dot) before its dependency \(member)#\(needed)")
                }
                seen[envelope.dot.origin] = envelope.dot.counter
            }
            // 3. No command applied to another item than the current one.
            var current: String?
            for entry in simulation.nodes[index].events {
                switch entry.event {
                case .itemChanged(let report): current = report.item.id
                case .session: current = nil
                case .playing(let report), .paused(let report), .waiting(let report):
                    if report.reason != "ended", report.item != current {
                        outcome.failures.append(
                            "node\(index) applied \(report.dot) for \(report.item) while on \(current ?? "nothing")")
                    }
                default: break
                }
            }
        }
        if !outcome.failures.isEmpty { return }
        // 4. Every reliable message reached each of its recipients at most once, and exactly once
        //    if that recipient is still live in the incarnation it had when the message was sent
        //    and so is the sender (a sender that crashes before anyone has all the parts takes
        //    them with it: reliability is against loss, not against the sender's crash).
        func joins(_ node: Int) -> [(at: Int64, member: Member)] {
            simulation.nodes[node].events.compactMap { entry in
                if case .session(let report) = entry.event, report.state.isJoined {
                    (entry.atNanos, report.member)
                } else {
                    nil
                }
            }
        }
        // The membership of node `peer` that node `observer` last admitted before `instant`.
        func knownTo(_ observer: Int, at instant: Int64, as peer: Int) -> Member? {
            simulation.nodes[observer].events.last { entry in
                guard entry.atNanos <= instant, case .peerJoined(let info) = entry.event else { return false }
                return info.member.id == simulation.nodes[peer].id
            }.flatMap { entry in
                if case .peerJoined(let info) = entry.event { info.member } else { nil }
            }
        }
        for sender in simulation.nodes.indices {
            for entry in simulation.nodes[sender].events {
                guard case .messageSent(let sent) = entry.event, sent.isReliable,
                    let from = joins(sender).last(where: { $0.at <= entry.atNanos })?.member
                else { continue }
                for name in sent.recipients {
                    // The recipient is the membership the sender knew when it sent (PROTOCOL.md:
                    // a restarted agent, a new incarnation, is not a recipient even if it had
                    // restarted before the sender heard of it).
                    guard let recipient = Int(name.dropFirst(4)), live.contains(recipient),
                        let member = simulation.nodes[recipient].instance?.member,
                        joins(recipient).contains(where: { $0.member == member && $0.at <= entry.atNanos }),
                        knownTo(sender, at: entry.atNanos, as: recipient) == member
                    else { continue }
                    let copies = simulation.nodes[recipient].events.filter { event in
                        if case .message(let message) = event.event {
                            message.from.member == from && message.messageID == sent.messageID
                        } else {
                            false
                        }
                    }.count
                    let senderSurvived = simulation.nodes[sender].instance?.member == from
                    if copies > 1 || (copies == 0 && senderSurvived) {
                        outcome.failures.append(
                            "node\(recipient) got \(copies) copies of message \(sent.messageID) from node\(sender)")
                    }
                    outcome.messagesChecked += 1
                }
            }
        }
        // 5. Players on item A agree with each other and with the group state.
        guard let group = reference.items["A"] else { return }
        var positions: [Double] = []
        for index in live {
            guard let instance = simulation.nodes[index].instance, instance.player.item?.id == "A" else {
                outcome.failures.append("node\(index) is not on item A at the end")
                continue
            }
            if instance.isSuspended {
                outcome.failures.append(
                    "node\(index) is still suspended at the end: \(instance.suspensions.map(\.reason))")
            }
            let now = simulation.nodes[index].clock.timestamp(atTrue: trueNow)
            positions.append(instance.player.position(at: now))
            if abs(instance.player.rate - group.timeline.rate) > 1e-9 {
                outcome.failures.append(
                    "node\(index) plays at \(instance.player.rate), the group at \(group.timeline.rate)")
            }
        }
        if let low = positions.min(), let high = positions.max() {
            outcome.positionSpreadSeconds = high - low
            if high - low > Self.positionToleranceSeconds {
                outcome.failures.append("players on A are \(Int((high - low) * 1e6)) µs apart: \(positions)")
            }
        }
    }
}
