import CoplayCore

/// A local file shared, queued or loaded is known to the group by its content: the shell reads
/// its `Fingerprint` and gives the item that id (where the person named none), the file's name
/// as its title, its container as its type and its length as its duration (where they are
/// empty), so that every other
/// participant finds its own copy of the same film wherever it lies and whatever it is called
/// (`OwnCopyPlayer`). A URL known by its fingerprint gets its name as its title. Any other
/// item given by URL, or with an id of the person's, is left as it is; so
/// is a file that cannot be fingerprinted (missing, a folder, still being written): its player
/// then says why it cannot play it, as before.
enum ContentIdentity {
    static func identify(_ command: ConsoleCommand) -> ConsoleCommand {
        switch command {
        case .share(var activity, let duration, let buffer):
            if isNamedURL(activity.url, id: activity.itemID) {
                let name = Party.filmName(of: activity.url)
                if activity.title.isEmpty { activity.title = name }
                if activity.type.isEmpty { activity.type = container(of: name) ?? "" }
                return .share(activity, durationSeconds: duration, bufferSeconds: buffer)
            }
            guard activity.itemID == activity.url, let (fingerprint, name) = file(activity.url) else { return command }
            activity.itemID = fingerprint.text
            if activity.title.isEmpty { activity.title = name }
            if activity.type.isEmpty { activity.type = container(of: name) ?? "" }
            return .share(activity, durationSeconds: duration ?? length(activity.url), bufferSeconds: buffer)
        case .queue(.add(let url, let id?, "", let duration, let after)) where isNamedURL(url, id: id):
            return .queue(
                .add(url: url, id: id, title: Party.filmName(of: url), durationSeconds: duration, after: after))
        case .queue(.add(let url, nil, let title, let duration, let after)):
            guard let (fingerprint, name) = file(url) else { return command }
            return .queue(
                .add(
                    url: url, id: fingerprint.text, title: title.isEmpty ? name : title,
                    durationSeconds: duration ?? length(url), after: after))
        case .load(var item):
            guard item.id == item.url, let (fingerprint, _) = file(item.url) else { return command }
            item.id = fingerprint.text
            return .load(item)
        default:
            return command
        }
    }

    /// An item of a URL known by its fingerprint (the console's parser took it from the URL's
    /// fragment, `ConsoleCommand.contentNamed`, or the person gave it): its name is the URL's.
    private static func isNamedURL(_ url: String, id: String) -> Bool {
        (url.hasPrefix("https://") || url.hasPrefix("http://")) && Fingerprint(text: id) != nil
    }

    /// The fingerprint and name of the local file `url` names, if it is one that can be read.
    private static func file(_ url: String) -> (Fingerprint, String)? {
        guard let path = OwnCopies.localPath(url), let fingerprint = try? FileFingerprint.of(path: path) else {
            return nil
        }
        var name = String(path.split(separator: "/").last ?? Substring(path))
        while name.utf8.count > WireFormat.metadataBytesMax { name.removeLast() }
        return (fingerprint, name)
    }

    /// The film's length (ffprobe), which the share carries where the person gave none: every
    /// participant then says how long the film it lacks is, and knows another encode of it.
    private static func length(_ url: String) -> Double? { OwnCopies.localPath(url).flatMap(MediaDuration.probe) }

    /// The container a file's name says, as a media type: what the share's `type` carries.
    static func container(of name: String) -> String? {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        let types = [
            "mp4": "video/mp4", "m4v": "video/mp4", "mkv": "video/x-matroska", "webm": "video/webm",
            "mov": "video/quicktime", "avi": "video/x-msvideo", "ts": "video/mp2t", "ogv": "video/ogg",
            "mp3": "audio/mpeg", "m4a": "audio/mp4", "flac": "audio/flac", "ogg": "audio/ogg", "opus": "audio/ogg",
            "wav": "audio/wav",
        ]
        return types[name[name.index(after: dot)...].lowercased()]
    }
}
