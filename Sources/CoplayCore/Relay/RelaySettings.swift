extension Settings {
    /// The relay client's times and bounds (`--relay`): its connection to a NATS server, the
    /// servers it knows, what it buffers.
    public struct Relay: Sendable, Equatable {
        /// A peer announced over the network within this long is reached over the network, though
        /// its announcements arrive through the relay too; after this much silence on the network
        /// (its LAN path is gone, or never was) the relay carries what is sent to it. Longer than
        /// two heartbeats, so that one lost heartbeat does not move a LAN peer to the relay.
        public var networkPreferredFor: Duration = .seconds(2)
        /// With nothing heard from the relay server for this long, the client sends a PING…
        public var pingInterval: Duration = .milliseconds(250)
        /// …and with nothing heard for this long it gives the server up and connects to another, and
        /// heartbeats at once there (`Instance.onPathRestored`): the peers that heard nothing from
        /// this agent meanwhile hear it again before membership's `deadAfter` (1.25 s) of silence. With 1 s, a
        /// frozen server cost a false departure in one run of three (`RelayAgentTests`). A PING and
        /// a PONG are 12 bytes; one goes only when no peer's datagram came for `pingInterval`.
        /// On the wan model a lost PONG is retransmitted within some 250 ms.
        public var deadAfter: Duration = .milliseconds(700)
        /// A TCP connection and the NATS handshake (INFO, CONNECT, PONG) must end within this long.
        public var connectTimeout: Duration = .seconds(1)
        /// No server reached for this long (since joining, or since the connection was lost) is
        /// said once (`NatsClient.Output.unreachable`): the page puts it at the top, since a
        /// person waiting on a phone with mobile data on sees nothing else move. Five tries of a
        /// server that does not answer (`connectTimeout`), or some dozen of one that refuses at
        /// once; a failover within a cluster (under 2 s) is not said.
        public var unreachableNotice: Duration = .seconds(5)
        /// After a failed attempt the next server is tried at once; after a whole round of them
        /// failed, the client waits this long, doubled each round up to `backoffMax`, each
        /// wait jittered by ±`backoffJitterFraction` (a cluster restarting is not hit by all
        /// its clients at once).
        public var backoffMin: Duration = .milliseconds(100)
        public var backoffMax: Duration = .seconds(5)
        public var backoffJitterFraction = 0.25
        /// The `--relay` seeds plus the servers their cluster announced (INFO's `connect_urls`):
        /// a cluster of more servers than this is reached through the first ones.
        public var serversMax = 16
        /// A server the cluster announced that failed this many times in a row leaves the list (a
        /// server gone for good is not tried forever; the `--relay` seeds always stay).
        public var announcedFailuresMax = 3
        /// A protocol line from the server (an INFO lists its cluster's URLs: some 40 bytes each).
        /// A longer line is a broken or hostile server: the connection is cut.
        public var lineBytesMax = 16_384
        /// Frames waiting to be written to a server that does not read them fast enough: 256 KB is
        /// a second of the busiest group's traffic; past it frames are dropped (counted), which the
        /// protocol's repair makes up, rather than memory growing.
        public var writeBufferBytesMax = 262_144
        /// Bytes read from the server in one turn of the loop (then the loop's other inputs and
        /// timers run): 64 KB is some 50 frames.
        public var readTurnBytesMax = 65_536

        public init() {}
    }
}
