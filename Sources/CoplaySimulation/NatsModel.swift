import CoplayCore
import Foundation

/// A NATS cluster as the relay's frames meet it (`--relay`), for the seeded simulation: servers
/// at sites, each node connected to one server, subjects with subscribers, and the three places
/// a frame waits on its way:
/// - the connection from the publisher to its server, and from a server to each subscriber:
///   `clientHop` plus exponential jitter of mean `clientJitterMean`, in order on each connection
///   (TCP);
/// - the route between two servers, once per message and server with interest (nats-server
///   forwards a message over a route once, whatever the number of subscribers behind it):
///   `routeSameSite`, or `routeBetweenSites` between sites, in order on each route;
/// - the server's fan-out: each copy it delivers takes `perDelivery` of its time, one copy after
///   another, so a subject with a thousand subscribers holds the last of them a thousand copies
///   behind the first.
///
/// No echo: a publisher never receives its own message (the agent's CONNECT says `echo: false`).
/// Seeded: the same seed gives the same delays.
public struct NatsModel: Sendable {
    public struct Parameters: Sendable {
        public var clientHop: Int64 = 200_000
        public var clientJitterMean: Int64 = 100_000
        public var routeSameSite: Int64 = 100_000
        public var routeBetweenSites: Int64 = 20_000_000
        public var perDelivery: Int64 = 2_000
        public init() {}
    }

    public let parameters: Parameters
    /// The site of each server (servers 0 to count - 1).
    public let siteOfServer: [Int]
    private var random: SplitMix64
    private var serverOfNode: [Int: Int] = [:]
    private var subjectsOfNode: [Int: [String]] = [:]
    private var subscribers: [String: Set<Int>] = [:]
    /// When each server's fan-out is next free.
    private var serverFree: [Int64]
    /// When the last frame on each connection (node, both ways) and route (server pair) arrives.
    private var toServerFree: [Int: Int64] = [:]
    private var toNodeFree: [Int: Int64] = [:]
    private var routeFree: [Int: Int64] = [:]

    /// Messages published, copies delivered to subscribers, and messages carried over a route.
    public private(set) var published = 0
    public private(set) var deliveries = 0
    public private(set) var routeCrossings = 0
    /// Bytes published by nodes and delivered to subscribers (the frames' own bytes).
    public private(set) var bytesPublished = 0
    public private(set) var bytesDelivered = 0
    /// The same, by node: what each one published, and what was delivered to it.
    public private(set) var bytesPublishedBy: [Int: Int] = [:]
    public private(set) var bytesDeliveredTo: [Int: Int] = [:]

    /// A cluster of `siteOfServer.count` servers, server `i` at site `siteOfServer[i]`.
    public init(siteOfServer: [Int], parameters: Parameters = Parameters(), seed: UInt64) {
        precondition(!siteOfServer.isEmpty, "a cluster has a server")
        self.siteOfServer = siteOfServer
        self.parameters = parameters
        serverFree = Array(repeating: 0, count: siteOfServer.count)
        random = SplitMix64(seed: seed)
    }

    public var servers: Int { siteOfServer.count }

    /// Node `node` connects to `server` (replacing a connection it had, and its subscriptions).
    public mutating func connect(node: Int, server: Int) {
        precondition(siteOfServer.indices.contains(server), "no server \(server)")
        disconnect(node: node)
        serverOfNode[node] = server
    }

    /// The node's subscriptions are now `subjects` (its `relaySubscriptions`).
    public mutating func subscribe(node: Int, to subjects: [String]) {
        for subject in subjectsOfNode[node] ?? [] { subscribers[subject]?.remove(node) }
        subjectsOfNode[node] = subjects
        for subject in subjects { subscribers[subject, default: []].insert(node) }
    }

    /// The node's connection is gone (a crash): its subscriptions with it.
    public mutating func disconnect(node: Int) {
        subscribe(node: node, to: [])
        subjectsOfNode[node] = nil
        serverOfNode[node] = nil
    }

    /// When a frame of `bytes` bytes that `node` publishes on `subject` at `now` (true
    /// nanoseconds) reaches each subscriber; nothing when the node is not connected.
    public mutating func publish(from node: Int, subject: String, bytes: Int, at now: Int64)
        -> [(node: Int, at: Int64)]
    {
        guard let origin = serverOfNode[node] else { return [] }
        published += 1
        bytesPublished += bytes
        bytesPublishedBy[node, default: 0] += bytes
        let atOrigin = inOrder(&toServerFree, node, now + clientDelay())
        var byServer: [Int: [Int]] = [:]
        for subscriber in subscribers[subject] ?? [] where subscriber != node {
            guard let server = serverOfNode[subscriber] else { continue }
            byServer[server, default: []].append(subscriber)
        }
        var arrivals: [(node: Int, at: Int64)] = []
        for server in byServer.keys.sorted() {
            var atServer = atOrigin
            if server != origin {
                routeCrossings += 1
                let oneWay =
                    siteOfServer[server] == siteOfServer[origin]
                    ? parameters.routeSameSite : parameters.routeBetweenSites
                atServer = inOrder(&routeFree, origin * 65_536 + server, atOrigin + oneWay)
            }
            var sent = max(atServer, serverFree[server])
            for subscriber in byServer[server, default: []].sorted() {
                sent += parameters.perDelivery
                arrivals.append((subscriber, inOrder(&toNodeFree, subscriber, sent + clientDelay())))
            }
            serverFree[server] = sent
        }
        deliveries += arrivals.count
        bytesDelivered += arrivals.count * bytes
        for arrival in arrivals { bytesDeliveredTo[arrival.node, default: 0] += bytes }
        return arrivals
    }

    private mutating func clientDelay() -> Int64 {
        parameters.clientHop + Int64(-log(1 - random.nextUnit()) * Double(parameters.clientJitterMean))
    }

    /// `at`, or later: nothing on a connection or route overtakes what went before it.
    private func inOrder(_ free: inout [Int: Int64], _ key: Int, _ at: Int64) -> Int64 {
        let arrival = max(at, free[key] ?? 0)
        free[key] = arrival
        return arrival
    }
}
