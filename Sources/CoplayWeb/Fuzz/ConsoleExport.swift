/// A command line typed into a participant, as on an agent's standard input: the tests' way to
/// drive instances in node (Tools/web/smoke.mjs, golden-events.mjs, hostile-relay.mjs, tab.mjs).
/// In the test module only (Tools/wasm-core): the page has no console, and the shipped module
/// no parser (`coplay_share`, `coplay_quit` are the page's commands).
@_cdecl("coplay_console")
public func coplayConsole(_ handle: Int32, _ line: UnsafePointer<UInt8>?, _ count: Int32, _ mono: Int64, _ wall: Int64)
    -> Int32
{
    let now = timestamp(mono, wall)
    guard let directives = participant(handle)?.instance.onConsoleLine(text(line, count), now: now) else {
        return 0
    }
    return carry(directives, handle, now)
}
