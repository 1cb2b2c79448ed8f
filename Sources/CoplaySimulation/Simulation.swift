import CoplayCore
import CoplaySimulatedPlayer
import Foundation

/// N core instances on a simulated network with simulated clocks, stepped deterministically:
/// everything random is drawn from one generator seeded by `seed`, so a run is replayed exactly
/// by running the same seed on the same commit.
///
/// Time is "true" nanoseconds since the simulation began. Each node sees it through its own
/// `SimulatedClock`. Node `i` sends from address 10.0.0.(i+1).
public struct Simulation {
    /// Something scheduled to happen to the simulated world.
    public enum Action: Hashable, Sendable {
        /// Create node's instance and join (a restarted node keeps its id and gets a new incarnation).
        case start(node: Int)
        /// Stop the node dead: nothing is sent, nothing received.
        case crash(node: Int)
        /// Type a console command on the node.
        case command(node: Int, ConsoleCommand)
        /// Split the nodes into groups; datagrams cross no group boundary.
        case partition([[Int]])
        /// Remove every partition.
        case heal
        /// Change how the network treats datagrams from now on.
        case conditions(NetworkConditions)
        /// Stop the node's process for a while (SIGSTOP, then SIGCONT): what arrives meanwhile
        /// waits in its receive buffer (at most `receiveBufferDatagrams`, the rest is lost), its
        /// timers wait; when it wakes it reads what waited first, then its timers fire, as the
        /// agent's event loop does.
        case pause(node: Int, for: Duration)
        /// Starve the node of CPU from now on: each input (a datagram, a timer) takes it this
        /// long, and inputs wait their turn in its receive buffer; `.zero` ends it.
        case starve(node: Int, perInput: Duration)
    }

    public struct Node {
        public let index: Int
        public let id: PeerID
        public var clock: SimulatedClock
        public var instance: Instance?
        /// The node's player, on the far side of the core's player boundary.
        public var player = SimulatedPlayer()
        /// Events the node emitted, with the true time: at most `eventLogMax`, then the oldest go.
        public var events: [(atNanos: Int64, event: Event)] = []
        public var diagnostics = 0
        fileprivate var wakeGeneration: UInt64 = 0
        fileprivate var playerWakeGeneration: UInt64 = 0
        fileprivate var starts = 0
        /// Datagrams that reached the node (including those it lost to a full receive buffer).
        public fileprivate(set) var datagramsReceived = 0
        /// Datagrams lost because the node's receive buffer was full (the kernel's drops).
        public fileprivate(set) var receiveBufferDrops = 0
        /// While paused: until when (true time).
        public fileprivate(set) var pausedUntil: Int64?
        /// CPU time each input takes (`Action.starve`); zero for a node that keeps up.
        fileprivate var perInputNanos: Int64 = 0
        /// Busy with an input until then.
        fileprivate var busyUntil: Int64 = 0
        /// Datagrams waiting to be read, with their arrival times, from `inboxHead` on.
        fileprivate var inbox: [(bytes: [UInt8], from: Endpoint, arrivedAt: Int64, viaGroup: Bool)] = []
        fileprivate var inboxHead = 0
        fileprivate var serving = false
        /// A timer came due while datagrams waited (or the node was paused): it fires once the
        /// datagrams before this index of `inbox` are read, as the event loop fires its timers
        /// after reading what poll found waiting.
        fileprivate var wakeAfter: Int?
        fileprivate var waiting: Int { inbox.count - inboxHead }
        public var address: UInt32 { 0x0A00_0001 + UInt32(index) }
        public var endpoint: Endpoint { Endpoint(address: address, port: 40_000) }
    }

    private enum Item {
        case deliver(bytes: [UInt8], from: Endpoint, to: Int, viaGroup: Bool)
        /// A relay frame for the node's connection to its NATS server (`relay`).
        case relayFrame(frame: [UInt8], subject: String, to: Int)
        /// A paused or starved node reads the next datagram of its receive buffer.
        case serve(node: Int)
        case resume(node: Int)
        case wake(node: Int, generation: UInt64)
        case playerWake(node: Int, generation: UInt64)
        case act(Action)
    }

