import CoplayCore
import Glibc
import Synchronization

/// `coplay demo`: several real agents on loopback, in this process, run a scripted session and
/// print what happened, with the sync error measured from their own status reports.
public enum Demo {
    /// One agent of the demo and what it printed.
    final class Agent: Sendable {
        let name: String
        let shell: AgentShell
        let skewMillis: Int64
        private let log = EventLog()

        init(name: String, skewMillis: Int64, port: UInt16, echo: @escaping @Sendable (String, Event, Int64) -> Void)
            throws
        {
            self.name = name
            self.skewMillis = skewMillis
            var configuration = AgentConfiguration(name: name)
            configuration.interface = "lo"
            configuration.group = Endpoint(address: 0xEFFF_4D01, port: port)
            configuration.sessionName = "demo"
            configuration.clockSkewNanos = skewMillis * 1_000_000
            let log = self.log
            shell = try AgentShell(
                configuration: configuration,
                mode: .embedded(events: { event, at in
                    log.append(event, at: at)
                    echo(name, event, at)
                }))
        }

        var events: [(event: Event, at: Int64)] { log.entries }
        func send(_ line: String) { shell.submit(line) }
    }

    public static func run() async -> Int32 {
        let port = UInt16(42_000 + Int(getpid() % 10_000))
        let started = AgentClock.trueUnixNanosNow()
        let echo: @Sendable (String, Event, Int64) -> Void = { name, event, at in
            guard let line = describe(event) else { return }
            let seconds = Double(at - started) / 1e9
            print("  \(String(format3: seconds).padded(to: 7)) s  \(name.padded(to: 6)) \(line)")
        }
        print(
            "coplay demo: real agents on loopback (group 239.255.77.1:\(port), session \"demo\"), clocks skewed on purpose"
        )
        var agents: [Agent] = []
        var tasks: [Task<Int32, Never>] = []
        func start(_ name: String, skew: Int64) throws -> Agent {
            let agent = try Agent(name: name, skewMillis: skew, port: port, echo: echo)
            agents.append(agent)
            tasks.append(Task { await agent.shell.run() })
            print("  start \(name): clock \(skew >= 0 ? "+" : "")\(skew) ms")
            return agent
        }
        var syncErrors: [Double] = []
        do {
            let alice = try start("alice", skew: 0)
            let bob = try start("bob", skew: 250)
            let carol = try start("carol", skew: -400)
            try await until("everyone sees everyone, with clocks synchronised") {
                await agents.asyncAllSatisfy { agent in
                    agent.events.filter { if case .clockSynced = $0.event { true } else { false } }.count >= 2
                }
            }

            step("alice shares an item (she needs 0.4 s to buffer it; the others need none)")
            alice.send("share https://example.com/bbb.mp4 id=bbb title=\"Big Buck Bunny\" duration=596 buffer=0.4")
            try await until("everyone has the item") {
                await agents.asyncAllSatisfy { await $0.shell.status().report.item == "bbb" }
            }

            step("bob: play — a coordinated start: everyone waits until alice is ready")
            bob.send("play")
            try await until("everyone plays") {
                await agents.asyncAllSatisfy { await $0.shell.status().report.rate == 1 }
            }
            try await pause(0.5)
            syncErrors.append(await reportSync(agents))

            step("carol: seek 120 — everyone seeks, waits for the others, and resumes together")
            carol.send("seek 120")
            try await pause(0.2)
            try await until("everyone plays from 120 s") {
                await agents.asyncAllSatisfy {
                    let s = await $0.shell.status().report
                    return s.rate == 1 && s.positionSeconds >= 120
                }
            }
            try await pause(0.5)
            syncErrors.append(await reportSync(agents))

            step("bob: pause — everyone snaps to bob's media time")
            bob.send("pause")
            try await until("everyone paused") {
                await agents.asyncAllSatisfy { await $0.shell.status().report.rate == 0 }
            }
            await reportPositions(agents)

            step("dave joins late and adopts the group's state")
            let dave = try start("dave", skew: 100)
            try await until("dave has the item, paused where the group is") {
                let status = await dave.shell.status().report
                return status.item == "bbb" && status.rate == 0
            }
            await reportPositions(agents)

            step("concurrent commands: alice says play while carol says play-now 2, at the same moment")
            alice.send("play")
            carol.send("play-now 2")
            try await pause(1.5)
            let states = await agents.asyncMap { await $0.shell.status().report }
            for (agent, state) in zip(agents, states) {
                print(
                    "  \(agent.name.padded(to: 6)) rate \(state.rate), position \(String(format3: state.positionSeconds)) s"
                )
            }
            let rates = Set(states.map(\.rate))
            print(
                "  → every agent resolved them the same way: \(rates.count == 1 ? "yes" : "NO"), rate \(rates.sorted())"
            )
            syncErrors.append(await reportSync(agents))

            step("carol's player stalls for 1.5 s: a stallRecovery suspension until it has caught up")
            carol.send("stall 1.5")
            try await pause(0.1)
            try await until("carol has caught up") { await carol.shell.status().report.suspensions.isEmpty }
            syncErrors.append(await reportSync(agents))

            step("bob suspends himself; alice pauses the group, and bob, suspended, plays on")
            bob.send("suspend userActionRequired")
            try await pause(0.1)
            alice.send("pause")
            try await pause(0.3)
            let suspendedRates = await agents.asyncMap { await $0.shell.status().report.rate }
            print("  rates: " + zip(agents, suspendedRates).map { "\($0.name) \($1)" }.joined(separator: ", "))

            step("bob resumes, proposing 300 s: everyone seeks there, the group's rate (paused) unchanged")
            let id =
                bob.events.compactMap { entry -> UInt32? in
                    if case .suspension(let report) = entry.event, report.began, report.reason == "userActionRequired" {
                        report.id
                    } else {
                        nil
                    }
                }.last ?? 0
            bob.send("resume \(id) at=300")
            try await until("everyone is at 300 s") {
                await agents.asyncAllSatisfy {
                    let s = await $0.shell.status().report
                    return s.rate == 0 && abs(s.positionSeconds - 300) < 0.001
                }
            }
            await reportPositions(agents)

            step("alice: play; dave missed something: what-happened 4 rewinds 4 s and plays at 2x until caught up")
            alice.send("play")
            try await until("everyone plays") {
                await agents.asyncAllSatisfy { await $0.shell.status().report.rate == 1 }
            }
            dave.send("what-happened 4")
            try await pause(0.2)
            try await until("dave has caught up") { await dave.shell.status().report.suspensions.isEmpty }
            syncErrors.append(await reportSync(agents))

            step("messages: alice to everyone, bob to carol only, carol unreliably")
            alice.send("msg popcorn is ready")
            bob.send("msg to=carol \"save me a seat\"")
            carol.send("msg unreliable brb")
            try await pause(0.4)

            step("a queue: bob, carol and alice each add a 1-second episode; next moves the group to the first")
            bob.send("queue add https://example.com/ep1.mp4 id=ep1 title=\"Episode 1\" duration=1")
            try await pause(0.05)
            carol.send("queue add https://example.com/ep2.mp4 id=ep2 title=\"Episode 2\" duration=1")
            try await pause(0.05)
            alice.send("queue add https://example.com/ep3.mp4 id=ep3 title=\"Episode 3\" duration=1")
            try await pause(0.2)
            bob.send("next")
            try await until("everyone is on ep1") {
                await agents.asyncAllSatisfy { await $0.shell.status().report.item == "ep1" }
            }

            step("alice: a half-second interstitial for everyone at 0.5 s of ep1 (an intro in a second player)")
            alice.send("interstitial https://example.com/intro.mp4 duration=0.5 at=0.5")
            try await pause(0.1)

            step("carol: play — the group plays the queue through, waiting together at the interstitial")
            carol.send("play")
            try await until("everyone played ep3 to its end") {
                await agents.asyncAllSatisfy {
                    let s = await $0.shell.status().report
                    return s.item == "ep3" && s.rate == 0 && s.positionSeconds >= 0.999
                }
            }

            step("alice ends the session for everyone")
            alice.send("end the demo is over")
            try await pause(0.3)
        } catch {
            print("demo failed: \(error)")
            for agent in agents { agent.shell.finish() }
            return 1
        }
        for agent in agents { agent.shell.finish() }
        for task in tasks { _ = await task.value }
        let worst = syncErrors.max() ?? .nan
        print(
            "sync error between agents (positions at one true instant, from their status): \(syncErrors.map { String(format3: $0) + " ms" }.joined(separator: ", ")); worst \(String(format3: worst)) ms"
        )
        print("all agents stopped; nothing is left running.")
        return 0
    }

