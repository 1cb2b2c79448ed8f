import Foundation

/// What `/proc` says of a process: its command name and the fields of `/proc/PID/stat` after it
/// (field 0 is the state, 1 the parent's pid, 11 and 12 the user and system CPU ticks).
public enum ProcessTable {
    public static func stat(of pid: Int32) -> (name: String, fields: [Substring])? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")")
        else { return nil }
        // The name is between the first "(" and the last ")": it may hold either.
        return (String(text[text.index(after: open)..<close]), text[text.index(after: close)...].split(separator: " "))
    }

    /// The processes whose parent is `pid`, with their command names.
    public static func children(of pid: Int32) -> [(pid: Int32, name: String)] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> (pid: Int32, name: String)? in
            guard let child = Int32(entry), let stat = stat(of: child), stat.fields.count > 1,
                Int32(stat.fields[1]) == pid
            else { return nil }
            return (child, stat.name)
        }
    }

    /// Whether `pid` runs (a zombie, or no process, does not).
    public static func isRunning(_ pid: Int32) -> Bool {
        guard let state = stat(of: pid)?.fields.first else { return false }
        return state != "Z"
    }
}
