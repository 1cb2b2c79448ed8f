import Testing

@testable import CoplayCore

/// The one check of a player's values (every shell's: the socket protocol, mpv's driver, the
/// page's module): what is out of range is refused whole, with what it needs.
@Suite struct PlayerReportCheckTests {
    @Test func valuesOutOfRange_areRefused_andThoseWithin_pass() {
        let at = WallInstant(unixNanos: 1_800_000_000_000_000_000)
        let good: [PlayerReport] = [
            .ready(position: 0), .stalled(position: 4.2e9), .ended(position: 12.5),
            .sample(position: 1, rate: 0, at: at), .sample(position: 1, rate: 64, at: at),
            .userAction(.play(rate: 0.01)), .userAction(.seek(position: 30)), .userAction(.pause),
            .liveWindow(LiveWindow(dates: 1.7e9...1.7e9 + 30, targetDuration: 6)),
            .loadFailed(String(repeating: "x", count: 512), problem: .format),
        ]
        for report in good { #expect(report.refusal() == nil, "\(report)") }
        let bad: [(PlayerReport, String)] = [
            (.ready(position: .nan), "position"), (.stalled(position: -1), "position"),
            (.ended(position: .infinity), "position"), (.stallEnded(position: 4.3e9), "position"),
            (.sample(position: 1, rate: -0.5, at: at), "rate"), (.sample(position: 1, rate: .nan, at: at), "rate"),
            (.sample(position: 1, rate: 1, at: WallInstant(unixNanos: -1)), "instant"),
            (.userAction(.play(rate: 0)), "rate"), (.userAction(.play(rate: 65)), "rate"),
            (.userAction(.seek(position: -0.001)), "position"),
            (.liveWindow(LiveWindow(dates: 1...2, targetDuration: 0)), "targetDuration"),
            (.liveWindow(LiveWindow(dates: 1...5e9, targetDuration: 6)), "program dates"),
            (.failed(String(repeating: "x", count: 513)), "512 bytes"),
        ]
        for (report, words) in bad {
            let refusal = report.refusal()
            #expect(refusal?.contains(words) == true, "\(report): \(refusal ?? "passed")")
        }
    }
}
