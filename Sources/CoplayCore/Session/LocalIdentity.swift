/// Who this agent is.
public struct LocalIdentity: Hashable, Sendable {
    public var id: PeerID
    /// The human name, at most `Settings.nameBytesMax` bytes of UTF-8.
    public var name: String
    public var sessionName: String
    /// The port of this agent's unicast socket, announced in hellos and heartbeats.
    public var unicastPort: UInt16
    /// What kind of local player it drives ("simulated", "mpv", "socket"), for `status`.
    public var playerKind: String

    public init(id: PeerID, name: String, sessionName: String, unicastPort: UInt16, playerKind: String = "simulated") {
        self.playerKind = playerKind
        self.id = id
        self.name = name
        self.sessionName = sessionName
        self.unicastPort = unicastPort
    }

    /// A browser tab has no unicast socket, and an announcement must name a port (1-65535): it
    /// names 9, the discard port. It is heard only through the relay, so no peer forms a LAN
    /// endpoint from it (PROTOCOL.md, "Browser participants"); a peer announcing it is a tab.
    public static let browserPort: UInt16 = 9

    /// A browser tab's identity: the browser's port, the "web" player.
    public static func browser(id: PeerID, name: String, sessionName: String) -> LocalIdentity {
        LocalIdentity(id: id, name: name, sessionName: sessionName, unicastPort: browserPort, playerKind: "web")
    }
}
