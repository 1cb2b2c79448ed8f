import Testing

@testable import CoplayCore

// The messaging machine on its own: splitting, reassembly, bounds. Built alone, fed inputs, its
// outputs asserted: no router, no other machine, no socket.

private let carol = Member(id: carolID, incarnation: Incarnation(300))
private let carolEndpoint = Endpoint(address: 0x7F00_0003, port: 50_003)
private let alice = Member(id: aliceID, incarnation: Incarnation(1))

@Suite struct MessagingMachineTests {
    @Test func longMessage_isSplit_reassembledOnce_andUnreliableDuplicatesAreSuppressed() throws {
        let settings = Settings()
        var sender = Messaging(settings: settings)
        let peer = PeerRecord(member: carol, name: "carol", endpoint: carolEndpoint, now: at(0).monotonic)
        let text = String(repeating: "x", count: 3000)
        let outputs = sender.send(to: nil, unreliable: true, text: text, peers: [peer], overheadBytes: { _ in 200 })
        let parts = outputs.compactMap { if case .multicast(let part) = $0 { part } else { nil } }
        #expect(parts.count == 3, "3000 bytes in parts of at most 1000")
        var receiver = Messaging(settings: settings)
        var delivered: [MessageReport] = []
        let originator = Originator(member: alice, name: "alice", isLocal: false)
        for part in parts.reversed() + parts {
            for case .emit(.message(let report)) in receiver.receive(
                part, from: alice, isReliable: false, local: carol, originator: originator, now: at(1).monotonic)
            {
                delivered.append(report)
            }
        }
        #expect(delivered.count == 1 && delivered.first?.text == text)
    }

    @Test func reassembly_isBounded_givingUpTheOldest() {
        var settings = Settings()
        settings.partialMessagesMax = 4
        var messaging = Messaging(settings: settings)
        var counters = Counters()
        let originator = Originator(member: alice, name: "alice", isLocal: false)
        for id in UInt32(1)...20 {
            let part = MessagePart(messageID: id, index: 1, count: 2, recipients: [], bytes: [1])
            for case .count(let tally) in messaging.receive(
                part, from: alice, isReliable: false, local: carol, originator: originator,
                now: at(Double(id)).monotonic)
            {
                counters.add(tally)
            }
        }
        #expect(counters.messagesIncomplete == 16)
    }
}
