import CoplayCore
import Foundation

/// How frames cross the link between the hosts of a test LAN: the one model that the forwarding
/// hub (`coplay-bench hub`, behind `Tools/lan up N --link …`) applies to real frames and the
/// simulation applies to its datagrams. Seeded: the same seed gives the same delays and losses.
///
/// `wired` — one switch: 100 µs plus exponential jitter of mean 50 µs a frame.
///
/// `wifi` — one access point (AP), every host a station associated with it:
/// - Every unicast frame crosses the air twice, station → AP and AP → station. Each hop takes
///   1.5 ms plus exponential jitter of mean 1 ms (contention and the rate's airtime on a busy
///   home channel); 2% of frames are held a further 20–120 ms (retries at lower rates, a
///   neighbour's burst, a scan), and 0.1% are lost after the retries give up. Each station's
///   uplink and the AP's downlink to each station is a FIFO queue per access category: a frame
///   held by retries holds the frames behind it in its category, and frames follow one another
///   at least 0.2 ms apart. WMM (802.11e's EDCA, which every Wi-Fi CERTIFIED n or later
///   station and AP runs) keeps four such queues, each contending for the air on its own, so a
///   frame marked for voice or video (DSCP CS5 and above, RFC 8325) does not wait behind a
///   best-effort frame's retries; the model keeps two, best effort and expedited.
/// - A multicast or broadcast frame goes up like a unicast one; the AP then holds it until its
///   next DTIM beacon — every 102.4 ms (a beacon interval of 100 TU) times the DTIM period, 1 to
///   3 — and sends it once, at the basic rate, unacknowledged: each station misses it on its own
///   with probability 10% (RFC 9119, sections 3.1 and 4; 5–20% is what it reports as common).
///   The beacons' phase is drawn from the seed.
///
/// `wan` — two sites (homes): the first half of the hosts at one, the rest at the other. Within
/// a site as `wired`; across, 20 ms one way plus exponential jitter of mean 1 ms, 0.5% lost,
/// and no multicast (no home router forwards it to another home). Frames on one path keep
/// their order on every link.
public enum LinkKind: String, Hashable, Sendable, CaseIterable {
    case wired, wifi, wan
}

public struct LinkModel: Sendable {
    public let kind: LinkKind
    /// Beacons between DTIM beacons (`wifi`): 1 to 3.
    public let dtimPeriod: Int
    /// How many hosts the link joins (`wan` splits them in two sites).
    public let hosts: Int

    static let wiredBase: Int64 = 100_000
    static let wiredJitterMean: Int64 = 50_000
    static let hopBase: Int64 = 1_500_000
    static let hopJitterMean: Int64 = 1_000_000
    static let retryProbability = 0.02
    static let retryDelay: ClosedRange<Int64> = 20_000_000...120_000_000
    static let lossAfterRetries = 0.001
    static let frameSpacing: Int64 = 200_000
    static let beaconInterval: Int64 = 102_400_000
    static let groupLossPerStation = 0.10
    static let wanOneWay: Int64 = 20_000_000
    static let wanJitterMean: Int64 = 1_000_000
    static let wanLoss = 0.005

    private var random: SplitMix64
    private let beaconPhase: Int64
    /// When each station's uplink, and the AP's downlink to each station, is next free (`wifi`),
    /// by access category: the key is station × 2, plus 1 when expedited.
    private var uplinkFree: [Int: Int64] = [:]
    private var downlinkFree: [Int: Int64] = [:]
    /// When the last frame on each path (sender, receiver) arrives: none overtakes it.
    private var pathFree: [Int: Int64] = [:]

    /// `hosts`: how many (indices 0 to hosts - 1). `dtimPeriod` is clamped to 1...3.
    public init(_ kind: LinkKind, hosts: Int, dtimPeriod: Int = 1, seed: UInt64) {
        self.kind = kind
        self.hosts = max(1, hosts)
        self.dtimPeriod = min(3, max(1, dtimPeriod))
        random = SplitMix64(seed: seed)
        beaconPhase = Int64(random.next() % UInt64(Self.beaconInterval))
    }

    /// The DTIM interval: how long the AP may hold a group frame.
    public var dtimInterval: Int64 { Self.beaconInterval * Int64(dtimPeriod) }

