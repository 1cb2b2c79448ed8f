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
}
