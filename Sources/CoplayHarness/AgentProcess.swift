import Foundation
import Glibc

/// One JSON event line printed by an agent. Parsed when a field is first asked for, not when
/// read: the harness reads every agent's events while the group it measures forms, on the same
/// cores, and parsing each as it came had been most of the harness's CPU then.
public struct AgentEvent: @unchecked Sendable, CustomStringConvertible {
    public let line: String
    private let parsed = Parsed()

    init(line: String) { self.line = line }

    public var fields: [String: Any] { parsed.fields(of: line) }
    /// Read from the line's start without parsing it (every event line begins `{"event":"NAME"`).
    public var name: String {
        let prefix = #"{"event":""#
        guard line.hasPrefix(prefix) else { return fields["event"] as? String ?? "" }
        let rest = line.utf8.dropFirst(prefix.utf8.count)
        guard let end = rest.firstIndex(of: UInt8(ascii: "\"")) else { return "" }
        return String(decoding: rest[..<end], as: UTF8.self)
    }
    /// The true time the agent printed it.
    public var atUnixNanos: Int64 { (fields["atUnixNanos"] as? NSNumber)?.int64Value ?? 0 }
    public subscript(key: String) -> Any? { fields[key] }
    /// A field of the nested `peer` object of peer events.
    public func peer(_ key: String) -> Any? { (fields["peer"] as? [String: Any])?[key] }
    public var description: String { line }

    /// The parsed object, made once, by whichever thread first asks.
    private final class Parsed: @unchecked Sendable {
        private let lock = NSLock()
        private var fields: [String: Any]?

        func fields(of line: String) -> [String: Any] {
            lock.lock()
            defer { lock.unlock() }
            if let fields { return fields }
            let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
            fields = object
            return object
        }
    }
}

/// A `coplay` process started with `--json`, optionally inside a network namespace, whose
/// standard input the caller writes and whose events it reads. It is killed when released.
public final class AgentProcess: @unchecked Sendable {
    public let name: String
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private let condition = NSCondition()
    private var events: [AgentEvent] = []
    private var stderrLines: [String] = []
    private var outputEnded = false
    private var errorsEnded = false
    public static let eventsMax = 100_000
    /// Events one per command applied: past `eventsMax` these are no longer kept, so that an agent
    /// driven through a long history still answers `status` (up to twice `eventsMax` in all).
    static let perCommandEvents: Set<String> = [
        "playing", "paused", "waiting", "rate-changed", "time-jumped", "command-ignored",
    ]

