import CoplayCore
import Glibc

/// The nats-server a party starts for itself: the relay that carries the group's sealed frames
/// to the room's browsers (its WebSocket listener) and to the host's agent (its client port). With
/// a hub (`coplay party --hub LINK`), it is also the hub's leaf node, over `wss://`: the room's
/// devices reach it on their LAN as before, and the other homes reach the group through the hub.
/// A joining agent's own server (`coplay join` of a hub's link) is one too, on loopback.
///
/// It is tied to the party's process however that ends (`TiedServer`). Its configuration (with
/// the token) and its log are written in a fresh 0700 folder of the user's runtime directory,
/// and removed once the server has read the one and opened the other: nothing of the party is
/// left on disk, even after a `kill -9`.
final class PartyRelay {
    let clientPort: UInt16
    let webSocketPort: UInt16
    let token: String
    private let server: TiedServer

    /// A party's frames: a datagram is at most 1,200 bytes, 1,231 sealed; NATS adds its subject.
    static let maxPayloadBytes = 4096

    typealias StartError = TiedServer.StartError

    /// Where nats-server is, if installed.
    static func serverPath() -> String? { TiedServer.programPath("nats-server") }

    /// Starts nats-server listening on `host` (client port and WebSocket, each on a free port),
    /// with a random token, a leaf node of `hub` if one is given, and waits until it accepts
    /// connections.
    static func start(host: String, hub: HubLink.Leaf? = nil) throws(StartError) -> PartyRelay {
        guard let program = serverPath() else {
            throw StartError(
                description: host == "127.0.0.1" && hub != nil
                    ? "reaching a hub needs nats-server on this machine: apt install nats-server (it is this agent's own leaf node of the hub, and speaks its TLS)"
                    : "a party needs nats-server, the relay the room's browsers reach: apt install nats-server (or give --relay ws://TOKEN@HOST:PORT of a server that runs)"
            )
        }
        let clientPort = try TiedServer.freePort(host)
        let webSocketPort = try TiedServer.freePort(host)
        var random = SystemRandomNumberGenerator()
        let token = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &random) })
        let folder = try TiedServer.makePrivateFolder("coplay-party")
        let configPath = folder + "/nats.conf"
        let logPath = folder + "/nats.log"
        defer {
            unlink(configPath)
            unlink(logPath)
            rmdir(folder)
        }
        var configuration = """
            # written by coplay party; removed once read
            server_name: coplay-party-\(token.prefix(8))
            listen: "\(host):\(clientPort)"
            authorization { token: "\(token)" }
            max_payload: \(maxPayloadBytes)
            websocket { host: "\(host)", port: \(webSocketPort), no_tls: true, same_origin: false }
            """
        if let hub { configuration += "\n" + hub.configuration }
        guard TiedServer.writePrivateFile(configPath, configuration) else {
            throw StartError(description: "cannot write \(configPath): \(String(cString: strerror(errno)))")
        }
        let server = try TiedServer.start(
            [program, "-c", configPath], name: "coplay-party-relay", log: logPath,
            listening: { TiedServer.canConnect(host, clientPort) && TiedServer.canConnect(host, webSocketPort) },
            fatal: TiedServer.natsFatal)
        return PartyRelay(clientPort: clientPort, webSocketPort: webSocketPort, token: token, server: server)
    }

    private init(clientPort: UInt16, webSocketPort: UInt16, token: String, server: TiedServer) {
        self.clientPort = clientPort
        self.webSocketPort = webSocketPort
        self.token = token
        self.server = server
    }

    /// Stops the server.
    func stop() { server.stop() }
}
