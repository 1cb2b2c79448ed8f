import CoplayHarness
import Foundation
import Glibc
import Synchronization
import Testing

/// 32 real agents started at once in one network namespace of the test's own: the group forms,
/// a pause reaches every agent, an agent stopped for 10 s (SIGSTOP, SIGCONT) wakes without
/// declaring any peer gone and is listed by all again, and idle traffic per agent stays bounded.
///
/// It takes about 30 s and 32 processes, so it is its own tier: `.ci/run` runs it after the
/// fast tier with `COPLAY_LARGE_GROUP=1 swift test --filter LargeGroupLANTests`. With
/// `COPLAY_LARGE_GROUP_AGENTS=64` (18 to 128) it starts that many, best in release
/// (`swift test -c release`).
@Suite(.serialized, .onALane) struct LargeGroupLANTests {
    static let environment = ProcessInfo.processInfo.environment
    static let enabled = isRoot && environment["COPLAY_LARGE_GROUP"] == "1"
    /// nil when `COPLAY_LARGE_GROUP_AGENTS` is set to anything but a count from 18 to 128.
    static let agentCount: Int? =
        environment["COPLAY_LARGE_GROUP_AGENTS"].map { Int($0).flatMap { (18...128).contains($0) ? $0 : nil } } ?? 32

    @Test(.enabled(if: enabled, "needs root and COPLAY_LARGE_GROUP=1 (a tier of its own)"))
    func agentsStartedAtOnce_formPauseTogetherStayQuietAndForgiveAStall() throws {
        let namespace = "\(newLANPrefix())-big"
        try Locations.run("/usr/sbin/ip", ["netns", "add", namespace])
        defer { _ = try? Locations.run("/usr/sbin/ip", ["netns", "del", namespace]) }
        try Locations.run("/usr/sbin/ip", ["netns", "exec", namespace, "ip", "link", "set", "lo", "up"])
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(18))", "--session", "big"]
        let count = try #require(Self.agentCount, "COPLAY_LARGE_GROUP_AGENTS: a count from 18 to 128")
        // Started at once, from several threads.
        let slots = Mutex<[AgentProcess?]>(Array(repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: count) { index in
            let agent = try? AgentProcess(
                executable: coplay, name: "g\(index)", arguments: common, namespace: namespace)
            slots.withLock { $0[index] = agent }
        }
        let agents = slots.withLock { $0 }.compactMap { $0 }
        try #require(agents.count == count, "all \(count) agents started")
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents where agent.waitForExit(timeout: .seconds(5)) == nil { agent.signal(SIGKILL) }
        }

        // All see all.
        let formed = ContinuousClock.now + .seconds(10)
        for agent in agents {
            var names: Set<String> = []
            let whole = agent.waitForEvent(timeout: max(.zero, formed - ContinuousClock.now)) { event in
                if event.name == "peer-joined", let name = event.peer("name") as? String { names.insert(name) }
                return names.count == count - 1
            }
            #expect(whole != nil, "\(agent.name) saw \(names.count) of \(count - 1) within 10 s")
        }

        // A pause reaches everyone.
        agents[0].send("share https://example.com/big.mp4 id=big")
        usleep(500_000)
        agents[5].send("play-now")
        usleep(700_000)
        let marks = agents.map { $0.allEvents.count }
        agents[9].send("pause")
        let pauseDeadline = ContinuousClock.now + .seconds(3)
        for (index, agent) in agents.enumerated() {
            let paused = agent.waitForEvent(
                from: marks[index], timeout: max(.zero, pauseDeadline - ContinuousClock.now)
            ) {
                $0.name == "paused"
            }
            #expect(paused != nil, "\(agent.name) did not pause within 3 s")
        }

        // A stall: 10 s stopped, then woken.
        let sleeper = agents[17]
        let left = sleeper.stall(seconds: 10, settle: 3)
        #expect(left.isEmpty, "the woken agent declared \(left.count) peers gone")
        #expect(sleeper.peers()?.count == count - 1, "the woken agent lists every peer")
        let others = agents.filter { $0 !== sleeper }
        let missing = others.filter { agent in agent.peers()?.contains { $0["name"] as? String == sleeper.name } != true
        }
        #expect(missing.isEmpty, "listing the woken agent 3 s later: all but \(missing.map(\.name))")

        // Idle traffic per agent, from its own counters, over 4 s, past the full-rate heartbeats
        // of the first seconds: among 32, heartbeats every second from each of 31 peers (about 32
        // a second whatever the size), and clock probes and replies, at most 16 of each a second
        // while the warm-ups last (about 20 s among 32), 1.5 after. The bound is the simulation's
        // (`ScaleScenario.receivedPerSecondMax`).
        func received(_ agent: AgentProcess) -> Int { agent.counter("datagramsReceived") }
        let before = agents.map(received)
        let from = Date()
        usleep(4_000_000)
        let seconds = Date().timeIntervalSince(from)
        let rates = zip(agents.map(received), before).map { Double($0 - $1) / seconds }
        print(
            "\(count) agents idle: received per agent p50 \(rates.sorted()[count / 2]) /s, max \(rates.max() ?? 0) /s")
        #expect(rates.allSatisfy { $0 > 0 && $0 <= 80 }, "idle receive rates per agent: \(rates)")
    }
}
