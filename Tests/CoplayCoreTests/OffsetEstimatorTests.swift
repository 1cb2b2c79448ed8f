import CoplayCore
import Testing

@Suite struct OffsetEstimatorTests {
    let settings = Settings()

    /// A reply as a peer whose clock is `offsetMillis` ahead would send, with the given one-way delays.
    func sample(
        offsetMillis: Double, forwardMicros: Int64, backwardMicros: Int64, holdMicros: Int64 = 10,
        sentAtMillis: Double = 0,
        measuredRoundTripMicros: Int64? = nil
    ) -> Result<OffsetSample, OffsetSample.Rejection> {
        let sent = at(sentAtMillis)
        let t2 = sent.wall.unixNanos + forwardMicros * 1000 + Int64(offsetMillis * 1_000_000)
        let t3 = t2 + holdMicros * 1000
        let reply = ClockProbeReply(
            token: 1, originWall: sent.wall, receiveWall: WallInstant(unixNanos: t2),
            transmitWall: WallInstant(unixNanos: t3))
        let received =
            sent.monotonic + .microseconds(measuredRoundTripMicros ?? (forwardMicros + holdMicros + backwardMicros))
        return OffsetSample.measure(reply: reply, sentAt: sent.monotonic, receivedAt: received, timeout: .seconds(1))
    }

    @Test func symmetricPath_givesExactOffsetAndRoundTripDelay() throws {
        let result = try sample(offsetMillis: 500, forwardMicros: 40, backwardMicros: 40).get()
        #expect(result.offsetNanos == 500_000_000)
        #expect(result.delayNanos == 80_000)
    }

    @Test func asymmetricPath_errsByHalfTheAsymmetry() throws {
        let result = try sample(offsetMillis: -250, forwardMicros: 100, backwardMicros: 20).get()
        #expect(result.offsetNanos == -250_000_000 + 40_000)
        #expect(result.delayNanos == 120_000)
    }

    @Test func replyHeldLongerThanTheRoundTrip_isRejected() {
        #expect(throws: OffsetSample.Rejection.implausibleHoldTime) {
            try sample(
                offsetMillis: 0, forwardMicros: 10, backwardMicros: 10, holdMicros: 400, measuredRoundTripMicros: 100
            ).get()
        }
    }

    @Test func roundTripBeyondTimeout_isRejected() {
        #expect(throws: OffsetSample.Rejection.implausibleRoundTrip) {
            try sample(offsetMillis: 0, forwardMicros: 600_000, backwardMicros: 600_000).get()
        }
    }

    @Test func estimator_trustsTheMinimumDelaySampleOfItsWindow() {
        var estimator = OffsetEstimator(settings: settings)
        let delays: [Int64] = [900, 300, 50, 700, 400]
        for (index, delay) in delays.enumerated() {
            // The low-delay sample carries the true offset 1 ms; the others are off by their delay.
            let offset: Int64 = 1_000_000 + (delay == 50 ? 0 : delay * 1000 / 2)
            estimator.add(
                OffsetSample(receivedAt: at(Double(index)).monotonic, offsetNanos: offset, delayNanos: delay * 1000))
        }
        let estimate = estimator.estimate(at: at(5).monotonic)
        #expect(estimate?.offsetNanos == 1_000_000)
        #expect(estimate?.delayNanos == 50_000)
        #expect(estimate?.sampleCount == 5)
        // Its error bound: half that round trip, plus 15 ppm of the 3 ms since (no drift yet).
        #expect(estimate?.errorNanos == 25_045)
        // A retry's late sample (a round trip of 40 ms on the air) does not move the estimate.
        estimator.add(OffsetSample(receivedAt: at(6).monotonic, offsetNanos: 21_000_000, delayNanos: 40_000_000))
        #expect(estimator.estimate(at: at(6).monotonic)?.offsetNanos == 1_000_000)
    }

    @Test func estimator_learnsDriftAndCarriesTheOffsetForward() throws {
        var estimator = OffsetEstimator(settings: settings)
        // The peer's clock runs 20 ppm fast: 20 µs more offset every second.
        for second in 0..<10 {
            let offset = 3_000_000 + Int64(second) * 20_000
            estimator.add(
                OffsetSample(receivedAt: at(Double(second) * 1000).monotonic, offsetNanos: offset, delayNanos: 60_000))
        }
        #expect(abs(estimator.driftPPM() - 20) < 0.01)
        // Ten seconds after the last sample, the offset has moved by 200 µs more.
        let later = try #require(estimator.estimate(at: at(19_000).monotonic))
        #expect(abs(later.offsetNanos - (3_000_000 + 19 * 20_000)) < 1_000)
    }

    @Test func estimator_reportsNoDriftBeforeTheMinimumSpan() {
        var estimator = OffsetEstimator(settings: settings)
        for index in 0..<8 {
            estimator.add(
                OffsetSample(
                    receivedAt: at(Double(index) * 4).monotonic, offsetNanos: Int64(index) * 1000, delayNanos: 50_000))
        }
        #expect(estimator.driftPPM() == 0)
    }

    @Test func estimator_keepsABoundedHistory() {
        var estimator = OffsetEstimator(settings: settings)
        for index in 0..<1000 {
            estimator.add(OffsetSample(receivedAt: at(Double(index)).monotonic, offsetNanos: 0, delayNanos: 50_000))
        }
        #expect(estimator.sampleCount == settings.offsetSamplesMax)
    }

    @Test func driftBeyondTheBelievableLimit_isClamped() {
        var estimator = OffsetEstimator(settings: settings)
        for second in 0..<10 {
            estimator.add(
                OffsetSample(
                    receivedAt: at(Double(second) * 1000).monotonic, offsetNanos: Int64(second) * 600_000,
                    delayNanos: 50_000))
        }
        #expect(estimator.driftPPM() == settings.driftMaxPPM)
        #expect(estimator.stepsDetected == 0)
    }

    @Test func peerClockStep_restartsTheHistoryFromTheNewOffset() throws {
        var estimator = OffsetEstimator(settings: settings)
        for second in 0..<6 {
            estimator.add(
                OffsetSample(
                    receivedAt: at(Double(second) * 1000).monotonic, offsetNanos: 1_000_000, delayNanos: 50_000))
        }
        // The peer's clock jumps 50 ms (an NTP step): the old line is useless.
        estimator.add(OffsetSample(receivedAt: at(6000).monotonic, offsetNanos: 51_000_000, delayNanos: 50_000))
        #expect(estimator.stepsDetected == 1)
        #expect(estimator.sampleCount == 1)
        #expect(try #require(estimator.estimate(at: at(6500).monotonic)).offsetNanos == 51_000_000)
    }
}
