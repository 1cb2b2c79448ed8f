import CoplayCore

/// The `coplay` agent, run from its configuration: with a hub (`coplay join` of a link for
/// anywhere), first its own nats-server on loopback as the hub's leaf node, tied to its life,
/// which the agent reaches as its relay (the TLS is nats-server's and Caddy's, not the agent's).
public enum Agent {
    public static func run(_ given: AgentConfiguration) async -> Int32 {
        var configuration = given
        var leaf: PartyRelay?
        if let hub = configuration.hub {
            do {
                let started = try PartyRelay.start(host: "127.0.0.1", hub: hub.leaf(caFile: configuration.hubCA))
                leaf = started
                configuration.relays = [
                    try CommandLineOptions.parseRelay("nats://\(started.token)@127.0.0.1:\(started.clientPort)")
                ]
                configuration.notes.append(
                    "reaching the hub \(hub.hostPort) through a nats-server of this agent's own (its leaf node, over wss://)"
                )
            } catch {
                StandardStreams.writeError("coplay: cannot reach the hub \(hub.hostPort): \(error)")
                return 1
            }
        }
        defer { leaf?.stop() }
        do {
            let shell = try AgentShell(configuration: configuration)
            return await shell.run()
        } catch {
            StandardStreams.writeError("coplay: cannot start: \(error)")
            return 1
        }
    }
}
