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
    public var clockSkewNanos: Int64 = 0
    /// A fixed participant id (to keep one identity across restarts); random when nil.
    public var peerID: PeerID?
    public var settings = Settings()
    /// The group key file and its keys (current first); nil for an open group.
    public var keyFile: String?
    public var keys: [[UInt8]]?

    public init(name: String) { self.name = name }
}
