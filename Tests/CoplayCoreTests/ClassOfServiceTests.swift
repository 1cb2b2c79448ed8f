import Testing

@testable import CoplayCore

/// What a shell marks for the faster class of service (`Payload.isTimeCritical`): a command as its
/// issuer sends it, and its copies, a coordinated start's readiness and the end, and nothing
/// routine, so that on Wi-Fi a pause does not queue behind a heartbeat or a probe held by
/// retries (MEASUREMENTS.md, the air pause).
@Suite struct ClassOfServiceTests {
    private let bobHello = Payload.hello(Announcement(unicastPort: bobEndpoint.port, name: "bob"))

    /// The datagrams of `outputs` as (expedited, the type byte the shell sends).
    private func sent(_ outputs: [Instance.Output]) -> [(expedited: Bool, type: UInt8?)] {
        outputs.compactMap {
            guard case .datagram(let bytes, _, let expedited) = $0 else { return nil }
            // The type byte follows the magic and the version.
            let at = WireFormat.magic.count + 1
            return (expedited, bytes.count > at ? bytes[at] : nil)
        }
    }

    @Test func aPauseAndItsCopiesAreExpedited_heartbeatsProbesAndRepairsAreNot() throws {
        var alice = makeInstance()
        _ = alice.outputs(alice.start(now: at(0)), now: at(0))
        _ = alice.onDatagram(
            bytes(bobHello, from: bob), from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true)
        _ = alice.outputs(
            alice.onCommand(
                .share(Activity(url: "u", itemID: "movie"), durationSeconds: 600, bufferSeconds: 0), now: at(2)),
            now: at(2))

        let pause = sent(alice.outputs(alice.onCommand(.pause, now: at(3)), now: at(3)))
        #expect(!pause.isEmpty && pause.allSatisfy(\.expedited), "the pause as pressed: \(pause)")
        // Its copies (Settings.commandCopyOffsets: 20 ms on) and the routine traffic of 3 s.
        var later: [(expedited: Bool, type: UInt8?)] = []
        for millis in stride(from: 4.0, through: 3_000, by: 5) {
            later += sent(alice.outputs(alice.onTick(now: at(millis)), now: at(millis)))
        }
        let commandType = MessageType.command.rawValue
        let copies = later.filter { $0.expedited }
        #expect(copies.count >= 4, "the pause's copies go expedited too")
        #expect(copies.allSatisfy { $0.type == commandType }, "nothing but the command is expedited: \(copies)")
        #expect(later.contains { !$0.expedited }, "the heartbeats and probes go, unmarked")

        #expect(Payload.command(try #require(anyEnvelope()), isRepair: false).isTimeCritical)
        #expect(!Payload.command(try #require(anyEnvelope()), isRepair: true).isTimeCritical, "a repair answers a loss")
        #expect(Payload.ready(trigger: Dot(origin: bob, counter: 1)).isTimeCritical, "a coordinated start's readiness")
        #expect(!bobHeartbeat.isTimeCritical)
    }

    private func anyEnvelope() -> CommandEnvelope? {
        CommandEnvelope(
            dot: Dot(origin: bob, counter: 1), lamport: 1, dependencies: VectorClock(),
            command: Command(item: "movie", operation: .pause(position: 1, at: at(3).wall)))
    }
}
