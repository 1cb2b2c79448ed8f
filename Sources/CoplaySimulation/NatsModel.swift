import CoplayCore
import Foundation

/// A NATS cluster as the relay's frames meet it (`--relay`), for the seeded simulation: servers
/// at sites, each node connected to one server, subjects with subscribers, and the three places
/// a frame waits on its way:
/// - the connection from the publisher to its server, and from a server to each subscriber:
///   `clientHop` plus exponential jitter of mean `clientJitterMean`, in order on each connection
///   (TCP: nothing leaves before what entered before it);
/// - the route between two servers, once per message and server with interest (nats-server
///   forwards a message over a route once, whatever the number of subscribers behind it):
///   `routeSameSite`, or `routeBetweenSites` between sites, in order on each route;
/// - the server's fan-out: each copy it delivers takes `perDelivery` of its time, one copy after
///   another, so a subject with a thousand subscribers holds the last of them a thousand copies
///   behind the first.
///
/// A server handles messages in the order they reach it, and a connection carries them in the
/// order they enter it, not in the order they were published: a message published here now is
/// not held behind one published a moment ago at another site that is still on its 20 ms route.
/// (Ordering them by publication put every frame at a server behind the route's, and two
/// clients of one server 20 to 40 ms apart: their clocks' estimates were milliseconds off.)
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
    /// When each server's fan-out is busy.
    private var serverBusy: [BusyTimes]
    /// What is on each connection (node, both ways) and route (server pair).
    private var toServer: [Int: Channel] = [:]
    private var toNode: [Int: Channel] = [:]
    private var routes: [Int: Channel] = [:]

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
        serverBusy = Array(repeating: BusyTimes(), count: siteOfServer.count)
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
        let atOrigin = toServer[node, default: Channel()].pass(entering: now, delay: clientDelay(), now: now)
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
                atServer = routes[origin * 65_536 + server, default: Channel()].pass(
                    entering: atOrigin, delay: oneWay, now: now)
            }
            let receivers = byServer[server, default: []].sorted()
            var sent = serverBusy[server].start(
                at: atServer, lasting: parameters.perDelivery * Int64(receivers.count), now: now)
            for subscriber in receivers {
                sent += parameters.perDelivery
                let delay = clientDelay()
                let arrival = toNode[subscriber, default: Channel()].pass(entering: sent, delay: delay, now: now)
                arrivals.append((subscriber, arrival))
            }
        }
        deliveries += arrivals.count
        bytesDelivered += arrivals.count * bytes
        for arrival in arrivals { bytesDeliveredTo[arrival.node, default: 0] += bytes }
        return arrivals
    }

    private mutating func clientDelay() -> Int64 {
        parameters.clientHop + Int64(-log(1 - random.nextUnit()) * Double(parameters.clientJitterMean))
    }

    /// A connection or a route: in order (TCP). What entered before `now` is folded into the
    /// latest instant any of it leaves (everything still to enter enters at `now` or later).
    struct Channel {
        /// What entered at `now` or later, by when it entered, each with the latest instant it or
        /// anything that entered before it leaves; from `head` on (the rest has been folded).
        private var recent: [(entered: Int64, leavesBy: Int64)] = []
        private var head = 0
        private var earlierLeaves: Int64 = 0

        /// When a frame that enters at `entering` (at or after `now`) leaves, `delay` later, or
        /// after whatever entered before it.
        mutating func pass(entering: Int64, delay: Int64, now: Int64) -> Int64 {
            while head < recent.count, recent[head].entered < now {
                earlierLeaves = max(earlierLeaves, recent[head].leavesBy)
                head += 1
            }
            if head > 64, head * 2 > recent.count {
                recent.removeFirst(head)
                head = 0
            }
            // Where it goes: usually last (frames enter in order); else after the last that
            // entered no later (a binary search).
            var position = recent.count
            if let last = recent.last, last.entered > entering {
                var (low, high) = (head, recent.count)
                while low < high {
                    let middle = (low + high) / 2
                    if recent[middle].entered <= entering { low = middle + 1 } else { high = middle }
                }
                position = low
            }
            let before = position > head ? recent[position - 1].leavesBy : earlierLeaves
            let leaves = max(entering + delay, before, earlierLeaves)
            recent.insert((entering, leaves), at: position)
            return leaves
        }
    }

    /// When a server's fan-out is busy: a message that reaches it waits for the copies it is
    /// already sending when it arrives (those of messages that arrived first), and no others.
    /// Spans in order, apart from each other (those that touch are one).
    struct BusyTimes {
        private var spans: [(start: Int64, end: Int64)] = []
        private var head = 0

        /// The first instant from `at` at which the server is free for `lasting`, now taken.
        mutating func start(at: Int64, lasting: Int64, now: Int64) -> Int64 {
            while head < spans.count, spans[head].end <= now { head += 1 }
            if head > 64, head * 2 > spans.count {
                spans.removeFirst(head)
                head = 0
            }
            // The first span that ends after `at` (ends are in order too).
            var (low, high) = (head, spans.count)
            while low < high {
                let middle = (low + high) / 2
                if spans[middle].end <= at { low = middle + 1 } else { high = middle }
            }
            var start = at
            var position = low
            while position < spans.count, spans[position].start < start + lasting {
                start = max(start, spans[position].end)
                position += 1
            }
            let end = start + lasting
            // Joined to the span it follows or precedes without a gap.
            if position > head, spans[position - 1].end == start {
                spans[position - 1].end = end
                if position < spans.count, spans[position].start == end {
                    spans[position - 1].end = spans[position].end
                    spans.remove(at: position)
                }
            } else if position < spans.count, spans[position].start == end {
                spans[position].start = start
            } else {
                spans.insert((start, end), at: position)
            }
            return start
        }
    }
}