    public let seed: UInt64
    public let settings: Settings
    public private(set) var nodes: [Node]
    public private(set) var conditions: NetworkConditions
    /// The true time of the event being processed, or of the last one.
    public private(set) var nowNanos: Int64 = 0
    public private(set) var datagramsSent = 0
    public private(set) var datagramsDelivered = 0
    /// Datagrams that reached a node, by the type byte of their header (a look at what the
    /// traffic is made of).
    public private(set) var receivedByType: [UInt8: Int] = [:]
    public var eventLogMax = 50_000
    /// Datagrams a paused or starved node's receive buffer holds (the agent asks the kernel for
    /// 1 MiB; a few hundred-byte datagrams each take about 1 KiB of it).
    public var receiveBufferDatagrams = 1024
    /// Settings of particular nodes (their own policies), in place of `settings`.
    public var settingsOfNode: [Int: Settings] = [:]
    /// The player a node starts with (and gets again after a crash), when not the default one:
    /// a clock that runs fast, a player that reports position samples.
    public var playerOfNode: [Int: SimulatedPlayer] = [:]
    /// Peers a node reaches by unicast as well as by multicast (its `--peer` seeds).
    public var seedsOfNode: [Int: [Endpoint]] = [:]
    /// A fault of the test's choosing: datagrams (bytes, sender, receiver) for which it returns
    /// true are lost, besides the random loss of the network conditions.
    public var drops: (@Sendable (_ bytes: [UInt8], _ from: Int, _ to: Int) -> Bool)?
    /// A network that filters multicast: datagrams to the group from `from` never reach `to`
    /// when this returns true (unicast between them still does).
    public var groupDrops: (@Sendable (_ from: Int, _ to: Int) -> Bool)?

    /// The relay (`--relay`): a NATS cluster the nodes also reach each other through, when set
    /// before they start. Its nodes run keyed (`relayKey`: the relay seals with the group key),
    /// each connected to `relayServerOfNode[i]` (default: node i to server i mod the servers),
    /// subscribed to its `relaySubscriptions`. Frames reach a node that is neither crashed nor
    /// paused (a paused node's connection is not modelled: what comes meanwhile is lost, and
    /// counted in `relayFramesLost`).
    public var relay: NatsModel?
    public var relayServerOfNode: [Int: Int] = [:]
    public static let relayKey = [UInt8](repeating: 0x5E, count: 32)
    public private(set) var relayFramesDelivered = 0
    public private(set) var relayFramesLost = 0

    private var queue = EventQueue<Item>()
    private var random: SplitMix64
    /// Partition group of each node; nil when the network is whole.
    private var groupOf: [Int]?
    /// The link's model, when the conditions name one (seeded from the run's seed).
    private var link: LinkModel?

    public init(
        seed: UInt64, clocks: [SimulatedClock], settings: Settings = Settings(),
        conditions: NetworkConditions = .perfect
    ) {
        self.seed = seed
        self.settings = settings
        self.conditions = conditions
        random = SplitMix64(seed: seed)
        link = Self.linkModel(for: conditions, nodes: clocks.count, seed: seed)
        var ids = SplitMix64(seed: seed ^ 0x1D5)
        nodes = clocks.indices.map { Node(index: $0, id: PeerID(ids.next()), clock: clocks[$0]) }
        nodeAt = Dictionary(uniqueKeysWithValues: nodes.map { ($0.address, $0.index) })
    }

    /// Nodes by address (for unicast).
    private let nodeAt: [UInt32: Int]
    /// From now on, node `index`'s player runs `speedError` fast (negative: slow): a player that
    /// starts to drift, or runs true again.
    public mutating func setSpeedError(_ speedError: Double, ofNode index: Int) {
        nodes[index].player.setSpeedError(speedError, now: nodes[index].clock.timestamp(atTrue: nowNanos))
    }

