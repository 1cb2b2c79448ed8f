// coplay-bench: real coplay agents on loopback, measured; prints figures, decides nothing.
import CoplayCore
import CoplayHarness
import CoplaySimulation
import Foundation

let usage = """
    coplay-bench — measure coplay agents on loopback and print figures

    Usage: coplay-bench membership|clock|overhead|sync|players|flood|plots|all [--agents N] [--rounds N] [--seconds N]
                        [--coplay PATH] [--svg DIR]
           coplay-bench players --player vlc,kodi [--json] [--seconds S] [--rounds N]
           coplay-bench scale [--sizes N,…] [--seconds S] [--settle S] [--svg DIR]
           coplay-bench latejoin [--histories H,…]
           coplay-bench session [--seconds S] [--per-second N]
           coplay-bench burst [--commands N]
           coplay-bench soak [--seeds N] [--large-groups N]
           coplay-bench tag
           coplay-bench wifi [--hosts N,…] [--links wired,wifi,wan] [--dtim 1-3] [--trials N] [--seconds S] [--svg DIR]
                             [--coplay-only] [--floor-only]
           coplay-bench relay [--trials N] [--seconds S]
           coplay-bench queue [--trials N]
           coplay-bench hub --ports P1,P2,… --link wired|wifi|wan [--dtim 1-3] [--seed N] [--seconds S]
           coplay-bench cost [--agents N]
           coplay-bench startloss [--seeds N] [--loss PERCENT]
           coplay-bench browser [--runs N] [--crowd N] [--hidden-seconds S] [--engine chromium|firefox|webkit|all|LIST]
                            [--coplay PATH]
           coplay-bench stall [--runs N] [--starved-seconds S] [--link wired|wifi|wan] [--live] [--coplay PATH]
           coplay-bench live [--runs N] [--players 2|3] [--gap S] [--coplay PATH]
           coplay-bench party [--runs N] [--coplay PATH]
           coplay-bench hiccup [--runs N] [--seconds S] [--coplay PATH]
           coplay-bench fingerprint [--gib N] [--runs N] [--dir DIR]
           coplay-bench homes [--trials N] [--seconds S] [--coplay PATH]
           coplay-bench party-scale [--sizes N,…] [--sites 1-3] [--seconds S] [--seed N]
      membership  discovery, graceful leave and crash detection against N resident agents, R rounds
      clock       clock-offset error of N agents skewed across ±500 ms, polled for S seconds
      overhead    bytes sent, CPU and memory of N idle agents over S seconds
      sync        sync error after coordinated starts among N skewed agents, and pause propagation, R rounds
      players     two headless mpv under coplay (needs mpv and ffmpeg): steady offset between them over S
                  seconds, pause pressed in mpv A → mpv B paused (R rounds), recovery after a 200 ms stop of mpv B;
                  --player vlc,kodi: VLC 3 and/or Kodi beside mpv instead, an agent each (vlc: vlc-bin; root runs
                  it as nobody with setpriv; kodi: kodi, xvfb, pulseaudio), and VLC under Syncplay in a namespace
                  with Debian's syncplay and syncplay-server (root): each player's clock − mpv's over S seconds,
                  its pause key → mpv paused, the start spread after a pause, its clock floor; --json prints
                  them as one object ({"players": {"vlc": …, "kodi": …, "syncplay-vlc": …}}) on stdout
      flood       3 agents in a private network namespace (root) flooded with --rate N datagrams/s (default 20000;
                  junk and hellos of invented peers) for S seconds: honest pause delays, memory against idle, counters
      scale       N agents started at once in a private network namespace (root), for N in --sizes (default
                  8,16,32,64): all see all, first clock offset, pause propagation, group CPU idle and busy (S s idle,
                  from --settle s after the group formed, default 8), datagrams received and bytes sent per agent,
                  CPU per received datagram beside the floor (a bare poll-and-recvmsg receiver joined to the group
                  in the same window), memory; with --svg DIR also scale-cost.svg
      latejoin    2 agents build a history of H commands for H in --histories (default 10,1000,100000), then a
                  third joins: time until it is on the group's state (bounded: 25 s); with --svg DIR also late-join.svg
      session     a long session: 3 agents issue --per-second N commands a second (default 1; pauses, seeks,
                  messages) for S seconds; prints each agent's memory every tenth, and whether they agree at the end
      burst       --commands N (default 5000) written at once to 3 agents: time from the last one until all hold
                  the same commands and position (bounded: 60 s; exit 1 if they do not converge)
      plots       sync, players, latejoin and scale (root), each writing its figures as SVG plots into --svg DIR:
                  pause-propagation.svg, sync-error.svg (beside Syncplay's when measured), players-pause.svg,
                  late-join.svg and scale-cost.svg
      soak        the soak tier: N seeded membership and N seeded playback simulations (default 2000 each), N/10
                  replication simulations (histories up to 3,000 commands, late joiners, crashes), N/10 fuzz runs
                  and --large-groups runs of 64 to 256 agents, starved and paused ones among them (default N/1000,
                  at least 5); prints seeds per minute and every failing seed with the command that replays it; exit 1 on a failure;
                  soak --trace SEED NODE replays one playback seed and prints that node's deliveries and events
      wifi        N hosts (--hosts, default 3,8) of a test LAN behind its forwarding hub, for each link model
                  (--links, default wired,wifi; wifi with --dtim, default 1), one headless mpv on every host: coplay
                  agents, then Debian's Syncplay (server on host 1, clients on the others) when installed; steady
                  offsets between the players for S seconds, pause and unpause set in one mpv → the others following
                  (--trials, default 20), false departures and lost commands; with --svg DIR also wifi-pause.svg
                  (root; needs mpv, ffmpeg and ethtool). First, the link model's floor for a pause: an ideal
                  protocol's one frame from the pressing host to each other, on the same model (--floor-only: that
                  alone, no root needed). --coplay-only leaves Syncplay out
      party-scale participants reaching each other only through a NATS cluster (tabs, homes), in the seeded
                  simulation, for N in --sizes (default 16,64,128; at most 256): time until all see all, the idle
                  cost (NATS deliveries a second, bytes each participant receives and publishes) over S seconds
                  (default 10), and a pause from one to all
      relay       two sites of a test LAN on the wan model (20 ms one way; no multicast between them), a
                  nats-server at each, clustered: the other site seen after an agent starts, idle relay traffic per
                  agent, a headless mpv at each site (offsets for S seconds, pause and unpause across, --trials,
                  default 20), and fail-over when the connected server is killed (time, commands lost)
                  (root; needs mpv, ffmpeg, ethtool and nats-server)
      queue       3 agents on loopback, one headless mpv each (needs mpv and ffmpeg), play a queue through: the last
                  player's end of an item → every player playing the next, and next typed into one agent or > pressed
                  in one mpv → every player playing the next item (--trials, default 20, each)
      hub         the forwarding hub of a test LAN with a link model (Tools/lan up N --link …; root, inside the
                  LAN's hub namespace): forwards the frames of the hub's veth ends P1,P2,… with the delays and losses
                  of the wired, wifi (one access point; DTIM period 1-3) or wan (two sites) model, for at most S
                  seconds (default 3600) or until SIGTERM; then prints its counters
      tag         the cost of the group key: signing and verifying a datagram of 100, 400 and 1200 bytes
      startloss   coordinated starts of 3 simulated agents losing --loss PERCENT (default 30) of datagrams, 10 per
                  seed for --seeds N (default 100): press to all playing, p50/p90/p99; exit 1 if one never starts
      browser     the browser participant (root; needs chromium, mpv, ffmpeg, nats-server, node, zbarimg): --runs N
                  (default 3) runs of Tools/web/browser-check, a headless Chromium tab with two agents, one
                  driving mpv: the tab's media clock and frames against mpv, pause and play both ways, Join to
                  playing, a tab frozen 8 s, the first run's tab hidden --hidden-seconds S (default 300) behind
                  another; in each --engine (chromium, firefox, webkit, a comma list or all: side by side);
                  then --crowd N (default 100; 0: none) participants of the page's shell in one node with two
                  agents (Tools/web/crowd.mjs): pause and seek to all, a late joiner; and the module's size
      stall       a participant starved by a real network (root; needs mpv, ffmpeg, nft): 3 hosts of a test LAN, host
                  1 serving a 470 kbit/s file over HTTP (coplay web), hosts 2 and 3 playing it in headless mpv under
                  coplay; host 3's download limited to 16 kB/s by nft until --starved-seconds S (default 4) after its
                  mpv paused for its cache, --runs N times (default 3): the stall seen and suspended, the other
                  player never paused nor sent a command, back in sync after the cache refilled, |A-B| after;
                  --link puts the hosts behind the forwarding hub's link model instead of a bridge; --live plays a
                  live HLS stream (ffmpeg on host 1, 1 s segments with program dates) instead of the file
      live        players joining one live stream (root; needs mpv, ffmpeg): host 1 of a test LAN encodes a live HLS
                  stream (ffmpeg, 1 s segments with program dates) and serves it (python3's http.server); --players N (default
                  2) headless mpv under coplay join it --gap S (default 10) seconds apart, --runs N times (default
                  3): |A-B| of the stream's own media times, join to playing, the group behind the playlist's edge
      party       coplay party on loopback (needs nats-server): --runs N (default 5) starts, the link printed and
                  nats-server gone after a SIGKILL; then its web server as a media server: a 4 GiB sparse film (its
                  end, beyond it), three readers of 1 GiB ranges at once (MB/s, the party's RSS), paths outside what
                  was named, a 9 KB head, 1,000 idle connections while the page loads, a reader that stops reading
                  (closed after 10 s idle); Ctrl-C: exit status and what is left
      hiccup      players that hiccup (root; needs mpv, ffmpeg): two agents with headless mpv on a namespace's
                  loopback play a clip after one typed play, for S seconds (default 180) with two busy loops and
                  each mpv stopped (SIGSTOP) 50-600 ms every 0.5-2 s, --runs N times (default 10): the group
                  commands either agent issued that nobody typed (exit 1 if any), each mpv's speed and pause
                  after, |A-B| after
      fingerprint a film known by its content: a file of --gib N GiB (default 4) written in --dir (default
                  the temporary folder; needs that much free space), fingerprinted --runs N times (default 10)
                  with its pages dropped from the page cache before each, then from the cache; a 50 GiB sparse
                  file; removes both
      homes       across homes (root; needs mpv, ffmpeg, caddy, nats-server, tcpdump, tshark, nft): a hub
                  (coplay hub --tls internal) and two homes behind NATs on the wan model, home A a party
                  with mpv, home B coplay join of its link for anywhere with mpv and its own copy under
                  another name (--media): the hub's start, |A-B|, pause A → B (--trials N, default 10,
                  over --seconds S, default 10), what a capture at the hub reads in clear, the hub killed
                  and started again; then a hub with --domain (its certificate from pebble, an ACME CA of
                  the test's own; needs pebble, openssl) and two homes behind real NATs, home B playing
                  its own copy of the hub's film
      cost        CPU per received datagram, by type, in one agent's core among N agents (default 64; no sockets)
      --agents N (2-64, default 4), --rounds N (default 10), --seconds N (default 10)
      --coplay PATH  the agent to measure (default: the coplay built beside this program)
      --svg DIR      sync and players also write their figures as SVG plots into DIR
    Build in release mode for meaningful figures: swift build -c release
    """

