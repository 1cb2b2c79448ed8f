import Foundation

extension Benchmarks {
    /// `coplay-bench browser`: the browser participant, measured. Runs Tools/web/browser-check
    /// `runs` times in each of `engines`, one engine after the other (printed side by side; the
    /// engine's browser in a namespace of its own with two native agents, one
    /// driving mpv, through nats-server's WebSocket listener) and pools what each run measured;
    /// then Tools/web/crowd.mjs (`crowd` participants of the page's shell in one node with two
    /// agents); then the module's size. The first run's tab is hidden behind another for
    /// `hiddenSeconds` (it must stay a member and make no group pause). Prints each figure beside its target.
    public static func browser(
        coplay: String, runs: Int, crowd: Int, hiddenSeconds: Int, engines: [String] = ["chromium"]
    ) throws {
        let root = try checkoutRoot(containing: "Tools/web/browser-check")
        let web = root + "/.build/wasm/web"
        if !FileManager.default.fileExists(atPath: web + "/coplay.wasm") {
            let (status, output) = try Locations.run(root + "/Tools/wasm-core", ["--build-only"])
            guard status == 0 else { throw BenchError(description: "Tools/wasm-core failed: \(output)") }
        }
        // Each engine's rows (label, target, figure), in one order.
        var columns: [[(String, String, String)]] = []
        for engine in engines {
            columns.append(
                try browserRows(
                    root: root, web: web, coplay: coplay, runs: runs, hiddenSeconds: hiddenSeconds, engine: engine))
        }
        var rows: [(String, String, [String])] = (columns.first ?? []).indices.map { index in
            (columns[0][index].0, columns[0][index].1, columns.map { $0[index].2 })
        }
        func ms(_ value: Double) -> String { String(format: "%.1f ms", value) }
        func shared(_ label: String, _ target: String, _ figure: String) {
            rows.append((label, target, [figure] + Array(repeating: "", count: max(0, engines.count - 1))))
        }
        if crowd > 0 {
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-crowd-\(getpid())").path
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: work) }
            let node = Locations.onPath("node") ?? "/usr/bin/node"
            let (status, output) = try Locations.run(
                node,
                [
                    "--experimental-websocket", "--no-warnings", root + "/Tools/web/crowd.mjs", coplay,
                    web + "/coplay.wasm", work, "\(crowd)",
                ])
            guard status == 0, let summary = output.split(separator: "\n").last,
                let object = try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any],
                let figures = object["figures"] as? [String: Double]
            else { throw BenchError(description: "crowd.mjs failed: \(output.suffix(2000))") }
            shared(
                "the crowd (\(crowd)): pause typed on an agent → every participant paused", "p99 ≤ 100 ms; 0 lost",
                "p50 \(ms(figures["pause-to-all-p50"] ?? .nan)), p99 \(ms(figures["pause-to-all-p99"] ?? .nan)); 0 lost"
            )
            shared(
                "the crowd: seek → every participant", "-",
                "p50 \(ms(figures["seek-to-all-p50"] ?? .nan)), p99 \(ms(figures["seek-to-all-p99"] ?? .nan))")
            shared("the crowd: a late participant playing", "≤ 1 s", ms(figures["late-joiner-to-playing"] ?? .nan))
            shared("the crowd: formed (all list all)", "-", ms(figures["crowd-formed"] ?? .nan))
        }
        let wasm = try Data(contentsOf: URL(fileURLWithPath: web + "/coplay.wasm"))
        let (_, gzipped) = try Locations.run("/bin/sh", ["-c", "gzip -9 -c '\(web)/coplay.wasm' | wc -c"])
        shared(
            "coplay.wasm", "≤ 1 MB, ≤ 350 KB gzip",
            "\(wasm.count) bytes, \(gzipped.trimmingCharacters(in: .whitespacesAndNewlines)) gzipped")
        print(
            "\nbrowser (\(engines.joined(separator: ", "))): \(runs) run(s) of Tools/web/browser-check each, loopback"
                + " inside a namespace, through nats-server")
        // One column per engine, side by side.
        let width = rows.map { $0.0.count }.max() ?? 40
        let columnWidths = engines.indices.map { column in
            max(engines[column].count, rows.map { $0.2[column].count }.max() ?? 0)
        }
        func line(_ label: String, _ cells: [String], _ target: String) -> String {
            label.padding(toLength: width, withPad: " ", startingAt: 0)
                + zip(cells, columnWidths).map { "  " + $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined()
                + (target == "-" ? "" : "  [target \(target)]")
        }
        if engines.count > 1 { print(line("", engines, "-")) }
        for (label, target, cells) in rows { print(line(label, cells, target)) }
    }

    /// One engine's `runs` of the browser check, pooled: its rows (label, target, figure).
    static func browserRows(
        root: String, web: String, coplay: String, runs: Int, hiddenSeconds: Int, engine: String
    ) throws -> [(String, String, String)] {
        var pooled: [String: [Double]] = [:]
        var single: [String: [Double]] = [:]
        for run in 1...runs {
            // The first run keeps its tab hidden `hiddenSeconds`, the others 20 s.
            let (status, output) = try Locations.run(
                root + "/Tools/web/browser-check", [coplay, web, root + "/.build/artifacts"],
                environment: ["BROWSER_HIDDEN_SECONDS": "\(run == 1 ? hiddenSeconds : 20)", "BROWSER_ENGINE": engine])
            guard let summary = output.split(separator: "\n").last(where: { $0.hasPrefix("{\"figures\"") }),
                let object = try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any]
            else {
                throw BenchError(description: "browser-check run \(run) printed no summary: \(output.suffix(2000))")
            }
            guard status == 0 else {
                throw BenchError(description: "browser-check run \(run) failed: \(output.suffix(3000))")
            }
            for (name, values) in object["samples"] as? [String: [Double]] ?? [:] {
                pooled[name, default: []] += values
            }
            for (name, value) in object["figures"] as? [String: Double] ?? [:] {
                single[name, default: []].append(value)
            }
            print("browser: run \(run) of \(runs) done")
        }
        func q(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(p * Double(sorted.count)))]
        }
        func ms(_ value: Double) -> String { String(format: "%.1f ms", value) }
        let media = (pooled["media"] ?? []).map(abs)
        let frames = (pooled["frames"] ?? []).map(abs)
        var rows: [(String, String, String)] = [
            (
                "media clock: the tab's position (60 ms of readings) against mpv's", "p50 ≤ 3 ms, p99 ≤ 10 ms",
                "p50 \(ms(q(media, 0.5))), p99 \(ms(q(media, 0.99))) (\(media.count) samples)"
            ),
            (
                "frames shown (requestVideoFrameCallback) against mpv", "p95 ≤ 17 ms",
                "p50 \(ms(q(frames, 0.5))), p95 \(ms(q(frames, 0.95))) (\(frames.count) frames)"
            ),
        ]
        for (name, label) in [
            ("pauseMpvToTab", "pause pressed in mpv → tab paused"), ("pauseTabToMpv", "pause in the tab → mpv paused"),
            ("playMpvToTab", "play pressed in mpv → tab playing"), ("playTabToMpv", "play in the tab → mpv playing"),
        ] {
            let values = pooled[name] ?? []
            rows.append(
                (
                    label, name.hasPrefix("pause") ? "p50 ≤ 15 ms, p99 ≤ 40 ms" : "-",
                    "p50 \(ms(q(values, 0.5))), p99 \(ms(q(values, 0.99))), max \(ms(values.max() ?? .nan)) (\(values.count))"
                ))
        }
        for (name, label, target) in [
            ("join-to-members-synced", "Join clicked → every member listed, clocks measured", "-"),
            ("late-join-click-to-playing", "Join clicked mid-item → the tab playing", "≤ 2 s"),
            ("late-tab-offset-p50", "that tab's offset from mpv 2.5 s later, steering by skips (p50)", "-"),
            ("late-tab-offset-p99", "… its p99, over the next 7 s", "≤ 40 ms"),
            ("skip-steering-skips-per-3s", "… skips every 3 s meanwhile (no seek loop)", "≤ 1"),
            ("seek-tab-to-mpv", "seek in the tab → mpv at the new position", "-"),
            (
                "hidden-\(hiddenSeconds)s-shown-to-in-sync",
                "a tab hidden \(hiddenSeconds) s, shown → in sync with mpv (run 1)", "≤ 2 s"
            ),
            ("frozen-8s-resumed-to-in-sync", "a tab frozen 8 s, resumed → in sync with mpv", "-"),
        ] {
            let values = single[name] ?? []
            let unit: (Double) -> String = name.hasPrefix("skip") ? { String(format: "%.2f", $0) } : ms
            // A step the engine's driver cannot take (freezing a page, outside Chromium) is said so.
            guard !values.isEmpty else {
                rows.append((label, target, "not measured: this engine's driver cannot take the step"))
                continue
            }
            rows.append((label, target, "median \(unit(q(values, 0.5))), max \(unit(values.max() ?? .nan))"))
        }
        return rows
    }

    /// The checkout this program was built in: up from its build folder to where `path` is.
    static func checkoutRoot(containing path: String) throws -> String {
        let bench =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var folder = URL(fileURLWithPath: bench).deletingLastPathComponent()
        while folder.path != "/", !FileManager.default.fileExists(atPath: folder.path + "/" + path) {
            folder.deleteLastPathComponent()
        }
        guard folder.path != "/" else { throw BenchError(description: "no \(path) above \(bench)") }
        return folder.path
    }
}
