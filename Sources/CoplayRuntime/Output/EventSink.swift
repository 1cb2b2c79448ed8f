import CoplayCore

/// Where an agent's events and diagnostics go: standard output and error (or the embedding
/// closure, `coplay demo`), and the control socket (`--control`): a client's reply while its
/// line is handled, and every follower. Used only on the shell's event loop.
final class EventSink {
    private let mode: ShellMode
    private let formatter: EventFormatter
    private let controlFormatter: EventFormatter
    let control: ControlServer?
    /// While a control client's line is handled: that client, and the lines of its reply so far.
    private var reply: (client: Int, lines: [String])?

    init(mode: ShellMode, json: Bool, clock: AgentClock, control: ControlServer?) {
        self.mode = mode
        formatter = EventFormatter(json: json, clock: clock)
        controlFormatter = EventFormatter(json: true, clock: clock)
        self.control = control
    }

    /// Whether anyone reads the control socket's lines now.
    private var controlListens: Bool { control.map { reply != nil || $0.hasFollowers } ?? false }

    func emit(_ event: Event, wire: EventFormatter.WireStatistics) {
        let now = AgentClock.trueUnixNanosNow()
        switch mode {
        case .standardStreams:
            for line in formatter.lines(for: event, wire: wire, atUnixNanos: now) { StandardStreams.writeOutput(line) }
        case .embedded(let events):
            events(event, now)
        }
        guard controlListens else { return }
        for line in controlFormatter.lines(for: event, wire: wire, atUnixNanos: now) { toControl(line) }
    }

    func diagnose(_ text: String) {
        if case .standardStreams = mode { StandardStreams.writeError("coplay: \(text)") }
        guard controlListens else { return }
        toControl(
            JSONValue.object([
                ("event", .string("diagnostic")), ("message", .string(text)),
                ("atUnixNanos", .int(AgentClock.trueUnixNanosNow())),
            ]).serialized)
    }

    /// One line from a control client: `follow` (answered here), or a command, which `handle`
    /// runs as if typed; its events and diagnostics go back to that client, then a `done` line.
    func controlLine<Status>(_ line: String, from client: Int, handle: (String) -> Status?) -> Status? {
        guard let control else { return nil }
        defer { control.handled(by: client) }
        let done = JSONValue.object([
            ("event", .string("done")), ("atUnixNanos", .int(AgentClock.trueUnixNanosNow())),
        ]).serialized
        if line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }) == ["follow"] {
            control.follow(client)
            control.reply(to: client, [done])
            return nil
        }
        reply = (client, [])
        let status = handle(line)
        control.reply(to: client, (reply?.lines ?? []) + [done])
        reply = nil
        return status
    }

    /// A line for the control socket: into the reply being made, and to every follower.
    private func toControl(_ line: String) {
        guard let control else { return }
        reply?.lines.append(line)
        control.broadcast(line, except: reply?.client)
    }
}