/// A comma-separated list of whole numbers, each in `range`.
func numbers(_ text: String, in range: ClosedRange<Int>, _ what: String, _ example: String) -> [Int] {
    let words = text.split(separator: ",")
    let values = words.compactMap { Int($0) }
    guard !values.isEmpty, values.count == words.count, values.allSatisfy(range.contains) else {
        fail("\(what) from \(range.lowerBound) to \(range.upperBound) separated by commas, e.g. \(example)")
    }
    return values
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("coplay-bench: \(message)\nTry 'coplay-bench --help'.\n".utf8))
    exit(2)
}

/// This program's own path, and the coplay beside it (every benchmark's default `--coplay`).
let ownPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
let coplayBeside = URL(fileURLWithPath: ownPath).deletingLastPathComponent().appendingPathComponent("coplay").path

/// Runs one benchmark and exits: 0 when it ran, 1 with what went wrong.
func measure(_ body: () throws -> Void) -> Never {
    do {
        try body()
        exit(0)
    } catch {
        print("bench failed: \(error)")
        exit(1)
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())[...]
guard let kind = arguments.popFirst(), kind != "--help", kind != "-h" else {
    print(usage)
    exit(0)
}
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
if kind == "hub" { runHub(Array(arguments)) }
if kind == "wifi" {
    var options = Benchmarks.Options(
        kind: kind, rounds: 20, agents: 3, seconds: 10,
        executable: coplayBeside)
    var (hosts, links, dtim) = ([3, 8], ["wired", "wifi"], 1)
    var floorOnly = false
    while let flag = arguments.popFirst() {
        if flag == "--floor-only" || flag == "--coplay-only" {
            if flag == "--floor-only" { floorOnly = true } else { options.coplayOnly = true }
            continue
        }
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--hosts": hosts = numbers(value, in: 2...16, "--hosts takes host counts", "3,8")
        case "--links":
            links = value.split(separator: ",").map(String.init)
            guard !links.isEmpty, links.allSatisfy({ ["wired", "wifi", "wan"].contains($0) }) else {
                fail("--links takes wired, wifi and wan, comma-separated")
            }
        case "--dtim":
            guard let period = Int(value), (1...3).contains(period) else { fail("--dtim takes 1, 2 or 3") }
            dtim = period
        case "--trials": options.rounds = numbers(value, in: 1...1000, "--trials takes a count", "20")[0]
        case "--seconds": options.seconds = numbers(value, in: 1...3600, "--seconds takes a duration", "10")[0]
        case "--coplay": options.executable = value
        case "--svg": options.svgDirectory = value
        default:
            fail(
                "unknown option '\(flag)' for wifi (--hosts, --links, --dtim, --trials, --seconds, --coplay, --svg, --coplay-only, --floor-only)"
            )
        }
    }
    LinkFloor.report(links: links, hosts: hosts, dtim: dtim)
    if floorOnly { exit(0) }
    measure {
        try Benchmarks.wifi(
            options, hostCounts: hosts, links: links, dtim: dtim, trials: options.rounds, bench: ownPath)
    }
}
if kind == "hiccup" {
    var coplay = coplayBeside
    var (runs, seconds) = (10, 180)
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--runs": runs = numbers(value, in: 1...100, "--runs takes a count", "10")[0]
        case "--seconds": seconds = numbers(value, in: 10...3600, "--seconds takes a duration", "180")[0]
        case "--coplay": coplay = value
        default: fail("unknown option '\(flag)' for hiccup (--runs, --seconds, --coplay)")
        }
    }
    measure { try Benchmarks.hiccup(executable: coplay, runs: runs, seconds: seconds) }
}
if kind == "homes" {
    var coplay = coplayBeside
    var (trials, seconds) = (10, 10)
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--trials": trials = numbers(value, in: 1...100, "--trials takes a count", "10")[0]
        case "--seconds": seconds = numbers(value, in: 2...600, "--seconds takes a duration", "10")[0]
        case "--coplay": coplay = value
        default: fail("unknown option '\(flag)' for homes (--trials, --seconds, --coplay)")
        }
    }
    measure {
        Benchmarks.printHomes(
            try Benchmarks.homes(executable: coplay, bench: ownPath, trials: trials, seconds: seconds))
        Benchmarks.printHubDomain(try Benchmarks.hubDomain(executable: coplay, bench: ownPath))
    }
}
if kind == "fingerprint" {
    var (gib, runs, directory) = (4, 10, FileManager.default.temporaryDirectory.path)
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--gib": gib = numbers(value, in: 1...64, "--gib takes a size in GiB", "4")[0]
        case "--runs": runs = numbers(value, in: 1...100, "--runs takes a count", "10")[0]
        case "--dir": directory = value
        default: fail("unknown option '\(flag)' for fingerprint (--gib, --runs, --dir)")
        }
    }
    measure { try FingerprintCost.run(gib: gib, runs: runs, directory: directory) }
}
if kind == "relay" {
    var options = Benchmarks.Options(
        kind: kind, rounds: 20, agents: 2, seconds: 10,
        executable: coplayBeside)
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--trials": options.rounds = numbers(value, in: 1...1000, "--trials takes a count", "20")[0]
        case "--seconds": options.seconds = numbers(value, in: 1...3600, "--seconds takes a duration", "10")[0]
        case "--coplay": options.executable = value
        default: fail("unknown option '\(flag)' for relay (--trials, --seconds, --coplay)")
        }
    }
    measure {
        try Benchmarks.relay(options, trials: options.rounds, bench: ownPath)
    }
}
if kind == "queue" {
    var options = Benchmarks.Options(
        kind: kind, rounds: 20, agents: 3, seconds: 10,
        executable: coplayBeside)
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--trials": options.rounds = numbers(value, in: 1...200, "--trials takes a count", "20")[0]
        case "--coplay": options.executable = value
        default: fail("unknown option '\(flag)' for queue (--trials, --coplay)")
        }
    }
    measure {
        try Benchmarks.queue(options, trials: options.rounds)
    }
}
if kind == "stall" {
    var coplay = coplayBeside
    var runs = 3
    var starved = 4
    var link: String?
    var live = false
    while let flag = arguments.popFirst() {
        if flag == "--live" {
            live = true
            continue
        }
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--runs": runs = numbers(value, in: 1...50, "--runs takes a count", "3")[0]
        case "--starved-seconds":
            starved = numbers(value, in: 1...60, "--starved-seconds takes a duration", "4")[0]
        case "--link":
            guard ["wired", "wifi", "wan"].contains(value) else { fail("--link takes wired, wifi or wan") }
            link = value
        case "--coplay": coplay = value
        default: fail("unknown option '\(flag)' for stall (--runs, --starved-seconds, --link, --live, --coplay)")
        }
    }
    measure {
        try Benchmarks.stall(executable: coplay, runs: runs, starvedSeconds: Double(starved), link: link, live: live)
    }
}
if kind == "live" {
    var coplay = coplayBeside
    var runs = 3
    var players = 2
    var gap = 10
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--runs": runs = numbers(value, in: 1...50, "--runs takes a count", "3")[0]
        case "--players": players = numbers(value, in: 2...3, "--players takes 2 or 3", "2")[0]
        case "--gap": gap = numbers(value, in: 1...60, "--gap takes seconds", "10")[0]
        case "--coplay": coplay = value
        default: fail("unknown option '\(flag)' for live (--runs, --players, --gap, --coplay)")
        }
    }
    measure { try Benchmarks.live(executable: coplay, runs: runs, players: players, gap: Double(gap)) }
}
if kind == "browser" {
    var coplay = coplayBeside
    var runs = 3
    var crowd = 100
    var hidden = 300
    var engines = ["chromium"]
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--runs": runs = numbers(value, in: 1...50, "--runs takes a count", "3")[0]
        case "--crowd": crowd = numbers(value, in: 0...400, "--crowd takes a count", "100")[0]
        case "--hidden-seconds": hidden = numbers(value, in: 1...3600, "--hidden-seconds takes a duration", "300")[0]
        case "--coplay": coplay = value
        case "--engine":
            let known = ["chromium", "firefox", "webkit"]
            let named = value == "all" ? known : value.split(separator: ",").map(String.init)
            guard !named.isEmpty, named.allSatisfy(known.contains), Set(named).count == named.count else {
                fail(
                    "--engine takes chromium, firefox, webkit, a list of them (chromium,webkit) or all, not '\(value)'")
            }
            engines = named
        default: fail("unknown option '\(flag)' for browser (--runs, --crowd, --hidden-seconds, --engine, --coplay)")
        }
    }
    measure {
        try Benchmarks.browser(coplay: coplay, runs: runs, crowd: crowd, hiddenSeconds: hidden, engines: engines)
    }
}
if kind == "party" {
    var coplay = coplayBeside
    var runs = 5
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
        switch flag {
        case "--runs": runs = numbers(value, in: 1...50, "--runs takes a count", "5")[0]
        case "--coplay": coplay = value
        default: fail("unknown option '\(flag)' for party (--runs, --coplay)")
        }
    }
    measure { try Benchmarks.party(coplay: coplay, runs: runs) }
}
if kind == "tag" {
    // Sign and verify datagrams of three sizes, many times; the best of five rounds per size.
    let keys = GroupKeys(keys: [[UInt8](repeating: 0x42, count: 32)], session: SessionID(name: "bench"))
    for size in [100, 400, 1200] {
        let payload = Payload.end(reason: String(repeating: "x", count: min(128, max(0, size - 60))))
        var datagram = Datagram(
            session: SessionID(name: "bench"), sender: Member(id: PeerID(1), incarnation: Incarnation(1)), sequence: 1,
            payload: payload)
        if size > 200 {
            datagram.payload = .unreliableMessage(
                MessagePart(
                    messageID: 1, index: 0, count: 1, recipients: [datagram.sender],
                    bytes: [UInt8](repeating: 0x61, count: size - 34 - 16 - 30)))
        }
        var best = (sign: Double.infinity, verify: Double.infinity)
        var bytes: [UInt8] = []
        for _ in 0..<5 {
            let rounds = 20_000
            var start = ContinuousClock.now
            for sequence in 0..<rounds {
                datagram.sequence = UInt32(sequence + 1)
                bytes = WireFormat.encode(datagram, signedWith: keys)
            }
            let signSeconds = (ContinuousClock.now - start) / .seconds(1)
            start = ContinuousClock.now
            var valid = 0
            for _ in 0..<rounds where keys.verifies(bytes) { valid += 1 }
            let verifySeconds = (ContinuousClock.now - start) / .seconds(1)
            precondition(valid == rounds, "a tag did not verify")
            best = (min(best.sign, signSeconds / Double(rounds)), min(best.verify, verifySeconds / Double(rounds)))
        }
        print(
            "tag, \(bytes.count)-byte datagram: encode+sign \(String(format: "%.2f", best.sign * 1e6)) µs, verify \(String(format: "%.2f", best.verify * 1e6)) µs"
        )
    }
    exit(0)
}
if kind == "cost" {
    var members = 63
    while let flag = arguments.popFirst() {
        guard flag == "--agents", let value = arguments.popFirst().flatMap({ Int($0) }), (2...256).contains(value)
        else { fail("cost takes --agents N (2-256): the group's size") }
        members = value - 1
    }
    DatagramCost.run(members: members)
    exit(0)
}
if kind == "startloss" {
    // Coordinated starts of 3 simulated agents on a network losing 30% of datagrams.
    var seeds = 100
    var loss = 0.3
    while let flag = arguments.popFirst() {
        switch (flag, arguments.popFirst()) {
        case ("--seeds", let value?): seeds = numbers(value, in: 1...100_000, "--seeds takes a count", "100")[0]
        case ("--loss", let value?):
            guard let percent = Int(value), (0...90).contains(percent) else {
                fail("--loss takes a percentage, 0 to 90")
            }
            loss = Double(percent) / 100
        default: fail("startloss takes --seeds N and --loss PERCENT")
        }
    }
    let began = ContinuousClock.now
    var delays: [Double] = []
    var missed = 0
    for seed in 0..<seeds {
        for delay in StartUnderLoss.run(seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15, loss: loss, rounds: 10) {
            if let delay { delays.append(delay) } else { missed += 1 }
        }
    }
    delays.sort()
    func percentile(_ p: Double) -> Double {
        delays.isEmpty ? .nan : delays[min(delays.count - 1, Int(p * Double(delays.count)))]
    }
    print(
        "startloss: \(seeds) seeds × 10 coordinated starts of 3 simulated agents, \(Int(loss * 100))% of datagrams lost "
            + "(\(String(format: "%.0f", (ContinuousClock.now - began) / .seconds(1))) s)")
    print(
        String(
            format:
                "  press to all three playing: p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms; %d of %d not within 5 s",
            percentile(0.5) * 1000, percentile(0.9) * 1000, percentile(0.99) * 1000, (delays.last ?? .nan) * 1000,
            missed, delays.count + missed))
    exit(missed == 0 ? 0 : 1)
}
if kind == "flood-sender" {
    // The flooding half of `flood`, started by it inside its namespace.
    guard arguments.count == 4, let port = UInt16(arguments[arguments.startIndex]),
        let rate = Int(arguments[arguments.startIndex + 1]), (1...200_000).contains(rate),
        let seconds = Int(arguments[arguments.startIndex + 2]), (1...120).contains(seconds)
    else { fail("flood-sender takes PORT RATE SECONDS SESSION") }
    FloodSender.run(port: port, rate: rate, seconds: seconds, session: arguments[arguments.startIndex + 3])
}
if kind == "bare-receiver" {
    // The floor under an agent's cost per datagram, started by `scale` inside its namespace.
    var group = in_addr()
    guard arguments.count == 3, inet_pton(AF_INET, arguments[arguments.startIndex], &group) == 1,
        let port = UInt16(arguments[arguments.startIndex + 1]),
        let seconds = Int(arguments[arguments.startIndex + 2]), (1...600).contains(seconds)
    else { fail("bare-receiver takes GROUP PORT SECONDS (an IPv4 multicast address)") }
    BareReceiver.run(group: group, port: port, seconds: seconds)
}
if kind == "party-scale" {
    var sizes = [16, 64, 128]
    var sites = 3
    var seconds = 10
    var seed: UInt64 = 1
    var stage = 32
    var shapes = ["today", "stage"]
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(flag) takes a value") }
        switch flag {
        case "--sizes": sizes = numbers(value, in: 2...20_000, "--sizes takes participant counts", "16,64")
        case "--sites": sites = numbers(value, in: 1...3, "--sites takes 1, 2 or 3", "3")[0]
        case "--seconds": seconds = numbers(value, in: 1...600, "--seconds takes a duration", "10")[0]
        case "--stage": stage = numbers(value, in: 2...256, "--stage takes the stage's size", "32")[0]
        case "--shapes":
            shapes = value.split(separator: ",").map(String.init)
            let known = ["today", "stage", "seats", "seats-nohost"]
            guard !shapes.isEmpty, shapes.allSatisfy({ known.contains($0) }) else {
                fail("--shapes takes today, stage, seats or seats-nohost, or several (today,stage)")
            }
        case "--seed":
            guard let number = UInt64(value) else { fail("--seed takes a whole number") }
            seed = number
        default: fail("unknown option '\(flag)' for party-scale")
        }
    }
    print(
        "party-scale (seeded simulation): participants reaching each other only through a NATS cluster, \(sites)"
            + " site\(sites == 1 ? "" : "s")" + (sites > 1 ? " 20 ms apart" : "")
            + ", one server at each; idle \(seconds) s, then a pause. Today's shape: every participant a peer of"
            + " every other (at most 256); the stage shape: a stage of \(stage), the rest viewers; seats: everyone"
            + " asks for one of the stage's 32 seats (the default), a named host first (seats-nohost: none)")
    func rate(_ value: Double) -> String { String(Int(value.rounded())) }
    for size in sizes {
        for shape in shapes {
            if shape == "today", size > 256 { continue }
            if shape.hasPrefix("seats") {
                let figures = PartyScale.seats(participants: size, sites: sites, seed: seed, host: shape == "seats")
                print(
                    "  \(size) participants, seats\(shape == "seats" ? " (a named host)" : " (no host)"):"
                        + " formed after \(figures.formedSeconds.map { "\($0) s" } ?? "not within 60 s"),"
                        + " \(figures.seated) on the stage (at most \(figures.seatedMost) at any time),"
                        + " \(figures.granted) seats granted, \(figures.seatedThemselves) taken by viewers that heard no stage"
                        + (figures.eventBudgetRanOut
                            ? " (the simulation ran out of its event budget: not to be trusted)" : ""))
                print(
                    "    then a pause on a seated participant → the others paused: \(Distribution(figures.pause).summary(unit: "ms")),"
                        + " never: \(figures.pauseLost) (simulated in \(String(format: "%.1f", figures.simulatedIn)) s)"
                )
                continue
            }
            let figures = PartyScale.run(
                participants: size, sites: sites, idleSeconds: seconds, seed: seed,
                stage: shape == "stage" ? stage : nil)
            let pause = Distribution(figures.pause)
            let formed = figures.formedSeconds.map { "\($0) s" } ?? "not within 60 s"
            print(
                "  \(size) participants, \(shape == "today" ? "today's shape" : "stage of \(min(stage, size))"):"
                    + " all following after \(formed)"
                    + (figures.eventBudgetRanOut
                        ? " (the simulation ran out of its event budget: not to be trusted)" : ""))
            print(
                "    idle: \(rate(figures.idleDeliveriesPerSecond)) NATS deliveries/s, the whole group"
                    + " (\(String(format: "%.2f", figures.idleDeliveriesPerSecond / Double(size))) × N); per participant"
                    + " \(rate(figures.idleBytesInPerParticipant)) B/s in, \(rate(figures.idleBytesOutPerParticipant)) B/s out"
            )
            if let viewerIn = figures.viewerBytesIn, let viewerOut = figures.viewerBytesOut {
                print(
                    "    per viewer: \(rate(viewerIn.mean)) B/s in (most \(rate(viewerIn.max))),"
                        + " \(rate(viewerOut.mean)) B/s out (most \(rate(viewerOut.max))); per stage member"
                        + " \(rate(figures.stageBytesIn ?? 0)) B/s in, \(rate(figures.stageBytesOut ?? 0)) B/s out")
            }
            if let watching = figures.watching {
                print(
                    "    how many watch, as each participant knows it: \(watching.least)"
                        + (watching.most == watching.least ? "" : " to \(watching.most)")
                        + " (\(watching.viewers) viewers)"
                        + (watching.unknown > 0 ? ", not known yet at \(watching.unknown)" : ", at every participant"))
            }
            print(
                "    idle datagrams received a second, the whole group: "
                    + figures.idleReceivedByType.map { "\($0.type) \(rate($0.perSecond))" }.joined(separator: ", "))
            print("    sync against participant 0 while idle: \(Distribution(figures.syncErrors).summary(unit: "ms"))")
            if !figures.crashNoticed.isEmpty {
                let late = figures.crashNoticed.filter { !$0.isFinite }.count
                print(
                    "    the speaker crashes: the stage gives it up after"
                        + " \(Distribution(figures.crashNoticed.filter(\.isFinite)).summary(unit: "ms"))"
                        + (late > 0 ? ", \(late) not within 4 s" : "")
                        + "; 4 s later, sync against the stage: \(Distribution(figures.syncAfterCrash).summary(unit: "ms"))"
                )
            }
            print(
                "    then a pause on a stage member → the others paused: \(pause.summary(unit: "ms")), never: \(figures.pauseLost)"
                    + " (simulated in \(String(format: "%.1f", figures.simulatedIn)) s)")
        }
    }
    exit(0)
}
if kind == "soak" {
    var seedCount = 2000
    var largeGroups: Int?
    while let flag = arguments.popFirst() {
        switch flag {
        case "--seeds":
            guard let value = arguments.popFirst(), let number = Int(value), (1...1_000_000).contains(number) else {
                fail("--seeds takes a whole number from 1 to 1000000")
            }
            seedCount = number
        case "--large-groups":
            guard let value = arguments.popFirst(), let number = Int(value), (0...10_000).contains(number) else {
                fail("--large-groups takes a whole number from 0 to 10000")
            }
            largeGroups = number
        case "--trace":
            // One playback seed, with one node's deliveries and events printed: to study a failure.
            guard let value = arguments.popFirst(), let seed = UInt64(value),
                let node = arguments.popFirst().flatMap({ Int($0) })
            else { fail("--trace takes a seed and a node number") }
            let outcome = PlaybackScenario(seed: seed, traceNode: node).run()
            print(outcome.failures.isEmpty ? "seed \(seed): passed" : outcome.failures.joined(separator: "\n"))
            exit(outcome.failures.isEmpty ? 0 : 1)
        default: fail("unknown option '\(flag)' for soak")
        }
    }
    let result = await ScenarioRunner.soak(seedCount: seedCount, largeGroups: largeGroups)
    for line in result.failures { print(line) }
    print(result.summary)
    exit(result.failures.isEmpty ? 0 : 1)
}
guard
    [
        "membership", "clock", "overhead", "sync", "players", "flood", "scale", "latejoin", "session", "burst", "plots",
        "all",
    ]
    .contains(kind)