    /// Starts `executable [SUBCOMMAND…] --json --name NAME` plus `arguments` (`party FILE`,
    /// `join LINK`: a subcommand that runs an agent); inside `namespace` via `ip netns exec`.
    public init(
        executable: String, name: String, subcommand: [String] = [], arguments: [String], namespace: String? = nil,
        environment: [String: String] = [:], directory: URL? = nil
    ) throws {
        self.name = name
        let agentArguments = subcommand + ["--json", "--name", name] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.currentDirectoryURL = directory
        if let namespace {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", namespace, executable] + agentArguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = agentArguments
        }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        startReading(output.fileHandleForReading, isOutput: true)
        startReading(errors.fileHandleForReading, isOutput: false)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Writes one command line to the agent's standard input.
    public func send(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Closes standard input (the agent leaves and exits).
    public func closeInput() { try? input.fileHandleForWriting.close() }

    public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for the process to exit; nil if it is still running after `timeout`. Then, for up
    /// to half a second, for its output and diagnostics to be read to their end: the exit can be
    /// seen before the reading threads took its last lines (a test that read `diagnostics` at
    /// once found them empty, now and then). A child it started may hold the pipes open longer.
    public func waitForExit(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        var reaped: Int32?
        while process.isRunning {
            reaped = Self.reapIfExited(process.processIdentifier)
            if reaped != nil { break }
            if ContinuousClock.now > deadline { return nil }
            usleep(5_000)
        }
        let drained = Date().addingTimeInterval(0.5)
        condition.lock()
        while !(outputEnded && errorsEnded), condition.wait(until: drained) {}
        condition.unlock()
        if let reaped { return reaped }
        while process.isRunning, ContinuousClock.now <= deadline { usleep(1_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// The exit status of a child that exited and that Foundation's `Process` has not reaped:
    /// seen in a test that also starts Kodi, Xvfb and PulseAudio with `Process`, where every
    /// agent's exit stayed a zombie (state Z) that `waitpid` reaped at once. Nil while it runs.
    static func reapIfExited(_ pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"), stat[close...].hasPrefix(") Z")
        else { return nil }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        // WIFEXITED: its status; killed by a signal: 128 + the signal, as a shell says.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + status & 0x7F
    }

    /// Every event so far.
    /// Sends `signal` to a player's process `pid` and waits for this agent to say something that
    /// contains `text` (within `timeout`): how long after the signal it said so, or nil.
    public func says(_ text: String, after signal: Int32, to pid: Int32, within timeout: Duration) -> Duration? {
        kill(pid, signal)
        let sent = ContinuousClock.now
        guard waitForDiagnostic(timeout: timeout, where: { $0.contains(text) }) else { return nil }
        return ContinuousClock.now - sent
    }

    /// The group commands this agent saw from its event number `index` on (up to `end`) that a
    /// player's own trouble could have made: any pause, seek or wait, and a start by `peer`. A
    /// player that freezes, crashes or comes back must make none.
    public func commandsSeen(since index: Int, until end: Int? = nil, startedBy peer: String) -> [AgentEvent] {
        let events = allEvents
        let last = min(end ?? events.count, events.count)
        return events[min(index, last)..<last].filter {
            ["paused", "time-jumped", "waiting"].contains($0.name) || ($0.name == "playing" && $0.line.contains(peer))
        }
    }

    public var allEvents: [AgentEvent] {
        condition.lock()
        defer { condition.unlock() }
        return events
    }

    public var diagnostics: [String] {
        condition.lock()
        defer { condition.unlock() }
        return stderrLines
    }

    /// Whether a diagnostic line satisfying `predicate` arrives within `timeout`. Standard error
    /// is read by a thread of its own, so a line the agent wrote before it answered `status` can
    /// still be on its way when the answer is in: a test reads a diagnostic by waiting for it (the
    /// own-copy test once read `diagnostics` at once and missed the line on a busy machine).
    public func waitForDiagnostic(timeout: Duration, where predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(
            Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        var checked = 0
        while true {
            while checked < stderrLines.count {
                if predicate(stderrLines[checked]) { return true }
                checked += 1
            }
            if errorsEnded || !condition.wait(until: deadline) { return false }
        }
    }

    /// The first event, at or after index `from`, that satisfies `predicate`, waiting up to
    /// `timeout`. The predicate runs under this agent's lock, once per event: it must not call
    /// back into the agent.
    public func waitForEvent(from: Int = 0, timeout: Duration, where predicate: (AgentEvent) -> Bool) -> AgentEvent? {
        let deadline = Date().addingTimeInterval(
            Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        var checked = from
        while true {
            while checked < events.count {
                if predicate(events[checked]) { return events[checked] }
                checked += 1
            }
            if outputEnded || !condition.wait(until: deadline) { return nil }
        }
    }

    /// Sends `status` and returns the status event it answers with.
    public func status(timeout: Duration = .seconds(2)) -> AgentEvent? {
        let mark = allEvents.count
        send("status")
        return waitForEvent(from: mark, timeout: timeout) { $0.name == "status" }
    }

    /// Sends `peers` and returns the answer.
    public func peers(timeout: Duration = .seconds(2)) -> [[String: Any]]? {
        let mark = allEvents.count
        send("peers")
        return waitForEvent(from: mark, timeout: timeout) { $0.name == "peers" }?["peers"] as? [[String: Any]]
    }

    /// One thread per pipe. A chunk's lines are split outside the lock, then appended
    /// under it with one broadcast: the waiters' predicates run once per chunk, not per line. In a
    /// 64-agent `scale` run, reading line by line under the lock had been a tenth of all the CPU
    /// spent (`perf`), on the cores the agents it measures run on.
    private func startReading(_ handle: FileHandle, isOutput: Bool) {
        let thread = Thread { [weak self] in
            var pending: [UInt8] = []
            while true {
                let chunk = handle.availableData
                guard let self else { return }
                if chunk.isEmpty {
                    self.condition.lock()
                    if isOutput { self.outputEnded = true } else { self.errorsEnded = true }
                    self.condition.broadcast()
                    self.condition.unlock()
                    return
                }
                pending.append(contentsOf: chunk)
                guard let last = pending.lastIndex(of: UInt8(ascii: "\n")) else { continue }
                let lines = pending[..<last].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
                    .map { String(decoding: $0, as: UTF8.self) }
                pending.removeSubrange(...last)
                // Every event is one JSON object on a line of its own.
                let arrived = isOutput ? lines.filter { $0.hasPrefix("{") }.map(AgentEvent.init(line:)) : []
                self.condition.lock()
                if isOutput {
                    for event in arrived
                    where self.events.count < Self.eventsMax
                        || (self.events.count < 2 * Self.eventsMax && !Self.perCommandEvents.contains(event.name))
                    {
                        self.events.append(event)
                    }
                } else {
                    self.stderrLines.append(contentsOf: lines.prefix(max(0, Self.eventsMax - self.stderrLines.count)))
                }
                self.condition.broadcast()
                self.condition.unlock()
            }
        }
        thread.start()
    }
}
