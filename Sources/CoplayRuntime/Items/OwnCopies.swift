import CoplayCore
import Glibc

extension Settings {
    /// The bounds of the folders an agent finds its own copies in (`--media DIR`), with why.
    /// Constants of the agent alone (the page's module never links them).
    public enum OwnCopies {
        /// Files indexed over all the folders: a film library of a few thousand files, with its
        /// subtitles and posters, fits many times over; each entry is a path and a size (about
        /// 100 bytes), so the index stays under a few megabytes whatever a folder holds.
        public static let filesMax = 20_000
        /// Directory entries looked at in one indexing (files, folders, anything else), so that
        /// a folder of millions of small files costs a bounded walk, not an unbounded one.
        public static let entriesMax = 100_000
        /// How deep under a folder: `Series/Name/Season 1/file.mkv` is four.
        public static let depthMax = 8
        /// A folder is indexed again when a lookup finds nothing and the index is this old: a
        /// copy a person just put there is found at the next item, and a group moving through
        /// a queue of missing films walks the folders at most this often.
        public static let reindexAfter: Duration = .seconds(5)
        /// Files of the wanted size fingerprinted in one lookup: two different films of one
        /// size to the byte are rare, and each costs 1 MiB read.
        public static let sameSizeMax = 16
        /// Fingerprints remembered (by path, size and modification time), so that the same
        /// file is read once across the items of a queue.
        public static let rememberedMax = 512
        /// While this agent has no copy of the group's item, it looks again this often (its own
        /// path, then its folders, walked at most every `reindexAfter`): a copy the person puts in
        /// a `--media` folder meanwhile plays within this, where the group is.
        public static let lookAgainEvery: Duration = .seconds(10)
        /// How long ffprobe may take to read a film's length (it reads the container's header:
        /// tens of milliseconds); the agent waits for it, so a file on a hung network share costs
        /// at most this.
        public static let probeTimeout: Duration = .seconds(2)
        /// What of ffprobe's answer is read: a length is a few digits.
        public static let probeAnswerMax = 256
        /// Files with the item's name (and another size) whose length is read in one lookup, for
        /// another encode of the same film: each costs an ffprobe.
        public static let otherEncodesMax = 4
        /// Another encode is the same film when its length is within this of the item's: what
        /// Syncplay allows between two copies of one film.
        public static let otherEncodeDurationSlack = 2.5
        /// The longest path of a file a player says it has open that is looked at (Linux's
        /// PATH_MAX): mpv's word is the player's, not this machine's.
        public static let pathBytesMax = 4096
    }
}

/// Where this agent finds its own copy of an item known by its content (an item whose id is a
/// `Fingerprint`'s text): the item's own path if it is here and is that film, else one of the
/// files known here (a party's films, the file the player has open), else a file of the
/// folders given with `--media DIR`. The folders are indexed lazily (at the first item that needs
/// them), by size first: a file is fingerprinted only when its size is the item's, so a library
/// of thousands of films costs one walk and a read of 1 MiB per candidate.
struct OwnCopies {
    let folders: [String]
    /// Files known to be this machine's copies, looked at before the folders: a party's films,
    /// which the host's player plays from disk (its subtitles beside it) rather than from the
    /// party's own server.
    let files: [String]
    /// Regular files by size, from the last walk.
    private var bySize: [UInt64: [String]] = [:]
    private(set) var filesIndexed = 0
    /// The last walk stopped at a bound (`filesMax`, `entriesMax`): said in the words of a miss.
    private(set) var indexIncomplete = false
    private var indexedAt: MonotonicInstant?
    private var remembered: [String: (size: Int, modified: timespec, fingerprint: Fingerprint)] = [:]

    init(folders: [String], files: [String] = []) {
        self.folders = folders
        self.files = files
    }

    /// How an item is found here.
    enum Found: Equatable {
        /// This file is the film: play it.
        case file(String)
        /// No copy on this machine, but the item has a URL the player may reach.
        case url
        /// Nothing: the words say what is missing and where it was looked for.
        case none(String)
    }

