// The player follower's cases in the test build of the module (Tools/wasm-core, beside the
// fuzz): the runner is test code, not shipped.

/// Runs the follower's cases (`Tests/Vectors/follower-cases.json`, `FollowerScript`) inside the
/// module: one record (kind 16), `{"cases":N,"steps":N,"failures":[…]}`.
@_cdecl("coplay_follower_cases")
public func coplayFollowerCases(_ pointer: UnsafePointer<UInt8>?, _ count: Int32) -> Int32 {
    begin()
    let result = FollowerScript.run(bytes(pointer, min(count, 1 << 20)))
    var json = JSONObject()
    json.int("cases", Int64(result.cases))
    json.int("steps", Int64(result.steps))
    json.raw("failures", JSONObject.array(result.failures.map(JSONObject.quoted)))
    append(16, Array(json.closed.utf8))
    return Int32(output.count)
}