    public mutating func schedule(_ action: Action, at trueNanos: Int64) {
        queue.push(.act(action), at: trueNanos)
    }

    public mutating func schedule(_ action: Action, after delay: Duration) {
        schedule(action, at: nowNanos + delay.nanoseconds)
    }

    /// Processes events until the queue is empty or the next one is later than `endNanos`.
    /// Returns false if `eventsMax` events were processed first (a livelock).
    @discardableResult
    public mutating func run(until endNanos: Int64, eventsMax: Int = 2_000_000) -> Bool {
        var processed = 0
        while let next = queue.nextTime, next <= endNanos {
            guard processed < eventsMax else { return false }
            processed += 1
            let (at, item) = queue.pop()!
            nowNanos = at
            switch item {
            case .deliver(let bytes, let source, let index, let viaGroup):
                datagramsDelivered += 1
                guard nodes[index].instance != nil else { continue }
                nodes[index].datagramsReceived += 1
                if bytes.count > 5 { receivedByType[bytes[5], default: 0] += 1 }
                if nodes[index].pausedUntil != nil || nodes[index].busyUntil > at || nodes[index].waiting > 0 {
                    hold(bytes, from: source, at: at, viaGroup: viaGroup, for: index)
                } else {
                    receive(bytes, from: source, arrivedAt: at, viaGroup: viaGroup, by: index)
                }
            case .relayFrame(let frame, let subject, let index):
                guard nodes[index].instance != nil, nodes[index].pausedUntil == nil else {
                    relayFramesLost += 1
                    continue
                }
                relayFramesDelivered += 1
                let now = nodes[index].clock.timestamp(atTrue: at)
                guard
                    let directives = nodes[index].instance?.onRelayFrame(
                        frame, subject: subject, receivedAt: now, now: now)
                else { continue }
                nodes[index].busyUntil = at + nodes[index].perInputNanos
                carryOut(directives, for: index)
            case .serve(let index):
                nodes[index].serving = false
                serve(index)
            case .resume(let index):
                guard let until = nodes[index].pausedUntil, until <= at else { continue }
                nodes[index].pausedUntil = nil
                // Awake, the loop reads what waited (a turn's worth) before its timers fire.
                if nodes[index].wakeAfter != nil { nodes[index].wakeAfter = turnEnd(of: index) }
                serve(index)
            case .wake(let index, let generation):
                guard generation == nodes[index].wakeGeneration, nodes[index].instance != nil else { continue }
                if nodes[index].pausedUntil != nil {
                    if nodes[index].wakeAfter == nil { nodes[index].wakeAfter = nodes[index].inbox.count }
                } else if nodes[index].waiting > 0 {
                    if nodes[index].wakeAfter == nil { nodes[index].wakeAfter = turnEnd(of: index) }
                } else if nodes[index].busyUntil > at {
                    queue.push(.wake(node: index, generation: generation), at: nodes[index].busyUntil)
                } else {
                    tick(index)
                }
            case .playerWake(let index, let generation):
                guard generation == nodes[index].playerWakeGeneration, nodes[index].instance != nil else { continue }
                if let until = nodes[index].pausedUntil {
                    queue.push(.playerWake(node: index, generation: generation), at: until)
                    continue
                }
                let now = nodes[index].clock.timestamp(atTrue: at)
                let reports = nodes[index].player.advance(now: now)
                runLoop(on: index) { instance, player, carry in
                    let status = PlayerLoop.feed(
                        reports, instance: &instance, player: &player, now: { now }, carry: carry)
                    return PlayerLoop.Outcome(exitStatus: status, playerTouched: true)
                }
            case .act(let action):
                perform(action)
            }
        }
        nowNanos = max(nowNanos, endNanos)
        return true
    }

    public mutating func run(for duration: Duration) -> Bool {
        run(until: nowNanos + duration.nanoseconds)
    }

