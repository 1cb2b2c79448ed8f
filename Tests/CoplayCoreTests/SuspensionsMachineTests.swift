import Testing

@testable import CoplayCore

// The suspensions value on its own. Built alone, fed inputs, its
// outputs asserted: no router, no other machine, no socket.

@Suite struct SuspensionsMachineTests {
    @Test func idsAreUnique_fullAtTheLimit_andEndByReasonTakesTheOldest() {
        var suspensions = Suspensions()
        let first = suspensions.begin("audioSessionInterrupted", now: at(0).monotonic)
        let second = suspensions.begin("audioSessionInterrupted", now: at(1).monotonic)
        #expect(first.id != second.id)
        #expect(suspensions.end(reason: "audioSessionInterrupted") == first)
        #expect(suspensions.reasons == ["audioSessionInterrupted"])
        for index in 1..<Announcement.suspensionsMax { _ = suspensions.begin("r\(index)", now: at(2).monotonic) }
        #expect(suspensions.isFull && suspensions.active.count == Announcement.suspensionsMax)
        _ = suspensions.begin(Suspension.stallRecovery, now: at(3).monotonic)
        #expect(suspensions.active.count == Announcement.suspensionsMax + 1, "a stall still begins; none is dropped")
        #expect(suspensions.announced.count == Announcement.suspensionsMax, "announcements carry the first 8")
        #expect(suspensions.end(second) == second)
    }
}