    /// The events an agent printed, shared between its shell and the script.
    final class EventLog: Sendable {
        private let storage = Mutex<[(event: Event, at: Int64)]>([])
        func append(_ event: Event, at: Int64) { storage.withLock { $0.append((event, at)) } }
        var entries: [(event: Event, at: Int64)] { storage.withLock { $0 } }
    }

    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out waiting until \(what)" }
    }

    static func step(_ text: String) { print("\n== \(text)") }

    static func pause(_ seconds: Double) async throws { try await Task.sleep(for: .milliseconds(Int(seconds * 1000))) }

    static func until(_ what: String, timeout: Double = 8, _ condition: () async -> Bool) async throws {
        let deadline = AgentClock.trueUnixNanosNow() + Int64(timeout * 1e9)
        while !(await condition()) {
            guard AgentClock.trueUnixNanosNow() < deadline else { throw Timeout(what: what) }
            try await pause(0.01)
        }
    }

    /// The largest difference between the agents' positions at one true instant, in ms.
    static func reportSync(_ agents: [Agent]) async -> Double {
        let samples = await agents.asyncMap { await $0.shell.status() }
        let instant = samples.map(\.trueUnixNanos).max() ?? 0
        let positions = samples.map {
            $0.report.positionSeconds + $0.report.rate * Double(instant - $0.trueUnixNanos) / 1e9
        }
        let spread = ((positions.max() ?? 0) - (positions.min() ?? 0)) * 1000
        print(
            "  sync: positions at one instant \(positions.map { String(format3: $0) }.joined(separator: " / ")) s → spread \(String(format3: spread)) ms"
        )
        return spread
    }

    static func reportPositions(_ agents: [Agent]) async {
        let states = await agents.asyncMap { await $0.shell.status().report }
        print(
            "  positions: "
                + zip(agents, states).map { "\($0.name) \(String(format3: $1.positionSeconds))" }.joined(
                    separator: ", "))
    }

    /// The events worth a line in the demo's account.
    static func describe(_ event: Event) -> String? {
        let formatter = EventFormatter(json: false, clock: AgentClock())
        switch event {
        case .activityChanged, .activityUnchanged, .proposal, .itemChanged, .itemUnloaded, .playerError, .waiting,
            .playing, .paused,
            .rateChanged,
            .timeJumped, .commandIgnored, .suspension, .session, .commandError, .message, .messageSent,
            .stateAdopted,
            .queueChanged, .interstitial:
            return formatter.lines(for: event, wire: .init(), atUnixNanos: 0).first
        case .peerJoined, .peerLeft, .peerUnresponsive, .peerResponsive, .peerChanged, .clockSynced, .status, .peers,
            .help, .queue:
            return nil
        }
    }
}

extension Array where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var results: [T] = []
        for element in self { results.append(await transform(element)) }
        return results
    }

    func asyncAllSatisfy(_ predicate: (Element) async -> Bool) async -> Bool {
        for element in self where !(await predicate(element)) { return false }
        return true
    }
}
