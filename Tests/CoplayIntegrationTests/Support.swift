import CoplayCore
import CoplayHarness
import Foundation
import Glibc
import Synchronization

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
let coplay = Locations.coplayExecutable(packageRoot: packageRoot)
let lanTool = packageRoot.appendingPathComponent("Tools/lan").path
let isRoot = getuid() == 0

/// A group port of this test process's own, so concurrent runs do not hear each other.
func privatePort(_ salt: Int) -> String { String(41_000 + Int(getpid() % 10_000) * 2 + salt) }

private let lansMade = Mutex(0)

/// A name for a new LAN, unique in this process (suites run in parallel): "ci" + pid + a letter.
func newLANPrefix() -> String {
    let number = lansMade.withLock { count in
        count += 1
        return count
    }
    return "ci\(getpid() % 10_000)\(Character(UnicodeScalar(UInt8(96 + number % 26))))"
}

/// The `coplay-bench` built beside the test bundle (the forwarding hub of a LAN with a link model).
let coplayBench = URL(fileURLWithPath: coplay).deletingLastPathComponent().appendingPathComponent("coplay-bench").path

/// A LAN of network namespaces that exists for the duration of `body` and is always removed;
/// `link` (with `options` such as `--dtim 3`): its hosts on a forwarding hub with that model
/// instead of a bridge.
func withLAN<T>(hosts: Int, link: String? = nil, options: [String] = [], _ body: (_ prefix: String) throws -> T)
    throws -> T
{
    let prefix = newLANPrefix()
    let environment = ["LAN_PREFIX": prefix, "COPLAY_BENCH": coplayBench, "LAN_HUB_SECONDS": "300"]
    defer { _ = try? Locations.run(lanTool, ["down"], environment: environment) }
    let arguments = ["up", String(hosts)] + (link.map { ["--link", $0] } ?? []) + options
    let (status, output) = try Locations.run(lanTool, arguments, environment: environment)
    guard status == 0 else { throw LANError(description: "Tools/lan up failed: \(output)") }
    return try body(prefix)
}

struct LANError: Error, CustomStringConvertible { var description: String }

/// Makes each host of a `Tools/lan` LAN drop `percent` of the UDP it receives (`nft` table inet
/// coplayloss, whose counter `dropped` counts them).
func dropUDP(percent: Int, onHosts hosts: ClosedRange<Int>, of prefix: String) throws {
    let rules = """
        table inet coplayloss {
          counter dropped { }
          chain input {
            type filter hook input priority 0; policy accept;
            meta l4proto udp numgen random mod 100 < \(percent) counter name dropped drop
          }
        }
        """
    // Named by the LAN, not the process: two tests on lanes of their own may drop at once.
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-loss-\(prefix).nft")
    try rules.write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    for host in hosts {
        let (status, output) = try Locations.run(
            "/usr/sbin/ip", ["netns", "exec", "\(prefix)-h\(host)", "nft", "-f", file.path])
        guard status == 0 else { throw LANError(description: "nft on host \(host): \(output)") }
    }
}

/// A UDP socket of a test's own, as a hostile or broken sender on the LAN would have: made in
/// this process's network namespace, or inside `namespace` (a `Tools/lan` host), bound to
/// `address` (and `port`, 0 for any). It sends raw bytes to any IPv4 address — the group
/// included, through the interface that has `address` — and can join the group to hear what the
/// agents send, which is what a replay needs.
final class LANSocket {
    let descriptor: Int32
    private let interface: in_addr

    /// `address` and the others in dotted form; `namespace` nil means this process's own.
    init(namespace: String? = nil, address: String = "127.0.0.1", port: UInt16 = 0) throws {
        interface = in_addr(s_addr: inet_addr(address))
        let made = try LANSocket.socketInside(namespace: namespace)
        descriptor = made
        var reuse: Int32 = 1
        setsockopt(made, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var local = LANSocket.address(port == 0 ? address : "0.0.0.0", port)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(made, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            close(made)
            throw LANError(description: "bind \(address):\(port): errno \(errno)")
        }
        var outgoing = interface
        setsockopt(made, Int32(IPPROTO_IP), IP_MULTICAST_IF, &outgoing, socklen_t(MemoryLayout<in_addr>.size))
        var wait = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(made, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// A socket made on a thread of its own that has entered `namespace` (a socket stays in the
    /// namespace it was made in; the thread ends, this process's other threads never move).
    private static func socketInside(namespace: String?) throws -> Int32 {
        guard let namespace else { return socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0) }
        let result = Mutex<Int32>(-1)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            let handle = open("/var/run/netns/\(namespace)", O_RDONLY)
            guard handle >= 0 else { return }
            defer { close(handle) }
            guard let setns = LANSocket.setns, setns(handle, 0x4000_0000) == 0 else { return }  // CLONE_NEWNET
            let made = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            result.withLock { $0 = made }
        }
        thread.start()
        done.wait()
        let made = result.withLock { $0 }
        guard made >= 0 else { throw LANError(description: "no socket inside namespace \(namespace): errno \(errno)") }
        return made
    }

    /// glibc's setns(2), which Swift's Glibc module does not export (it needs _GNU_SOURCE).
    private static let setns: (@convention(c) (Int32, Int32) -> Int32)? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "setns") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()

    private static func address(_ dotted: String, _ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(dotted)
        return address
    }

    /// Joins multicast `group` on the socket's interface, to hear the agents' datagrams.
    func join(group: String) {
        var request = ip_mreq(imr_multiaddr: in_addr(s_addr: inet_addr(group)), imr_interface: interface)
        setsockopt(descriptor, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size))
    }

    func send(_ bytes: [UInt8], to host: String, port: UInt16) {
        var target = LANSocket.address(host, port)
        _ = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// The datagrams that arrive within `seconds`, each as bytes.
    func received(within seconds: Double) -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while Date() < deadline {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count > 0 { datagrams.append(Array(buffer[0..<count])) }
        }
        return datagrams
    }
}

/// Sends raw datagrams to the default group address on loopback, as a hostile or broken sender would.
final class GroupSender {
    private let socket: LANSocket
    private let port: UInt16

    init(port: UInt16) throws {
        socket = try LANSocket()
        self.port = port
    }

    func send(_ payload: [UInt8]) { socket.send(payload, to: "239.255.77.1", port: port) }
}

extension AgentProcess {
    /// A number in the agent's `status` counters, by path (`"drops", "badTag"`); 0 when absent.
    func counter(_ path: String...) -> Int {
        var value: Any? = status()?["counters"]
        for key in path { value = (value as? [String: Any])?[key] }
        return (value as? NSNumber)?.intValue ?? 0
    }

    /// Stops the agent (SIGSTOP) for `seconds`, lets it go (SIGCONT) and waits `settle` seconds;
    /// returns the `peer-left` events it printed meanwhile.
    func stall(seconds: Double, settle: Double) -> [AgentEvent] {
        let mark = allEvents.count
        signal(SIGSTOP)
        usleep(UInt32(seconds * 1e6))
        signal(SIGCONT)
        usleep(UInt32(settle * 1e6))
        return allEvents[mark...].filter { $0.name == "peer-left" }
    }

    /// The member (id and incarnation) an agent's `status` or `session` event names.
    func member(of event: AgentEvent?) -> Member? {
        guard let id = (event?["peer"] as? String).flatMap({ PeerID(hex: $0) }),
            let incarnation = (event?["incarnation"] as? NSNumber)?.uint32Value
        else { return nil }
        return Member(id: id, incarnation: Incarnation(incarnation))
    }
}