    /// The copy of `item` (whose id is `fingerprint`) this agent plays.
    /// `opened`: the file the player has open, if any (a person's own mpv holding the film).
    mutating func find(
        _ item: LoadedItem, fingerprint: Fingerprint, opened: String? = nil, now: MonotonicInstant
    ) -> Found {
        let path = Self.localPath(item.url)
        if let path, self.fingerprint(of: path) == fingerprint { return .file(path) }
        for file in files where self.fingerprint(of: file) == fingerprint { return .file(file) }
        if let opened, self.fingerprint(of: opened) == fingerprint { return .file(opened) }
        if let copy = lookUp(fingerprint, now: now) { return .file(copy) }
        if path == nil { return .url }
        return .none(missing(item, fingerprint: fingerprint, path: path!))
    }

    /// A path on this machine's disk: a URL without a scheme, or a `file://` one.
    static func localPath(_ url: String) -> String? {
        if url.hasPrefix("file://") { return String(url.dropFirst(7)) }
        return url.contains("://") ? nil : url
    }

    /// The file's fingerprint, read once per (path, size, modification time); nil when it is
    /// not a readable regular file.
    mutating func fingerprint(of path: String) -> Fingerprint? {
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        if let known = remembered[path], known.size == status.st_size,
            known.modified.tv_sec == status.st_mtim.tv_sec, known.modified.tv_nsec == status.st_mtim.tv_nsec
        {
            return known.fingerprint
        }
        guard let fingerprint = try? FileFingerprint.of(path: path) else { return nil }
        if remembered.count >= Settings.OwnCopies.rememberedMax { remembered.removeAll(keepingCapacity: true) }
        remembered[path] = (status.st_size, status.st_mtim, fingerprint)
        return fingerprint
    }

    /// A file of the folders that is the film, walking them again if the index is old.
    private mutating func lookUp(_ fingerprint: Fingerprint, now: MonotonicInstant) -> String? {
        guard !folders.isEmpty else { return nil }
        if indexedAt == nil { index(now: now) }
        if let found = candidate(fingerprint) { return found }
        guard let indexedAt, now - indexedAt >= Settings.OwnCopies.reindexAfter else { return nil }
        index(now: now)
        return candidate(fingerprint)
    }

    private mutating func candidate(_ fingerprint: Fingerprint) -> String? {
        for path in (bySize[fingerprint.size] ?? []).prefix(Settings.OwnCopies.sameSizeMax)
        where self.fingerprint(of: path) == fingerprint {
            return path
        }
        return nil
    }

