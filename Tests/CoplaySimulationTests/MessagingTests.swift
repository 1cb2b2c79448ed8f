import CoplayCore
import CoplaySimulation
import Testing

/// App messages (GroupSessionMessenger) on a lossy network.
@Suite struct MessagingTests {
    func delivered(_ simulation: Simulation, _ node: Int) -> [MessageReport] {
        simulation.nodes[node].events.compactMap { if case .message(let message) = $0.event { message } else { nil } }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func reliableMessages_reachEveryRecipientKnownAtSendTimeExactlyOnce_despiteLoss(seed: UInt64) {
        var simulation = Simulation(
            seed: seed, clocks: (0..<4).map { SimulatedClock(offsetNanos: Int64($0) * 100_000_000) },
            conditions: NetworkConditions(
                lossProbability: 0.2, duplicationProbability: 0.1, baseDelay: .microseconds(100),
                jitterMean: .microseconds(80)))
        for node in 0..<3 { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
        simulation.run(until: 2_000_000_000)
        let sizes = [10, 900, 1_500, 5_000, 16_000]
        var expected: [(text: String, recipients: Set<Int>)] = []
        for (index, size) in sizes.enumerated() {
            let text = String(repeating: Character(UnicodeScalar(UInt8(97 + index))), count: size)
            let toOne = index % 2 == 1
            simulation.schedule(
                .command(node: 0, .message(to: toOne ? ["node2"] : nil, unreliable: false, text: text)),
                after: .milliseconds(Int64(index) * 50))
            expected.append((text, toOne ? [2] : [1, 2]))
        }
        simulation.schedule(
            .command(node: 1, .message(to: nil, unreliable: true, text: "best effort")), after: .milliseconds(300))
        runWithoutLivelock(&simulation, for: .seconds(1))
        simulation.schedule(.start(node: 3), after: .zero)  // a late joiner: not a recipient of anything above
        runWithoutLivelock(&simulation, for: .seconds(8))
        for node in 1...3 {
            let reliable = delivered(simulation, node).filter(\.isReliable)
            for (text, recipients) in expected {
                let copies = reliable.filter { $0.text == text }.count
                #expect(
                    copies == (recipients.contains(node) ? 1 : 0),
                    "seed \(seed): node\(node) got \(copies) copies of the \(text.count)-byte message")
            }
            #expect(
                delivered(simulation, node).filter { !$0.isReliable }.count <= 1,
                "an unreliable message is delivered at most once")
        }
        #expect(
            delivered(simulation, 0).allSatisfy { !$0.from.isLocal && !$0.isReliable },
            "the sender does not receive its own messages")
    }

    @Test func oversizedMessage_isAClearError() {
        var simulation = Simulation(seed: 1, clocks: [SimulatedClock(), SimulatedClock()])
        simulation.schedule(.start(node: 0), at: 0)
        simulation.schedule(.start(node: 1), at: 0)
        simulation.run(until: 500_000_000)
        simulation.schedule(
            .command(node: 0, .message(to: nil, unreliable: false, text: String(repeating: "z", count: 16_385))),
            after: .zero)
        runWithoutLivelock(&simulation, for: .milliseconds(100))
        let errors = simulation.nodes[0].events.compactMap {
            if case .commandError(let error) = $0.event { error.message } else { nil }
        }
        #expect(errors == ["the message is 16385 bytes; the limit is 16384"])
        #expect(simulation.nodes[1].instance!.counters.messagesReceived == 0)
    }
}
