import CoplayHarness
import Foundation
import Glibc

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let coplay = Locations.coplayExecutable(packageRoot: packageRoot)
let lanTool = packageRoot.appendingPathComponent("Tools/lan").path
let isRoot = getuid() == 0

/// A group port of this test process's own, so concurrent runs do not hear each other.
func privatePort(_ salt: Int) -> String { String(41_000 + Int(getpid() % 10_000) * 2 + salt) }

/// A LAN of network namespaces that exists for the duration of `body` and is always removed.
func withLAN<T>(hosts: Int, _ body: (_ prefix: String) throws -> T) throws -> T {
    let prefix = "cpi\(getpid() % 100_000)"
    let environment = ["LAN_PREFIX": prefix]
    defer { _ = try? Locations.run(lanTool, ["down"], environment: environment) }
    let (status, output) = try Locations.run(lanTool, ["up", String(hosts)], environment: environment)
    guard status == 0 else { throw LANError(description: "Tools/lan up failed: \(output)") }
    return try body(prefix)
}

struct LANError: Error, CustomStringConvertible { var description: String }
