// swift-tools-version: 6.0
// coplay: serverless media playback sync over LAN multicast. No package dependencies by design.
// The agent runs on Linux (see Sources/CoplayRuntime/Shell/Platform.swift); CoplayCore is portable Swift.
import PackageDescription

let package = Package(
    name: "coplay",
    products: [
        .executable(name: "coplay", targets: ["coplay"]),
        .executable(name: "coplay-bench", targets: ["coplay-bench"]),
        .library(name: "CoplayCore", targets: ["CoplayCore"]),
    ],
    targets: [
        // The protocol as pure value types: no sockets, no threads, no clocks.
        // README.md: the contract a shell carries out. The browser module (Sources/CoplayWeb) is
        // built by Tools/wasm-core with Embedded Swift, not by SwiftPM.
        .target(
            name: "CoplayCore", exclude: ["README.md"],
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        // The simulated player, on the far side of the core's player boundary (PlayerCommand in,
        // PlayerReport out); mpv and the delegating socket player are in CoplayRuntime/Players.
        .target(name: "CoplaySimulatedPlayer", dependencies: ["CoplayCore"]),
        // The shell: sockets, timers, stdin/stdout; the only code that reads real time.
        .target(name: "CoplayRuntime", dependencies: ["CoplayCore", "CoplaySimulatedPlayer"]),
        // Seeded network and clock simulation driving many core instances.
        .target(name: "CoplaySimulation", dependencies: ["CoplayCore", "CoplaySimulatedPlayer"]),
        // Drives real `coplay` processes (benchmarks, integration tests); may use Foundation.
        .target(name: "CoplayHarness"),
        // The agent. It links no Foundation, which would add ~8 MB of resident memory, and on Linux
        // the Swift runtime statically: one binary that needs only the C libraries, and a process
        // start of 3 ms of CPU rather than 7 (64 agents started together form ~130 ms sooner).
        .executableTarget(
            name: "coplay", dependencies: ["CoplayCore", "CoplayRuntime"],
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(platforms: [.linux]))]),
        .executableTarget(
            name: "coplay-bench", dependencies: ["CoplayCore", "CoplayHarness", "CoplaySimulation", "CoplayRuntime"]),
        .testTarget(name: "CoplayCoreTests", dependencies: ["CoplayCore"]),
        .testTarget(
            name: "CoplaySimulationTests", dependencies: ["CoplayCore", "CoplaySimulatedPlayer", "CoplaySimulation"]),
        .testTarget(name: "CoplayRuntimeTests", dependencies: ["CoplayCore", "CoplayRuntime"]),
        // Runs the `coplay` and `coplay-bench` binaries, which `swift test` builds with everything
        // else. It does not depend on their targets: a test bundle that links an executable target
        // takes its linker settings, and no static Testing or XCTest library exists.
        .testTarget(
            name: "CoplayIntegrationTests",
            dependencies: ["CoplayCore", "CoplayRuntime", "CoplayHarness"]),
    ],
    swiftLanguageModes: [.v6]
)
