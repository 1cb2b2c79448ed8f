import CoplayCore

/// Everything an agent is started with, from the command line.
public struct AgentConfiguration: Sendable {
    public var name: String
    public var sessionName = "default"
    /// Interface name or address; nil lets the kernel choose.
    public var interface: String?
    public var group = Endpoint(
        address: Endpoint.parseAddress(WireFormat.defaultGroupAddress)!, port: WireFormat.defaultPort)
    public var json = false
    /// The unicast port (`--port`); 0 for an ephemeral one.
    public var port: UInt16 = 0
    /// Peers reached by unicast as well as multicast (`--peer HOST:PORT`, resolved at start).
    public var peers: [Endpoint] = []
    /// NATS servers of one cluster that carry the group's datagrams too (`--relay`).
    public var relays: [RelayServer] = []
    public var clockSkewNanos: Int64 = 0
    /// A fixed participant id (to keep one identity across restarts); random when nil.
    public var peerID: PeerID?
    /// An agent on a relay takes a seat on the stage if one is free (`--audience`: never;
    /// `--stage`: whatever its size).
    public var settings = {
        var settings = Settings()
        settings.audience.role = .firstCome
        return settings
    }()
    /// The group key file and its keys (current first); nil for an open group.
    public var keyFile: String?
    public var keys: [[UInt8]]?
    /// The local player.
    public var player: PlayerChoice = .simulated
    /// The control socket's path (`--control`); with one, end of standard input does not end
    /// the agent.
    public var controlPath: String?
    /// Console lines the agent carries out once started, as if typed (a party's queue).
    public var startupLines: [String] = []
    /// What quitting this agent does to the session (a party's host: `coplay party`'s Ctrl-C,
    /// `quit` or SIGTERM ends the party for everyone, with this reason, rather than leaving it:
    /// the tabs and the joined agents are told, instead of trying the gone relay for good).
    public var endsSessionOnQuit: String?
    /// Exit (status 0, saying so) when another participant ends the session (`coplay join`:
    /// an agent joined to a party from its link is done when the party is).
    public var exitsWhenEnded = false
    /// Printed to standard output once the agent handles its signals (a party's link: whoever
    /// presses Ctrl-C after seeing it gets a clean end).
    public var startupOutput: String?
    /// What the command line accepted but a person may not have meant (a custom `--wait-for`
    /// reason): said once, to standard error, when the agent starts.
    public var notes: [String] = []
    /// A hub this agent reaches through a nats-server of its own, on loopback, that is the hub's
    /// leaf node (`coplay join` of a link for anywhere: its relay is the hub's `wss://`, and the
    /// agent speaks no TLS itself). Started with the agent, tied to its life.
    public var hub: HubLink?
    /// A CA to trust for the hub's certificate besides the system's (`--hub-ca FILE`: a hub
    /// with `--tls internal`).
    public var hubCA: String?
    /// The folders this agent finds its own copies of items known by their content in
    /// (`--media DIR`, repeatable; at most `mediaFoldersMax`).
    public var mediaFolders: [String] = []
    /// Files this agent knows are its own copies (a party's films, by their absolute paths):
    /// looked at before `mediaFolders`.
    public var ownFiles: [String] = []
    /// A person names a few folders (films, series, downloads); each is walked at every index.
    public static let mediaFoldersMax = 16
    /// How late this machine's sound leaves its speaker after its player's clock (`--audio-latency
    /// MS`, seconds here): the player is aimed early by as much (`OutputLatencyPlayer`).
    public var audioLatency = 0.0
    /// Bluetooth headsets add 150-300 ms and a television's sound processing up to about 500:
    /// a second covers them, and more is a mistake in the number rather than a speaker.
    public static let audioLatencyMaxMilliseconds = 1000.0
    /// The mpv flags as read (they may come before `--player mpv`).
    var mpvOptions = MpvOptions()
    /// The VLC flags as read (they may come before `--player vlc`).
    var vlcOptions = VlcOptions()

    public init(name: String) { self.name = name }
}

/// Which player an agent drives (`--player`).
public enum PlayerChoice: Sendable, Equatable {
    /// The built-in model of a player (testing, demos, measuring the protocol).
    case simulated
    case mpv(MpvOptions)
    /// VLC 3, through coplay's interface script inside it (`VlcPlayer`).
    case vlc(VlcOptions)
    /// Kodi 19-21, over its JSON-RPC TCP interface (`KodiPlayer`), on this machine or another.
    case kodi(KodiOptions)
    /// A delegating player that connects to this Unix socket (PLAYERS.md).
    case socket(path: String)
}

/// How to reach mpv (`--player mpv`, `--mpv-socket`, `--mpv-option`, `--mpv-attach`).
public struct MpvOptions: Sendable, Equatable {
    /// A socket mpv also listens on, for other tools (or the one to attach to); nil: none, the
    /// agent reaches the mpv it starts through a socket pair.
    public var socketPath: String?
    /// NAME=VALUE options passed to an mpv the agent starts.
    public var options: [String] = []
    /// Attach to an mpv the user started with --input-ipc-server=PATH instead of starting one.
    public var attach = false

    public init() {}
}
