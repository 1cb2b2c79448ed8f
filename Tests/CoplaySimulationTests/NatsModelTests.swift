import CoplaySimulation
import Testing

/// The simulated NATS cluster on its own: what it holds a frame behind, and what it does not.
@Suite struct NatsModelTests {
    /// Two servers 20 ms apart. Node 0 (server 0) publishes to node 2 (server 1); a millisecond
    /// later node 1, on node 2's own server, publishes to it too. The second frame reaches that
    /// server 20 ms before the first and is not held behind it, at the server or on node 2's
    /// connection: nats-server forwards what reaches it in the order it reaches it. (The model
    /// once queued frames in the order they were published, which put node 2's neighbour
    /// 20 ms away from it, and made its clock's estimate milliseconds off.)
    @Test func aFrameFromTheSameServer_isNotHeldBehindOneStillOnTheRoute() throws {
        var model = NatsModel(siteOfServer: [0, 1], seed: 3)
        model.connect(node: 0, server: 0)
        for node in [1, 2] { model.connect(node: node, server: 1) }
        model.subscribe(node: 2, to: ["two"])
        let far = try #require(model.publish(from: 0, subject: "two", bytes: 100, at: 0).first)
        let near = try #require(model.publish(from: 1, subject: "two", bytes: 100, at: 1_000_000).first)
        #expect(far.at >= 20_000_000, "the far frame crosses the route")
        #expect(near.at < 5_000_000, "the near one arrived at \(near.at) ns, behind the route")
        // And what entered a connection first still leaves it first: a frame published after the
        // far one has reached node 2's server is delivered after it.
        let after = try #require(model.publish(from: 1, subject: "two", bytes: 100, at: far.at - 100_000).first)
        #expect(after.at >= far.at)
    }

    /// A fan-out to 1,000 subscribers holds the last of them 1,000 copies behind the first, and a
    /// frame that reaches the server meanwhile waits for them; one that reaches it before the
    /// fan-out's message does is not held behind the fan-out.
    @Test func aServersFanOut_holdsWhatArrivesDuringIt_only() throws {
        var model = NatsModel(siteOfServer: [0, 1], seed: 4)
        model.connect(node: 0, server: 0)
        for node in 1...1_001 { model.connect(node: node, server: 1) }
        for node in 1...1_000 { model.subscribe(node: node, to: ["all"]) }
        model.subscribe(node: 1_001, to: ["own"])
        let fanOut = model.publish(from: 0, subject: "all", bytes: 100, at: 0).map(\.at)
        let spread = try #require(fanOut.max()) - (try #require(fanOut.min()))
        #expect(spread >= 1_000 * 2_000 - 2_000, "1,000 copies at 2 µs each: \(spread) ns")
        let before = try #require(model.publish(from: 1_000, subject: "own", bytes: 100, at: 10_000_000).first)
        #expect(before.at < 12_000_000, "it reached the server 10 ms before the fan-out's message")
        let during = try #require(model.publish(from: 1_000, subject: "own", bytes: 100, at: 20_500_000).first)
        #expect(during.at >= 20_000_000 + 1_000 * 2_000, "it waits for the copies being sent")
    }
}