    // MARK: Processes that fall behind

    /// A datagram for a node that is paused, busy, or has others waiting: into its receive
    /// buffer, or lost if that is full.
    private mutating func hold(
        _ bytes: [UInt8], from source: Endpoint, at arrival: Int64, viaGroup: Bool, for index: Int
    ) {
        guard nodes[index].waiting < receiveBufferDatagrams else {
            nodes[index].receiveBufferDrops += 1
            return
        }
        if nodes[index].inboxHead > 4096, nodes[index].inboxHead * 2 > nodes[index].inbox.count {
            nodes[index].inbox.removeFirst(nodes[index].inboxHead)
            nodes[index].wakeAfter = nodes[index].wakeAfter.map { max(0, $0 - nodes[index].inboxHead) }
            nodes[index].inboxHead = 0
        }
        nodes[index].inbox.append((bytes, source, arrival, viaGroup))
        if nodes[index].pausedUntil == nil { scheduleServe(index, at: max(nowNanos, nodes[index].busyUntil)) }
    }

    /// Where in the receive buffer the turn of reading under way ends, and a timer that came due
    /// fires: after what waits now, or after `Settings.receiveTurnDurationMax` of reading, as the
    /// shell's event loop does (a starved node reads a few inputs in that time; one that keeps
    /// up, everything).
    private func turnEnd(of index: Int) -> Int {
        let perInput = nodes[index].perInputNanos
        guard perInput > 0 else { return nodes[index].inbox.count }
        let turn = (settingsOfNode[index] ?? settings).receiveTurnDurationMax.nanoseconds
        return min(nodes[index].inbox.count, nodes[index].inboxHead + max(1, Int(turn / perInput)))
    }

    private mutating func scheduleServe(_ index: Int, at time: Int64) {
        guard !nodes[index].serving else { return }
        nodes[index].serving = true
        queue.push(.serve(node: index), at: time)
    }

    /// Reads the next waiting datagram (a starved node one per `perInputNanos`; a node that
    /// keeps up all of them now), or fires the timer that came due behind those read.
    private mutating func serve(_ index: Int) {
        guard nodes[index].pausedUntil == nil, nodes[index].instance != nil else { return }
        guard nodes[index].busyUntil <= nowNanos else { return scheduleServe(index, at: nodes[index].busyUntil) }
        if let after = nodes[index].wakeAfter, nodes[index].inboxHead >= after {
            nodes[index].wakeAfter = nil
            tick(index)
        } else if nodes[index].waiting > 0 {
            let next = nodes[index].inbox[nodes[index].inboxHead]
            nodes[index].inboxHead += 1
            receive(next.bytes, from: next.from, arrivedAt: next.arrivedAt, viaGroup: next.viaGroup, by: index)
        }
        if nodes[index].waiting > 0 || nodes[index].wakeAfter != nil {
            scheduleServe(index, at: max(nowNanos, nodes[index].busyUntil))
        }
    }

    /// The node reads one datagram, stamped with its arrival (the kernel's timestamp) and
    /// handled now, as the shell does: a turn of reading (here, of one datagram) on the socket it
    /// arrived at, the group's or the node's own.
    private mutating func receive(
        _ bytes: [UInt8], from source: Endpoint, arrivedAt: Int64, viaGroup: Bool, by index: Int
    ) {
        let (receivedAt, now) = (
            nodes[index].clock.timestamp(atTrue: arrivedAt), nodes[index].clock.timestamp(atTrue: nowNanos)
        )
        // Mutated in place: a copy taken out and put back would share the instance's tables, and
        // its first change would copy them all.
        guard var turn = nodes[index].instance?.beginReceiveTurn(),
            var directives = nodes[index].instance?.onDatagram(
                bytes[...], from: source, receivedAt: receivedAt, now: now, viaGroup: viaGroup, turn: &turn),
            let deferred = nodes[index].instance?.endReceiveTurn(turn, drained: true, now: now)
        else { return }
        directives += deferred
        nodes[index].busyUntil = nowNanos + nodes[index].perInputNanos
        carryOut(directives, for: index)
    }

