extension PlayerReport {
    /// What a report's values must be and are not, or nil when they are within what the core
    /// takes. A player's report is hostile until checked, like a datagram: a position or a rate
    /// that is not finite or out of the wire's range, an instant the wire cannot carry, a live
    /// window upside down, a text beyond `Settings.playerErrorBytesMax`. Every shell checks with
    /// this one function (the socket protocol's lines, mpv's driver, the page's module) and
    /// refuses the report whole; the words complete "it needs …".
    public func refusal(settings: Settings = Settings()) -> String? {
        func position(_ value: Double) -> Bool { value.isFinite && value >= 0 && value <= WireFormat.positionMax }
        let positionText = "a position from 0 to 4.2e9"
        switch self {
        case .ready(let value), .stalled(let value), .stallEnded(let value), .ended(let value):
            return position(value) ? nil : positionText
        case .sample(let value, let rate, let at):
            guard position(value) else { return positionText }
            guard rate.isFinite, rate >= 0, rate <= WireFormat.rateMax else { return "a rate from 0 to 64" }
            guard WireFormat.wallNanosRange.contains(at.unixNanos) else {
                return "an instant from 1970 to 2116 (Unix nanoseconds)"
            }
            return nil
        case .liveWindow(let window):
            guard position(window.dates.lowerBound), position(window.dates.upperBound) else {
                return "start <= edge, program dates (seconds since 1970) up to 4.2e9"
            }
            guard window.targetDuration.isFinite, window.targetDuration > 0, window.targetDuration <= 3600 else {
                return "targetDuration, seconds from 0 to 3600"
            }
            return nil
        case .userAction(.play(let rate)):
            return rate.isFinite && rate >= WireFormat.rateMin && rate <= WireFormat.rateMax
                ? nil : "a rate from 0.01 to 64"
        case .userAction(.seek(let value)):
            return position(value) ? nil : positionText
        case .userAction(.pause), .userAction(.next), .userAction(.previous), .copyFound, .anotherEncode:
            return nil
        case .duration(let value):
            return value.isFinite && value > 0 && value <= WireFormat.positionMax
                ? nil : "a duration above 0, up to 4.2e9 seconds"
        case .failed(let text), .loadFailed(let text, _), .interstitialFailed(let text):
            return text.utf8.count <= settings.playerErrorBytesMax
                ? nil : "a text of at most \(settings.playerErrorBytesMax) bytes"
        }
    }
}

extension PlayerReport.UserAction {
    /// The action, if its values are within what a command may carry (`PlayerReport.refusal`).
    public var checked: Self? { PlayerReport.userAction(self).refusal() == nil ? self : nil }
}
