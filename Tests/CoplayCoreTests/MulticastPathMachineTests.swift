import Testing

@testable import CoplayCore

// The multicast path machine on its own: the verdict from the peers' stamped group
// announcements. Built alone, fed inputs, its outputs asserted: no router, no socket.

private let carol = Member(id: carolID, incarnation: Incarnation(1))

@Suite struct MulticastPathMachineTests {
    /// Announcements from bob and carol, one each every 500 ms from `start` on, each arriving
    /// `delayMillis` after it was sent (clocks in step), the ones `lost` says skipped.
    private func feed(
        _ path: inout MulticastPath, count: Int, from start: Int = 0, delayMillis: Double,
        lost: (Int) -> Bool = { _ in false }
    ) -> [MulticastPath.Output] {
        var outputs: [MulticastPath.Output] = []
        for index in start..<(start + count) where !lost(index) {
            for member in [bob, carol] {
                let sent = at(Double(index) * 500)
                let arrived = at(Double(index) * 500 + delayMillis)
                outputs += path.onGroupAnnouncement(
                    PathStamp(number: UInt32(index + 1), sentAt: sent.wall), from: member, receivedAt: arrived.wall,
                    offsetNanos: 0, now: arrived.monotonic)
            }
        }
        return outputs
    }

    @Test func aWirePath_isPrompt_andAskedNothing() {
        var path = MulticastPath(settings: Settings())
        #expect(feed(&path, count: 40, delayMillis: 0.3).isEmpty)
        #expect(!path.wantsUnicast)
    }

    @Test func aBeaconsHold_makesItSlow_onceEnoughSamples_andTheVerdictHoldsThroughNoise() {
        var path = MulticastPath(settings: Settings())
        // Held 20-100 ms for the beacon: slow after 8 samples, not before.
        var outputs = feed(&path, count: 3, delayMillis: 60)
        #expect(outputs.isEmpty, "6 samples: no verdict yet")
        outputs = feed(&path, count: 10, from: 3, delayMillis: 60)
        #expect(outputs == [.changed(wantsUnicast: true)])
        #expect(path.wantsUnicast)
        // Between the thresholds (10 ms): it stays as it is.
        #expect(feed(&path, count: 40, from: 13, delayMillis: 10).isEmpty)
        // Prompt again (under 5 ms and nothing lost), after the holdoff.
        #expect(feed(&path, count: 40, from: 53, delayMillis: 1) == [.changed(wantsUnicast: false)])
    }

    @Test func gapsInTheNumbers_makeItLossy_evenWhenPrompt() {
        var path = MulticastPath(settings: Settings())
        // One in five announcements missed: 20% lost.
        let outputs = feed(&path, count: 30, delayMillis: 0.3) { $0 % 5 == 4 }
        #expect(outputs == [.changed(wantsUnicast: true)])
        #expect((path.loss ?? 0) > 0.1)
    }

    @Test func aChangedVerdict_standsForTheHoldoff() {
        var settings = Settings()
        settings.multicastVerdictHoldoff = .seconds(30)
        var path = MulticastPath(settings: settings)
        #expect(feed(&path, count: 10, delayMillis: 60) == [.changed(wantsUnicast: true)])
        // Prompt from 5 s on: still slow until 30 s after the change.
        #expect(feed(&path, count: 40, from: 10, delayMillis: 1).isEmpty, "within the holdoff")
        #expect(feed(&path, count: 20, from: 60, delayMillis: 1) == [.changed(wantsUnicast: false)])
    }

    @Test func onlyWhatCameByTheNetworksMulticastIsJudged_andADelayIsReadAtMostOncePerInterval() {
        var path = MulticastPath(settings: Settings())
        var offsetReads = 0
        func announce(_ index: Int, _ stamp: PathStamp?, viaNetworkGroup: Bool) -> [MulticastPath.Output] {
            let arrived = at(Double(index) * 50 + 60)  // every 50 ms, each 60 ms late: slow
            return path.onAnnouncement(
                stamp, from: bob, viaNetworkGroup: viaNetworkGroup, receivedAt: arrived.wall,
                offsetNanos: {
                    offsetReads += 1
                    return 0
                }, now: arrived.monotonic)
        }
        // The relay's copies and unicast ones (viaNetworkGroup false), and replies (no stamp).
        for index in 0..<40 {
            let stamp = PathStamp(number: UInt32(index + 1), sentAt: at(Double(index) * 50).wall)
            #expect(announce(index, stamp, viaNetworkGroup: false).isEmpty)
            #expect(announce(index, nil, viaNetworkGroup: true).isEmpty)
        }
        #expect(offsetReads == 0)
        #expect(path.delayP75 == nil && path.loss == nil && !path.wantsUnicast)
        // By multicast: judged; the offset read at 0, 150, 300 … ms (the interval is 125 ms).
        var outputs: [MulticastPath.Output] = []
        for index in 0..<40 {
            let stamp = PathStamp(number: UInt32(index + 1), sentAt: at(Double(index) * 50).wall)
            outputs += announce(index, stamp, viaNetworkGroup: true)
        }
        #expect(offsetReads == 14)
        #expect(outputs == [.changed(wantsUnicast: true)])
    }

    @Test func theStampsOfOneIncarnation_countFromOne() {
        var path = MulticastPath(settings: Settings())
        #expect(path.nextStamp(now: at(0).wall).number == 1)
        #expect(path.nextStamp(now: at(1).wall).number == 2)
        path.onNewIncarnation()
        #expect(path.nextStamp(now: at(2).wall) == PathStamp(number: 1, sentAt: at(2).wall))
    }
}
