import Glibc

/// The media files `coplay web --media` and `coplay party` serve from disk: files named one by
/// one, and the regular files of named folders, under one URL prefix. Nothing outside what was
/// named can be reached: a request names one file by its name alone (no `/` after decoding, not
/// hidden), a folder's entry is opened without following a link, and a named file is opened by
/// the path it was named by.
public struct MediaLibrary: Sendable, Equatable {
    /// The URL path the media live under, with its slashes: `/media/`, or for a party
    /// `/media/<unguessable>/`, so that the LAN fetches no film without the link.
    public var prefix: String
    /// Files named one by one: name in the URL → path on disk.
    public private(set) var files: [String: String] = [:]
    /// Folders whose regular files are served by name, looked up at each request (a file added
    /// later is served too).
    public private(set) var folders: [String] = []

    /// What a library may hold: a party of a season's episodes is tens of files; a folder is one
    /// entry however many files it holds.
    public static let entriesMax = 256
    /// A file's name in a URL, after decoding: ext4's limit.
    public static let nameBytesMax = 255

    public init(prefix: String = "/media/") { self.prefix = prefix }

    /// Adds a file or a folder, or says why it cannot be served. Returns the name of a file (the
    /// last part of its path, made unique), nil for a folder.
    @discardableResult
    public mutating func add(_ path: String) -> Result<String?, UsageError> {
        guard files.count + folders.count < Self.entriesMax else {
            return .failure(UsageError(message: "at most \(Self.entriesMax) media files and folders"))
        }
        var status = stat()
        guard stat(path, &status) == 0 else {
            return .failure(UsageError(message: "\(path): \(String(cString: strerror(errno)))"))
        }
        guard access(path, R_OK) == 0 else {
            return .failure(UsageError(message: "\(path) cannot be read: \(String(cString: strerror(errno)))"))
        }
        switch status.st_mode & S_IFMT {
        case S_IFDIR:
            folders.append(path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path)
            return .success(nil)
        case S_IFREG:
            var name = path.split(separator: "/").last.map(String.init) ?? path
            guard Self.isServable(name) else {
                return .failure(UsageError(message: "\(path): its name cannot be served (hidden, or a control byte)"))
            }
            if files[name] != nil { name = "\(files.count + 1)-\(name)" }
            files[name] = path
            return .success(name)
        default:
            return .failure(UsageError(message: "\(path) is neither a file nor a folder"))
        }
    }

    /// The URL of a file named `name` on the server at `base` (`http://HOST:PORT`).
    public func url(base: String, name: String) -> String {
        base + prefix + Self.percentEncoded(name)
    }

    /// The path on disk a request's path names, if it names a file of the library.
    func path(forRequest requestPath: Substring) -> String? {
        guard requestPath.hasPrefix(prefix) else { return nil }
        guard let name = Invitation.percentDecoded(String(requestPath.dropFirst(prefix.count))),
            Self.isServable(name)
        else { return nil }
        if let path = files[name] { return path }
        for folder in folders {
            let path = folder + "/" + name
            var status = stat()
            // lstat: a link in a folder may point anywhere; only the folder's own files are served.
            if lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG { return path }
        }
        return nil
    }

    /// A name one request may ask for: one path segment, not hidden, no control bytes.
    static func isServable(_ name: String) -> Bool {
        let bytes = name.utf8
        return !bytes.isEmpty && bytes.count <= nameBytesMax && bytes.first != UInt8(ascii: ".")
            && !bytes.contains { $0 == UInt8(ascii: "/") || $0 < 0x20 || $0 == 0x7F }
    }

    /// A name as a URL's path segment: unreserved bytes as they are, every other byte %-encoded.
    static func percentEncoded(_ name: String) -> String { Invitation.percentEncoded(name) }

    /// The media types a browser and mpv need to be told (by extension, case-insensitive).
    static let contentTypes: [(suffix: String, type: String)] = [
        (".mp4", "video/mp4"), (".m4v", "video/mp4"), (".webm", "video/webm"), (".mkv", "video/x-matroska"),
        (".mp3", "audio/mpeg"), (".m4a", "audio/mp4"), (".ogg", "audio/ogg"), (".oga", "audio/ogg"),
        (".ogv", "video/ogg"), (".opus", "audio/ogg; codecs=opus"), (".vtt", "text/vtt; charset=utf-8"),
        (".m3u8", "application/vnd.apple.mpegurl"), (".ts", "video/mp2t"), (".mov", "video/quicktime"),
        (".flac", "audio/flac"), (".wav", "audio/wav"),
    ]

    static func contentType(of name: String) -> String {
        let lowered = name.lowercased()
        return contentTypes.first { lowered.hasSuffix($0.suffix) }?.type ?? "application/octet-stream"
    }
}
