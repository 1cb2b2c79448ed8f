import CoplayCore
import Testing

/// The queue's commands through `Instance`, between two agents whose datagrams the test carries
/// by hand (so that it can hold one back).
@Suite struct RouterQueueTests {
    private let aliceEndpoint = Endpoint(address: 0x7F00_0001, port: 50_001)

    /// Alice and bob, started, having exchanged their hellos and clock probes (a peer's commands
    /// wait for its clock).
    private func aliceAndBob() throws -> (Instance, Instance) {
        var alice = makeInstance()
        var bob = makeInstance(id: bobID, name: "bob")
        var toBob = alice.start(now: at(0))
        var toAlice = bob.start(now: at(0))
        var millis = 1.0
        while alice.clockEstimate(of: bobID, at: at(millis).monotonic) == nil
            || bob.clockEstimate(of: aliceID, at: at(millis).monotonic) == nil
        {
            try #require(millis < 20, "the clocks are known within a few exchanges")
            let now = at(millis)
            let (forBob, forAlice) = (toBob, toAlice)
            (toBob, toAlice) = ([], [])
            for datagram in datagrams(forBob) {
                toAlice += bob.onDatagram(
                    WireFormat.encode(datagram), from: aliceEndpoint, receivedAt: now, now: now, viaGroup: true)
            }
            for datagram in datagrams(forAlice) {
                toBob += alice.onDatagram(
                    WireFormat.encode(datagram), from: bobEndpoint, receivedAt: now, now: now, viaGroup: true)
            }
            millis += 0.1
        }
        return (alice, bob)
    }

    /// What an agent sends, to the group or to the other one.
    private func datagrams(_ directives: [Directive]) -> [Datagram] {
        directives.multicasts + directives.unicasts.map(\.0)
    }

    private func add(_ id: String) -> ConsoleCommand {
        .queue(.add(url: "https://example.com/\(id).mkv", id: id, title: "", durationSeconds: nil, after: .last))
    }

    private func advances(_ directives: [Directive]) -> [Datagram] {
        directives.multicasts.filter {
            if case .command(let envelope, _) = $0.payload, case .queue(.advance) = envelope.command.operation {
                return true
            }
            return false
        }
    }

    /// Alice adds the first entry: her add and her advance to it go as two datagrams. Bob gets the
    /// add, and adds a second entry before her advance reaches him (in CI, the advance came after
    /// bob had read his own line). Bob makes no advance of his own: the group goes to alice's
    /// entry, the first, not to his (an advance of his, ordered after hers, would skip it).
    @Test func anAddSeenWithoutItsAdvance_isNotSkippedByTheNextAdd() throws {
        var (alice, bob) = try aliceAndBob()
        let first = alice.onCommand(add("part1"), now: at(10))
        let held = try #require(advances(first).first, "alice advances to her first entry")
        for datagram in first.multicasts where datagram != held {
            _ = bob.onDatagram(
                WireFormat.encode(datagram), from: aliceEndpoint, receivedAt: at(11), now: at(11), viaGroup: true)
        }
        #expect(bob.queueEntries.map(\.item.id) == ["part1"] && bob.queueCurrent == nil)

        let second = bob.onCommand(add("part2"), now: at(12))
        #expect(advances(second).isEmpty, "bob's add to a queue that is not empty advances nowhere")
        _ = bob.onDatagram(
            WireFormat.encode(held), from: aliceEndpoint, receivedAt: at(13), now: at(13), viaGroup: true)
        for datagram in second.multicasts {
            _ = alice.onDatagram(
                WireFormat.encode(datagram), from: bobEndpoint, receivedAt: at(13), now: at(13), viaGroup: true)
        }
        for instance in [alice, bob] {
            #expect(instance.queueEntries.map(\.item.id) == ["part1", "part2"])
            #expect(instance.queueCurrent == "part1", "\(instance.queueCurrent ?? "none")")
        }
    }

    /// Alice's advance to her first entry is lost for good (she crashed between the two
    /// datagrams): the group holds entries and none is current, and a later add starts nothing.
    /// `next` does, from the first entry.
    @Test func aQueueWithoutACurrentEntry_startsWithNext_fromItsFirst() throws {
        var (alice, bob) = try aliceAndBob()
        let first = alice.onCommand(add("part1"), now: at(10))
        let lost = try #require(advances(first).first)
        for datagram in first.multicasts where datagram != lost {
            _ = bob.onDatagram(
                WireFormat.encode(datagram), from: aliceEndpoint, receivedAt: at(11), now: at(11), viaGroup: true)
        }
        #expect(advances(bob.onCommand(add("part2"), now: at(12))).isEmpty)
        let next = bob.onCommand(.next, now: at(13))
        #expect(advances(next).count == 1)
        #expect(bob.queueCurrent == "part1", "\(bob.queueCurrent ?? "none")")
    }

    /// An item shared outside the queue is playing; entries added meanwhile wait (the group is
    /// watching something). `next` moves the group to the queue's first entry and plays on, as
    /// `help next` says: the advance carries the shared item's rate, not a paused one.
    @Test func nextFromAPlayingSharedItem_playsTheFirstEntry() throws {
        var (alice, _) = try aliceAndBob()
        _ = alice.onCommand(
            .share(
                Activity(url: "https://example.com/film.mkv", itemID: "film"), durationSeconds: 600, bufferSeconds: 0),
            now: at(10))
        _ = alice.onCommand(.playNow(rate: 1), now: at(11))
        let added = alice.onCommand(add("ep1"), now: at(12))
        #expect(advances(added).isEmpty, "an add while an item is shared waits for next")
        #expect(alice.queueCurrent == nil)
        let next = alice.onCommand(.next, now: at(13))
        let advance = try #require(advances(next).first)
        guard case .command(let envelope, _) = advance.payload,
            case .queue(.advance(let from, let to, let rate, _)) = envelope.command.operation
        else {
            Issue.record("not an advance")
            return
        }
        #expect(from == nil && to.id == "ep1")
        #expect(rate == 1, "the group was playing: it plays on")
        #expect(alice.queueCurrent == "ep1")
    }

    /// Two first adds made at once, each to an empty queue: both advance, and the advance ordered
    /// last is the current entry on both.
    @Test func twoFirstAddsAtOnce_endOnOneCurrentEntry() throws {
        var (alice, bob) = try aliceAndBob()
        let fromAlice = alice.onCommand(add("a1"), now: at(10))
        let fromBob = bob.onCommand(add("b1"), now: at(10))
        #expect(advances(fromAlice).count == 1 && advances(fromBob).count == 1)
        for datagram in fromAlice.multicasts {
            _ = bob.onDatagram(
                WireFormat.encode(datagram), from: aliceEndpoint, receivedAt: at(11), now: at(11), viaGroup: true)
        }
        for datagram in fromBob.multicasts {
            _ = alice.onDatagram(
                WireFormat.encode(datagram), from: bobEndpoint, receivedAt: at(11), now: at(11), viaGroup: true)
        }
        #expect(alice.queueEntries.map(\.item.id) == bob.queueEntries.map(\.item.id))
        #expect(alice.queueEntries.count == 2)
        #expect(alice.queueCurrent != nil && alice.queueCurrent == bob.queueCurrent)
    }
}