    /// The site of a host (`wan`): 0 for the first half, 1 for the rest.
    public func site(of host: Int) -> Int { host < (hosts + 1) / 2 ? 0 : 1 }

    /// When a frame that `sender` puts on the link at `now` (nanoseconds) reaches each of
    /// `receivers`; a receiver that does not get it is left out. `isGroup`: a multicast or
    /// broadcast frame. `expedited`: marked for a faster access category (`isExpedited(dscp:)`;
    /// `wifi` only: a switch and the path between sites have one queue).
    public mutating func deliver(
        from sender: Int, to receivers: [Int], isGroup: Bool, expedited: Bool = false, at now: Int64
    ) -> [(receiver: Int, at: Int64)] {
        var arrivals: [(receiver: Int, at: Int64)] = []
        switch kind {
        case .wired:
            for receiver in receivers {
                arrivals.append((receiver, ordered(sender, receiver, now + wiredDelay())))
            }
        case .wan:
            for receiver in receivers {
                if site(of: receiver) == site(of: sender) {
                    arrivals.append((receiver, ordered(sender, receiver, now + wiredDelay())))
                } else if !isGroup, random.nextUnit() >= Self.wanLoss {
                    let delay = Self.wanOneWay + exponential(mean: Self.wanJitterMean)
                    arrivals.append((receiver, ordered(sender, receiver, now + delay)))
                }
            }
        case .wifi:
            // Up to the AP: one FIFO queue per station.
            guard let atAP = hop(uplink: true, of: sender, expedited: expedited, at: now) else { return [] }
            if isGroup {
                // Held for the next DTIM beacon, then sent once; each station may miss it.
                let sinceFirst = atAP - beaconPhase
                let periods = sinceFirst <= 0 ? 0 : (sinceFirst + dtimInterval - 1) / dtimInterval
                let beacon = beaconPhase + periods * dtimInterval
                for receiver in receivers where random.nextUnit() >= Self.groupLossPerStation {
                    arrivals.append((receiver, beacon + Self.frameSpacing + exponential(mean: Self.frameSpacing)))
                }
            } else {
                for receiver in receivers {
                    guard let down = hop(uplink: false, of: receiver, expedited: expedited, at: atAP) else {
                        continue
                    }
                    arrivals.append((receiver, down))
                }
            }
        }
        return arrivals
    }

    /// One air hop through a FIFO queue: when the frame is across, or nil if lost after retries.
    /// `uplink`: the station's queue to the AP; else the AP's queue to the station; in the
    /// expedited access category's queue or best effort's.
    private mutating func hop(uplink: Bool, of station: Int, expedited: Bool, at now: Int64) -> Int64? {
        var delay = Self.hopBase + exponential(mean: Self.hopJitterMean)
        if random.nextUnit() < Self.retryProbability {
            let span = UInt64(Self.retryDelay.upperBound - Self.retryDelay.lowerBound)
            delay += Self.retryDelay.lowerBound + Int64(random.next() % span)
        }
        let queue = station * 2 + (expedited ? 1 : 0)
        let free = (uplink ? uplinkFree[queue] : downlinkFree[queue]) ?? 0
        let across = max(now + delay, free + Self.frameSpacing)
        if uplink { uplinkFree[queue] = across } else { downlinkFree[queue] = across }
        return random.nextUnit() < Self.lossAfterRetries ? nil : across
    }

    /// Whether a frame with this DSCP goes in an access category above best effort (RFC 8325's
    /// mapping: CS5 and above, voice and video; CS1 is background, the rest best effort).
    public static func isExpedited(dscp: UInt8) -> Bool { dscp >= 40 }

    private mutating func wiredDelay() -> Int64 { Self.wiredBase + exponential(mean: Self.wiredJitterMean) }

    /// `at`, or later: no frame on a path overtakes the one before it.
    private mutating func ordered(_ sender: Int, _ receiver: Int, _ at: Int64) -> Int64 {
        let path = sender * 65_536 + receiver
        let arrival = max(at, pathFree[path] ?? 0)
        pathFree[path] = arrival
        return arrival
    }

    private mutating func exponential(mean: Int64) -> Int64 {
        Int64(-log(1 - random.nextUnit()) * Double(mean))
    }
}