    private mutating func tick(_ index: Int) {
        let now = nodes[index].clock.timestamp(atTrue: nowNanos)
        guard let directives = nodes[index].instance?.onTick(now: now) else { return }
        nodes[index].busyUntil = nowNanos + nodes[index].perInputNanos
        carryOut(directives, for: index)
    }

    // MARK: Observations

    public var liveIndices: [Int] { nodes.indices.filter { nodes[$0].instance?.state.isJoined == true } }

    /// The memberships node `index` believes alive.
    public func view(of index: Int) -> Set<Member> {
        Set(nodes[index].instance?.peers.values.map(\.member) ?? [])
    }

    /// The memberships every node other than `index` would be seen as, if it is live.
    public func expectedView(of index: Int) -> Set<Member> {
        Set(liveIndices.filter { $0 != index }.compactMap { nodes[$0].instance?.member })
    }

    /// For each (observer, peer) pair with an estimate: the estimate's error in nanoseconds now.
    public func offsetErrors() -> [(observer: Int, peer: Int, errorNanos: Int64, synced: Bool, delayNanos: Int64)] {
        var errors: [(Int, Int, Int64, Bool, Int64)] = []
        for observer in liveIndices {
            guard let instance = nodes[observer].instance else { continue }
            let now = nodes[observer].clock.timestamp(atTrue: nowNanos)
            for record in instance.peers.values {
                guard let peer = nodes.firstIndex(where: { $0.id == record.member.id }),
                    let estimate = instance.clockEstimate(of: record.member.id, at: now.monotonic)
                else { continue }
                let truth = nodes[observer].clock.wallOffset(to: nodes[peer].clock, atTrue: nowNanos)
                errors.append(
                    (
                        observer, peer, estimate.offsetNanos - truth, instance.isClockSynced(record.member.id),
                        estimate.delayNanos
                    ))
            }
        }
        return errors.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
    }

    // MARK: The world

    private mutating func perform(_ action: Action) {
        switch action {
        case .start(let index):
            nodes[index].starts += 1
            if nodes[index].instance == nil { nodes[index].player = playerOfNode[index] ?? SimulatedPlayer() }
            let now = nodes[index].clock.timestamp(atTrue: nowNanos)
            let identity = LocalIdentity(
                id: nodes[index].id, name: "node\(index)", sessionName: "sim", unicastPort: nodes[index].endpoint.port)
            let instanceSeed = seed ^ UInt64(index << 32) ^ UInt64(nodes[index].starts)
            var entropy = SplitMix64(seed: instanceSeed ^ 0x4E_4154_53)
            var instance = Instance(
                identity: identity, settings: settingsOfNode[index] ?? settings, seed: instanceSeed,
                now: now, keys: relay == nil ? nil : [Self.relayKey], seeds: seedsOfNode[index] ?? [],
                relayEntropy: relay == nil ? nil : (0..<32).map { _ in UInt8(truncatingIfNeeded: entropy.next()) })
            if relay != nil {
                let servers = relay?.servers ?? 1
                relay?.connect(node: index, server: relayServerOfNode[index] ?? index % servers)
                relay?.subscribe(node: index, to: instance.relaySubscriptions)
            }
            let directives = instance.start(now: now)
            nodes[index].instance = instance
            carryOut(directives, for: index)
        case .crash(let index):
            stop(index)
        case .command(let index, let command):
            let now = nodes[index].clock.timestamp(atTrue: nowNanos)
            guard let directives = nodes[index].instance?.onCommand(command, now: now) else { return }
            carryOut(directives, for: index)
        case .partition(let groups):
            var membership = Array(0..<nodes.count)  // unlisted nodes stand alone
            for (group, members) in groups.enumerated() {
                for node in members { membership[node] = nodes.count + group }
            }
            groupOf = membership
        case .heal:
            groupOf = nil
        case .conditions(let newConditions):
            conditions = newConditions
            link = Self.linkModel(for: newConditions, nodes: nodes.count, seed: seed ^ UInt64(nowNanos))
        case .pause(let index, let duration):
            let until = nowNanos + duration.nanoseconds
            nodes[index].pausedUntil = max(nodes[index].pausedUntil ?? 0, until)
            queue.push(.resume(node: index), at: until)
        case .starve(let index, let perInput):
            nodes[index].perInputNanos = max(0, perInput.nanoseconds)
        }
    }

