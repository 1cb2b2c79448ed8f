import CoplayCore
import Glibc

/// A player that plays this machine's own copy of an item known by its content: every load of
/// an item whose id is a `Fingerprint`'s text is resolved (`OwnCopies`) before the player behind
/// it sees it, to a file of this machine that is that film, else to the item's URL, else to a
/// `cannotPlay:noCopy` that says in words what is missing. Every other command, and every item
/// known by its URL, passes through untouched.
struct OwnCopyPlayer<Inner: PlayerDriver>: PlayerDriver {
    private(set) var inner: Inner
    private var copies: OwnCopies
    /// What to tell the person (the copy played, when it is not at the item's own path).
    private var notes: [String] = []
    /// The item known by its content that was handed to the player by its URL alone (no copy
    /// here): if the player cannot reach it, that is this machine having no copy.
    private var byURL: (item: LoadedItem, fingerprint: Fingerprint)?
    /// The item this machine has no copy of, looked for again at `next` (`lookAgainEvery`): once
    /// found, the core is told (`copyFound`) and loads it again where the group is.
    private var lacking: (item: LoadedItem, fingerprint: Fingerprint, next: MonotonicInstant)?
    /// Another encode of the item this machine lacks, offered to the person (`accept`).
    private var offered: (itemID: String, path: String)?
    /// Other encodes the person accepted, by item id: played for that item from then on (at most
    /// `Settings.OwnCopies.rememberedMax`; the oldest is forgotten first).
    private var accepted: [(itemID: String, path: String)] = []
    /// Whether the player holds an item this driver gave it. Until then what it holds is the
    /// person's own (an mpv attached with their film open, whose word of its file may come after
    /// the group's item): it is not let go for want of a copy, so that that word can still find it.
    private var holdsAnItem = false
    var kind: String { inner.kind }
    var openFile: String? { inner.openFile }

    init(_ inner: Inner, folders: [String], files: [String] = []) {
        self.inner = inner
        copies = OwnCopies(folders: folders, files: files)
    }

    mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        let hadAnItem = holdsAnItem
        switch command {
        case .load: holdsAnItem = true  // unless no copy is found, below
        case .unload:
            holdsAnItem = false
            // The core lets go of an item this machine has no copy of: the person's own file,
            // which the player may not have named yet, stays open.
            guard hadAnItem else { return [] }
        default: break
        }
        guard case .load(var item, let position) = command else {
            return translated(inner.perform(command, now: now), now: now)
        }
        byURL = nil
        lacking = nil
        offered = nil
        guard let fingerprint = Fingerprint(text: item.id) else { return inner.perform(command, now: now) }
        let found = copies.find(item, fingerprint: fingerprint, opened: inner.openFile, now: now.monotonic)
        if case .file = found {
        } else if let other = accepted.last(where: { $0.itemID == item.id }),
            access(other.path, R_OK) == 0
        {
            notes.append("playing another encode of the group's item, as you accepted: \(other.path)")
            item.url = other.path
            return inner.perform(.load(item, position: position), now: now) + [.anotherEncode]
        }
        switch found {
        case .file(let path):
            if path != OwnCopies.localPath(item.url), !copies.files.contains(path) {  // a party's own film: no news
                notes.append("playing your own copy of the group's item: \(path)")
            }
            item.url = path
            return inner.perform(.load(item, position: position), now: now)
        case .url:
            byURL = (item, fingerprint)
            return translated(inner.perform(command, now: now), now: now)
        case .none(let words):
            // Nothing for the player to load: whatever it held of the group's is let go, as after
            // a failed load; the person's own file stays (it may be the copy, not yet told).
            lookAgain(for: item, fingerprint, now: now)
            let offer = offerOtherEncode(of: item, fingerprint, now: now)
            let failed = PlayerReport.loadFailed(words + offer, problem: .noCopy)
            holdsAnItem = false
            guard hadAnItem else { return [failed] }
            return inner.perform(.unload, now: now) + [failed]
        }
    }

    /// A URL that is missing or unreachable from here, for an item known by its content, is no
    /// copy here: said as such, with what the film is (a friend in another home cannot reach the
    /// host's LAN, and should hear what to find, not a network error alone).
    private mutating func translated(_ reports: [PlayerReport], now: Timestamp) -> [PlayerReport] {
        guard let (item, fingerprint) = byURL else { return reports }
        return reports.map { report in
            guard case .loadFailed(let text, let problem) = report, problem == .notFound || problem == .unreachable
            else { return report }
            byURL = nil
            lookAgain(for: item, fingerprint, now: now)
            let words = copies.missingByURL(item, fingerprint: fingerprint, because: text)
            return .loadFailed(words + offerOtherEncode(of: item, fingerprint, now: now), problem: .noCopy)
        }
    }

    /// Another encode of the film in the folders (`OwnCopies.otherEncode`), offered in words: the
    /// person decides, since its picture may differ in length or in cut by a few frames.
    private mutating func offerOtherEncode(of item: LoadedItem, _ fingerprint: Fingerprint, now: Timestamp) -> String {
        guard let (path, length) = copies.otherEncode(of: item, fingerprint: fingerprint, now: now.monotonic) else {
            return ""
        }
        offered = (item.id, path)
        var size = stat()
        let bytes = stat(path, &size) == 0 ? OwnCopies.size(UInt64(max(0, size.st_size))) + ", " : ""
        return
            "; another encode of it is here: \(path) (\(bytes)\(OwnCopies.clock(length))), the same film by its name and"
            + " length: type `accept` to play it on the group's timeline"
    }

    /// The person accepts the other encode offered for the item this machine lacks: played from
    /// now on for that item, where the group is (`copyFound`). Nil when nothing is offered.
    mutating func acceptOffer() -> [PlayerReport]? {
        guard let offer = offered, lacking?.item.id == offer.itemID else { return nil }
        offered = nil
        lacking = nil
        accepted.removeAll { $0.itemID == offer.itemID }
        if accepted.count >= Settings.OwnCopies.rememberedMax { accepted.removeFirst() }
        accepted.append(offer)
        return [.copyFound]
    }

    private mutating func lookAgain(for item: LoadedItem, _ fingerprint: Fingerprint, now: Timestamp) {
        lacking = (item, fingerprint, now.monotonic + Settings.OwnCopies.lookAgainEvery)
    }

    func nextEvent(now: Timestamp) -> MonotonicInstant? {
        [inner.nextEvent(now: now), lacking?.next].compactMap { $0 }.min()
    }

    mutating func advance(now: Timestamp) -> [PlayerReport] {
        let reports = translated(inner.advance(now: now), now: now)
        guard let next = lacking?.next, now.monotonic >= next else { return reports }
        return reports + lookNow(now: now)
    }

    /// Looks for the item this machine lacks: found, the core is told (`copyFound`).
    private mutating func lookNow(now: Timestamp) -> [PlayerReport] {
        guard let (item, fingerprint, _) = lacking else { return [] }
        guard
            case .file(let path) = copies.find(
                item, fingerprint: fingerprint, opened: inner.openFile, now: now.monotonic)
        else {
            lookAgain(for: item, fingerprint, now: now)
            return []
        }
        lacking = nil
        notes.append("found your own copy of the group's item: \(path)")
        return [.copyFound]
    }

    /// A file the player opened (the person's, or mpv's word of it arriving after the group's
    /// item did, as when the agent attaches to an mpv that holds the film) is looked at at once.
    mutating func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] {
        let opened = inner.openFile
        let reports = translated(inner.receive(line: line, at: at), now: at)
        return inner.openFile != opened && lacking != nil ? reports + lookNow(now: at) : reports
    }
    mutating func connected(now: Timestamp) -> [PlayerReport] { inner.connected(now: now) }
    mutating func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) {
        inner.disconnected(now: now)
    }
    mutating func close() { inner.close() }
    mutating func show(_ text: String) { inner.show(text) }

    mutating func takeNotes() -> [String] {
        defer { notes.removeAll() }
        return notes + inner.takeNotes()
    }
}
