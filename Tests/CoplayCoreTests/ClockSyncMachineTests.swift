import Testing

@testable import CoplayCore

// The clock sync machine on its own: probes, samples, rationing. Built alone, fed inputs, its
// outputs asserted: no router, no other machine, no socket.

private let carol = Member(id: carolID, incarnation: Incarnation(300))

@Suite struct ClockSyncMachineTests {
    /// Answers a probe as a peer whose wall clock is `offsetMillis` ahead, 100 µs each way.
    private func reply(to probe: ClockProbe, offsetMillis: Int64) -> ClockProbeReply {
        let peerWall = WallInstant(unixNanos: probe.originWall.unixNanos + 100_000 + offsetMillis * 1_000_000)
        return ClockProbeReply(
            token: probe.token, originWall: probe.originWall, receiveWall: peerWall, transmitWall: peerWall)
    }

    @Test func newPeer_isProbedAtOnce_andSyncsAfterEnoughReplies() throws {
        let settings = Settings()
        var clocks = ClockSync(settings: settings)
        var random = SplitMix64(seed: 2)
        var now = 0.0
        var probes = clocks.onPeerJoined(carol, now: at(now), random: &random)
        var synced = false
        for _ in 0..<settings.offsetSamplesForSync {
            guard case .probe(let peer, let probe)? = probes.first else {
                Issue.record("expected a probe, got \(probes)")
                return
            }
            #expect(peer == carolID)
            let out = clocks.onProbeReply(
                reply(to: probe, offsetMillis: 250), from: carol, receivedAt: at(now + 0.2).monotonic,
                now: at(now + 0.2), random: &random)
            #expect(out.contains(.sampled(carolID)))
            synced = synced || out.contains(.synced(carolID))
            now += 10
            probes = clocks.tick(now: at(now), random: &random)
        }
        #expect(synced)
        let estimate = try #require(clocks.estimate(of: carolID, at: at(now).monotonic))
        #expect(abs(estimate.offsetNanos - 250_000_000) < 10_000)
    }

    /// The tick rations routine probes (4 a tick), not a new peer's burst: 32 peers joined at
    /// once get bursts of 4, then 8 more take the group past 32, where a burst is one probe; the
    /// first 32 bursts' second probes still go out together. The probes that make good a burst
    /// that got no reply are routine: they come due together 500 ms later, and are spread.
    @Test func theTickRationsProbesAfterTheBurst_notTheBurstPlannedBeforeTheGroupGrew() {
        var clocks = ClockSync(settings: Settings())
        var random = SplitMix64(seed: 5)
        func peer(_ index: Int) -> Member { Member(id: PeerID(0x5000 + UInt64(index)), incarnation: Incarnation(1)) }
        for index in 0..<32 { _ = clocks.onPeerJoined(peer(index), now: at(0), random: &random) }
        for index in 32..<40 { _ = clocks.onPeerJoined(peer(index), now: at(1), random: &random) }
        func probes(at millis: Double) -> Int {
            clocks.tick(now: at(millis), random: &random).filter { if case .probe = $0 { true } else { false } }.count
        }
        #expect(probes(at: 5) == 32, "the bursts' second probes, planned among at most 32")
        for millis in stride(from: 6.0, through: 20, by: 1) { _ = probes(at: millis) }
        #expect(probes(at: 700) == Settings().routineProbesPerTickMax, "40 unanswered peers' next probes, spread")
    }

    @Test func replyToNoProbe_isDropped_andARetiredClockComesBack() {
        var clocks = ClockSync(settings: Settings())
        var random = SplitMix64(seed: 3)
        let first = clocks.onPeerJoined(carol, now: at(0), random: &random)
        let forged = ClockProbeReply(
            token: 999, originWall: at(0).wall, receiveWall: at(0).wall, transmitWall: at(0).wall)
        let dropped = clocks.onProbeReply(
            forged, from: carol, receivedAt: at(1).monotonic, now: at(1), random: &random)
        #expect(dropped.contains { if case .drop(.unexpectedProbeReply, _) = $0 { true } else { false } })
        guard case .probe(_, let probe)? = first.first else {
            Issue.record("no probe")
            return
        }
        _ = clocks.onProbeReply(
            reply(to: probe, offsetMillis: 40), from: carol, receivedAt: at(0.2).monotonic, now: at(0.2),
            random: &random)
        clocks.onPeerLeft(carolID)
        #expect(clocks.peers[carolID] == nil)
        #expect(
            clocks.estimate(of: carolID, at: at(1).monotonic) != nil, "a departed peer's clock is retired, not lost")
        _ = clocks.onPeerJoined(carol, now: at(2), random: &random)
        #expect(clocks.peers[carolID]?.estimator.sampleCount == 1, "restored on return")
    }

    @Test func suspectedPeer_isProbedEverySuspectInterval() {
        let settings = Settings()
        var clocks = ClockSync(settings: settings)
        var random = SplitMix64(seed: 4)
        _ = clocks.onPeerJoined(carol, now: at(0), random: &random)
        clocks.onSuspected(carolID, now: at(5000).monotonic)
        #expect(clocks.tick(now: at(5000), random: &random).count == 1)
        #expect(clocks.nextWake == at(5000).monotonic + settings.suspectProbeInterval)
    }
}
