import Testing

@testable import CoplayCore

// The session lifecycle machine on its own: joining, leaving, incarnations. Built alone, fed inputs, its
// outputs asserted: no router, no other machine, no socket.

@Suite struct SessionLifecycleTests {
    @Test func leave_sendsEveryCopyAtItsOffset_thenInvalidates_andExitsWhenAsked() {
        var lifecycle = SessionLifecycle(session: session, id: aliceID, now: at(0))
        #expect(lifecycle.join(now: at(0)) == false, "the first join is not a rejoin")
        #expect(lifecycle.isJoined)
        lifecycle.leave(
            sending: lifecycle.stamp(.leave(.shutdown)), reason: .shutdown, copyOffsets: [.zero, .milliseconds(10)],
            now: at(5).monotonic)
        #expect(lifecycle.state == .invalidated(reason: .shutdown), "leaving is already invalidated")
        #expect(lifecycle.requestExit() == false, "a copy is still due")
        #expect(lifecycle.tick(now: at(5).monotonic).count == 1)
        #expect(lifecycle.nextWake == at(15).monotonic)
        let last = lifecycle.tick(now: at(15).monotonic)
        #expect(last.count == 2 && last.last == .exit, "the last copy, then the exit: \(last)")
        #expect(lifecycle.nextWake == nil)
    }

    @Test func rejoin_isANewIncarnation_withSequenceNumbersFromOne() {
        var lifecycle = SessionLifecycle(session: session, id: aliceID, now: at(0))
        _ = lifecycle.join(now: at(0))
        let first = lifecycle.member
        #expect(lifecycle.stamp(.leave(.left)).sequence == 1)
        #expect(lifecycle.stamp(.leave(.left)).sequence == 2)
        lifecycle.leave(
            sending: lifecycle.stamp(.leave(.left)), reason: .left, copyOffsets: [.zero], now: at(1).monotonic)
        #expect(lifecycle.join(now: at(2)) == true)
        #expect(lifecycle.member.id == first.id && lifecycle.member.incarnation > first.incarnation)
        #expect(lifecycle.stamp(.leave(.left)).sequence == 1)
    }
}
