import CoplayCore
import Glibc

/// How to start VLC (`--player vlc`, `--vlc-option`, `--vlc-path`).
public struct VlcOptions: Sendable, Equatable {
    /// NAME=VALUE options passed to the VLC the agent starts, as --NAME=VALUE.
    public var options: [String] = []
    /// The program to start instead of `vlc` from PATH (a wrapper, another build).
    public var path: String?

    public init() {}
}

extension VlcPlayer {
    /// Starts VLC with coplay's interface script (`VlcLink`), and its driver.
    static func connect(_ options: VlcOptions, settings: Settings) throws(SocketError) -> (VlcPlayer, VlcLink) {
        let link = try VlcLink(options: options)
        return (VlcPlayer(link: link, settings: settings), link)
    }

    /// Starts VLC with coplay's interface script, speaking on its standard input and output (one
    /// end of a socket pair, which this end alone reads without waiting): VLC ends when the agent
    /// does, however it ends, since the script's next write fails. The script is written to a
    /// folder of its own, named to VLC as its user data folder (`XDG_DATA_HOME`), where VLC looks
    /// for interface scripts first. Returns once the script said hello.
    static func launch(_ options: VlcOptions) throws(SocketError) -> (LineSocket, ChildProcess, String) {
        if options.path == nil, geteuid() == 0 {
            throw SocketError(
                "VLC refuses to run as root: start coplay as your own user (or give --vlc-path a program that"
                    + " starts VLC as another user)", code: 0)
        }
        let folder = try writeScript()
        let pair: (agent: Int32, child: Int32)
        do { pair = try ChildProcess.connectionPair() } catch {
            removeScript(in: folder)
            throw error
        }
        _ = fcntl(pair.child, F_SETFL, fcntl(pair.child, F_GETFL) | O_NONBLOCK)
        // The person's own interfaces (`extraintf=oldrc`, say) run beside coplay's: VLC keeps only
        // the last --extraintf, so theirs are joined to it.
        let extra = options.options.filter { $0.hasPrefix("extraintf=") }.map { String($0.dropFirst(10)) }
        let chosesInterface = options.options.contains { $0.hasPrefix("intf=") }
        let arguments =
            [options.path ?? "vlc"] + (chosesInterface ? [] : ["--intf=dummy"])
            + [
                "--extraintf=" + (["luaintf"] + extra).joined(separator: ":"), "--lua-intf=coplay",
                "--no-video-title-show", "--no-loop", "--no-repeat", "--no-random", "--no-input-fast-seek",
            ] + options.options.filter { !$0.hasPrefix("extraintf=") }.map { "--\($0)" }
        let process: ChildProcess
        do {
            defer { Glibc.close(pair.child) }
            process = try ChildProcess.spawn(
                arguments, connection: pair.child, standardIO: true, environment: ["XDG_DATA_HOME": folder],
                output: try ChildOutput(
                    name: "vlc", hint: "--vlc-option file-logging --vlc-option logfile=PATH keeps VLC's log"))
        } catch {
            Glibc.close(pair.agent)
            removeScript(in: folder)
            throw error
        }
        let socket = LineSocket(descriptor: pair.agent)
        do {
            try awaitHello(on: socket, from: process, patience: .seconds(15))
        } catch {
            process.waitForExit(patience: .zero)
            socket.close()
            removeScript(in: folder)
            throw error
        }
        return (socket, process, folder)
    }

    /// Writes the script to `FOLDER/vlc/lua/intf/coplay.lua` in a new folder, readable by all (a
    /// `--vlc-path` wrapper may start VLC as another user).
    static func writeScript() throws(SocketError) -> String {
        var template = Array("/tmp/coplay-vlc-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SocketError("mkdtemp for VLC's interface script") }
        let folder = String(cString: made)
        var path = folder
        for part in ["vlc", "lua", "intf"] {
            chmod(path, 0o755)
            path += "/" + part
            guard mkdir(path, 0o755) == 0 else {
                removeScript(in: folder)
                throw SocketError("mkdir \(path)")
            }
        }
        chmod(path, 0o755)
        let file = path + "/coplay.lua"
        let descriptor = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            removeScript(in: folder)
            throw SocketError("write \(file)")
        }
        let bytes = Array(VlcScript.source.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        Glibc.close(descriptor)
        guard written == bytes.count else {
            removeScript(in: folder)
            throw SocketError("write \(file)")
        }
        return folder
    }

    /// Removes what `writeScript` made (and whatever VLC left in its user data folder there).
    static func removeScript(in folder: String) {
        guard folder.hasPrefix("/tmp/coplay-vlc-") else { return }
        func remove(_ path: String) {
            if let directory = opendir(path) {
                while let entry = readdir(directory) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                        String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                    }
                    if name == "." || name == ".." { continue }
                    remove(path + "/" + name)
                }
                closedir(directory)
                rmdir(path)
            } else {
                unlink(path)
            }
        }
        remove(folder)
    }

    /// Waits for the script's `hello`, so that a VLC that exits at start (an option it refused, a
    /// missing Lua plugin) is an error that says so.
    private static func awaitHello(
        on socket: LineSocket, from process: ChildProcess, patience: Duration
    ) throws(SocketError) {
        try socket.awaitFirstWord(
            from: process, patience: patience, exited: exitedAtStart,
            silent: SocketError(
                "VLC did not start coplay's interface script within \(patience) (is VLC's Lua plugin,"
                    + " vlc-plugin-base, installed?)", code: 0))
    }

    private static func exitedAtStart(_ status: Int32?) -> SocketError {
        SocketError(
            "VLC exited\(status.map { " with status \($0)" } ?? "") at start: check the --vlc-option values"
                + " (its first complaint is above)", code: 0)
    }
}