    /// Walks the folders: every regular file (a link to one too) under them, hidden names
    /// skipped, folders reached through a link not followed (a link to a parent loops).
    mutating func index(now: MonotonicInstant) {
        bySize = [:]
        filesIndexed = 0
        indexIncomplete = false
        indexedAt = now
        var entries = 0
        var pending = folders.map { (path: $0, depth: 0) }
        while let (folder, depth) = pending.popLast() {
            guard let directory = opendir(folder) else { continue }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name.hasPrefix(".") { continue }
                entries += 1
                guard entries <= Settings.OwnCopies.entriesMax, filesIndexed < Settings.OwnCopies.filesMax else {
                    indexIncomplete = true
                    return
                }
                let path = folder.hasSuffix("/") ? folder + name : folder + "/" + name
                var status = stat()
                guard lstat(path, &status) == 0 else { continue }
                switch status.st_mode & S_IFMT {
                case S_IFDIR:
                    if depth < Settings.OwnCopies.depthMax { pending.append((path, depth + 1)) }
                case S_IFLNK:
                    guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { continue }
                    fallthrough
                case S_IFREG:
                    guard status.st_size > 0 else { continue }
                    bySize[UInt64(status.st_size), default: []].append(path)
                    filesIndexed += 1
                default:
                    continue
                }
            }
        }
    }

    /// Another encode of the item's film in the folders, where there is no copy of it: a file
    /// whose name is the item's (its URL's or path's last part) once normalised (`normalisedName`: as Syncplay compares names)
    /// and whose length is within `otherEncodeDurationSlack` of the item's, read with ffprobe for
    /// at most `otherEncodesMax` files. Nil where the item's length is not known: a name alone
    /// does not make the same film.
    mutating func otherEncode(of item: LoadedItem, fingerprint: Fingerprint, now: MonotonicInstant)
        -> (path: String, duration: Double)?
    {
        guard let duration = item.durationSeconds, !folders.isEmpty else { return nil }
        if indexedAt == nil { index(now: now) }
        let wanted = Self.normalisedName(Self.fileName(item.url))
        guard !wanted.isEmpty else { return nil }
        var probed = 0
        for (size, paths) in bySize where size != fingerprint.size {
            for path in paths where Self.normalisedName(Self.fileName(path)) == wanted {
                guard probed < Settings.OwnCopies.otherEncodesMax else { return nil }
                probed += 1
                if let length = MediaDuration.probe(path),
                    abs(length - duration) <= Settings.OwnCopies.otherEncodeDurationSlack
                {
                    return (path, length)
                }
            }
        }
        return nil
    }

    /// A file's name as two copies of one film are compared: without its extension, lowercased,
    /// and without the characters Syncplay strips (`-~_.[]():` and spaces), so that
    /// `Our.Film.(2026).mkv` and `our film [2026].mp4` are one name.
    static func normalisedName(_ name: String) -> String {
        var base = Substring(name)
        if let dot = base.lastIndex(of: "."), dot != base.startIndex,
            base.distance(from: dot, to: base.endIndex) <= 6
        {
            base = base[..<dot]
        }
        let stripped: Set<Character> = ["-", "~", "_", ".", "[", "]", "(", ")", ":", " "]
        return String(base.lowercased().filter { !stripped.contains($0) })
    }

    /// What is missing, in words: the film (its name, size and duration), where it was looked for.
    private func missing(_ item: LoadedItem, fingerprint: Fingerprint, path: String) -> String {
        let name = Self.fileName(path)
        var facts = [Self.size(fingerprint.size)]
        if let duration = item.durationSeconds { facts.append(Self.clock(duration)) }
        var exists = stat()
        let there =
            stat(path, &exists) == 0
            ? "the file at \(path) is another film (its content differs)" : "\(path) is not here"
        var text = "no copy of \"\(name)\" (\(facts.joined(separator: ", "))) on this machine: \(there)"
        if folders.isEmpty {
            text += ", and no --media folder was given; start coplay with --media DIR naming the folder that has it"
        } else {
            text +=
                " and none of the \(filesIndexed) file\(filesIndexed == 1 ? "" : "s") under --media \(folders.joined(separator: ", ")) is it"
            if indexIncomplete { text += " (indexing stopped at its bound: name a smaller folder)" }
            text += "; put your copy in one of them (another name is fine: the film is known by its content)"
        }
        return text + ", or `load PATH` your own copy"
    }

    /// What is missing when the item's URL is all there was and the player could not fetch it.
    func missingByURL(_ item: LoadedItem, fingerprint: Fingerprint, because failure: String) -> String {
        var facts = [Self.size(fingerprint.size)]
        if let duration = item.durationSeconds { facts.append(Self.clock(duration)) }
        let name = Self.fileName(item.url)
        var text =
            "no copy of \"\(name)\" (\(facts.joined(separator: ", "))) on this machine, and its URL cannot be played from here (\(failure))"
        text +=
            folders.isEmpty
            ? "; start coplay with --media DIR naming the folder that has your copy"
            : "; none of the \(filesIndexed) file\(filesIndexed == 1 ? "" : "s") under --media \(folders.joined(separator: ", ")) is it"
        return text + ", or `load PATH` your own copy"
    }

    /// The last part of a URL's or a path's path, percent-decoded: how a person names the file.
    static func fileName(_ url: String) -> String {
        let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        let last = path.split(separator: "/").last.map(String.init) ?? url
        var bytes: [UInt8] = []
        var utf8 = Array(last.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == 0x25, utf8.count >= 2, let high = Hex.value(of: utf8[utf8.startIndex]),
                let low = Hex.value(of: utf8[utf8.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A size as a person reads it: "4.2 GB", "700 MB", "12 KB".
    static func size(_ bytes: UInt64) -> String {
        let units: [(String, Double)] = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)]
        for (unit, scale) in units where Double(bytes) >= scale {
            let value = Double(bytes) / scale
            let rounded = value < 10 ? (value * 10).rounded() / 10 : value.rounded()
            let text = rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
            return text + " " + unit
        }
        return "\(bytes) bytes"
    }

    /// A duration as `1:32:10` or `4:05`.
    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        let (hours, minutes, rest) = (total / 3600, total / 60 % 60, total % 60)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(rest))" : "\(minutes):\(two(rest))"
    }
}