    /// Carries out the node's directives through the loop the shell runs (`PlayerLoop`).
    private mutating func carryOut(_ directives: [Directive], for index: Int) {
        let now = nodes[index].clock.timestamp(atTrue: nowNanos)
        runLoop(on: index) { instance, player, carry in
            PlayerLoop.carryOut(directives, instance: &instance, player: &player, now: { now }, carry: carry)
        }
    }

    /// Runs `loop` on the node's instance and player, taken out of the node meanwhile (the loop
    /// holds them alone, and carrying a step out may change the rest of the world); then puts
    /// them back and sets the player's wake if the player did something. An exit stops the node.
    private mutating func runLoop(
        on index: Int,
        _ loop: (inout Instance, inout SimulatedPlayer, (PlayerLoop.Step) -> Void) -> PlayerLoop.Outcome
    ) {
        guard var instance = nodes[index].instance else { return }
        nodes[index].instance = nil
        var player = nodes[index].player
        var subscribes = false
        let outcome = loop(&instance, &player) { step in
            if case .subscribe = step { subscribes = true }
            carry(step, for: index)
        }
        guard outcome.exitStatus == nil else { return stop(index) }
        // A viewer took a seat: its subjects now, at the instant of the frames it published with
        // it (the model delivers them later, so none is missed).
        if subscribes { relay?.subscribe(node: index, to: instance.relaySubscriptions) }
        nodes[index].instance = instance
        nodes[index].player = player
        if outcome.playerTouched { schedulePlayerWake(for: index) }
    }

    /// One step of the loop for node `index`: a datagram onto the simulated network, an event
    /// into its log, a wake into the queue.
    private mutating func carry(_ step: PlayerLoop.Step, for index: Int) {
        switch step {
        case .datagram(let bytes, nil, let expedited):
            datagramsSent += 1
            guard link == nil else {
                return transmitOnLink(bytes, from: index, isGroup: true, expedited: expedited)
            }
            for receiver in nodes.indices where receiver != index {
                transmit(bytes, from: index, to: receiver, viaGroup: true)
            }
        case .datagram(let bytes, let endpoint?, let expedited):
            datagramsSent += 1
            if let address = endpoint.address.ipv4, let receiver = nodeAt[address],
                endpoint.port == nodes[receiver].endpoint.port
            {
                guard link == nil else {
                    return transmitOnLink(bytes, from: index, to: receiver, isGroup: false, expedited: expedited)
                }
                transmit(bytes, from: index, to: receiver, viaGroup: false)
            }
        case .publish(let frame, let subject):
            // Through the optional in place: a copy of the model (`guard var`) copied each of its
            // tables on every frame, most of a large party's simulated time.
            guard let arrivals = relay?.publish(from: index, subject: subject, bytes: frame.count, at: nowNanos)
            else { return }
            for (receiver, at) in arrivals {
                queue.push(.relayFrame(frame: frame, subject: subject, to: receiver), at: at)
            }
        case .subscribe:
            break  // `runLoop`: the instance it reads is out of the node while its loop runs
        case .emit(let event):
            nodes[index].events.append((nowNanos, event))
            if nodes[index].events.count > eventLogMax { nodes[index].events.removeFirst(eventLogMax / 10) }
        case .diagnose:
            nodes[index].diagnostics += 1
        case .wake(let instant):
            nodes[index].wakeGeneration += 1
            let at = max(nodes[index].clock.trueNanos(atMonotonic: instant), nowNanos + 1)
            queue.push(.wake(node: index, generation: nodes[index].wakeGeneration), at: at)
        }
    }