else {
    fail("unknown measurement '\(kind)'")
}
var options = Benchmarks.Options(
    kind: kind, rounds: 10, agents: 4, seconds: 10,
    executable: coplayBeside)
while let flag = arguments.popFirst() {
    if flag == "--json", kind == "players" {
        options.json = true
        continue
    }
    guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
    switch flag {
    case "--coplay": options.executable = value
    case "--svg": options.svgDirectory = value
    case "--player" where kind == "players":
        options.players = value.split(separator: ",").map(String.init)
        guard !options.players.isEmpty, options.players.allSatisfy({ ["vlc", "kodi"].contains($0) }) else {
            fail("--player takes vlc, kodi or vlc,kodi (the players measured beside mpv)")
        }
    case "--histories":
        options.histories = numbers(value, in: 2...1_000_000, "--histories takes history lengths", "10,1000,100000")
    case "--sizes":
        options.scaleSizes = numbers(value, in: 2...64, "--sizes takes group sizes", "8,16,32,64")
    case "--commands":
        options.burstCommands = numbers(value, in: 1...1_000_000, "--commands takes a count", "5000")[0]
    case "--per-second":
        guard let number = Int(value), (1...1000).contains(number) else {
            fail("--per-second takes commands a second from 1 to 1000")
        }
        options.commandsPerSecond = number
    case "--rate":
        guard let number = Int(value), (1...200_000).contains(number) else {
            fail("--rate takes datagrams a second from 1 to 200000")
        }
        options.rate = number
    case "--settle":
        guard let number = Int(value), (0...600).contains(number) else {
            fail("--settle takes seconds from 0 to 600")
        }
        options.settleSeconds = number
    case "--agents", "--rounds", "--seconds":
        let limit = flag == "--seconds" ? 86_400 : 1000  // a day: the long session
        guard let number = Int(value), (1...limit).contains(number) else {
            fail("\(flag) takes a whole number from 1 to \(limit)")
        }
        if flag == "--agents" {
            options.agents = number
        } else if flag == "--rounds" {
            options.rounds = number
        } else {
            options.seconds = number
        }
    default: fail("unknown option '\(flag)'")
    }
}
guard (2...64).contains(options.agents) else { fail("--agents takes 2 to 64") }
if options.json, options.players.isEmpty { fail("--json goes with --player (players --player vlc --json)") }
if kind == "plots", options.svgDirectory == nil { fail("plots needs --svg DIR (where to write the plots)") }
guard FileManager.default.isExecutableFile(atPath: options.executable) else {
    fail("no coplay executable at \(options.executable)")
}
exit(Benchmarks.run(options))