    /// The node's process ends (a crash, an exit): its instance, player, timers and what waited
    /// in its receive buffer are gone; a restart begins afresh.
    private mutating func stop(_ index: Int) {
        nodes[index].instance = nil
        relay?.disconnect(node: index)
        (nodes[index].inbox, nodes[index].inboxHead, nodes[index].wakeAfter) = ([], 0, nil)
        nodes[index].pausedUntil = nil
        nodes[index].player = playerOfNode[index] ?? SimulatedPlayer()
        nodes[index].wakeGeneration += 1
        nodes[index].playerWakeGeneration += 1
    }

    private mutating func schedulePlayerWake(for index: Int) {
        let now = nodes[index].clock.timestamp(atTrue: nowNanos)
        guard nodes[index].instance != nil, let due = nodes[index].player.nextEvent(now: now) else { return }
        nodes[index].playerWakeGeneration += 1
        let at = max(nodes[index].clock.trueNanos(atMonotonic: due), nowNanos + 1)
        queue.push(.playerWake(node: index, generation: nodes[index].playerWakeGeneration), at: at)
    }

    private static func linkModel(for conditions: NetworkConditions, nodes: Int, seed: UInt64) -> LinkModel? {
        conditions.link.map { LinkModel($0, hosts: nodes, dtimPeriod: conditions.dtimPeriod, seed: seed ^ 0x11_4B) }
    }

    /// A datagram onto the modelled link (`NetworkConditions.link`): to `receiver`, or to every
    /// other node when nil. The link decides when each copy arrives and which are lost; the
    /// conditions' own loss, the test's drops and duplication apply on top.
    private mutating func transmitOnLink(
        _ bytes: [UInt8], from sender: Int, to receiver: Int? = nil, isGroup: Bool, expedited: Bool
    ) {
        guard link != nil else { return }
        let groups = groupOf
        let receivers = (receiver.map { [$0] } ?? nodes.indices.filter { $0 != sender }).filter { other in
            groups.map { $0[sender] == $0[other] } ?? true
        }
        // In place, as the relay's model (`.publish`).
        let arrivals =
            link?.deliver(from: sender, to: receivers, isGroup: isGroup, expedited: expedited, at: nowNanos) ?? []
        for (receiver, at) in arrivals {
            if random.nextUnit() < conditions.lossProbability { continue }
            if let drops, drops(bytes, sender, receiver) { continue }
            if isGroup, let groupDrops, groupDrops(sender, receiver) { continue }
            let copies = random.nextUnit() < conditions.duplicationProbability ? 2 : 1
            for _ in 0..<copies {
                queue.push(
                    .deliver(bytes: bytes, from: nodes[sender].endpoint, to: receiver, viaGroup: isGroup),
                    at: max(at, nowNanos + 1))
            }
        }
    }

    private mutating func transmit(_ bytes: [UInt8], from sender: Int, to receiver: Int, viaGroup: Bool) {
        if let groupOf, groupOf[sender] != groupOf[receiver] { return }
        if random.nextUnit() < conditions.lossProbability { return }
        if let drops, drops(bytes, sender, receiver) { return }
        if viaGroup, let groupDrops, groupDrops(sender, receiver) { return }
        let copies = random.nextUnit() < conditions.duplicationProbability ? 2 : 1
        for _ in 0..<copies {
            let jitter = -log(1 - random.nextUnit()) * Double(conditions.jitterMean.nanoseconds)
            let delay = conditions.baseDelay.nanoseconds + Int64(jitter)
            queue.push(
                .deliver(bytes: bytes, from: nodes[sender].endpoint, to: receiver, viaGroup: viaGroup),
                at: nowNanos + delay)
        }
    }
}
