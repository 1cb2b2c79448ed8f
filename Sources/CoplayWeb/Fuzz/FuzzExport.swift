// The hostile fuzz's entry point in the fuzz build of the module (Tools/wasm-core): `seed`'s
// run of `inputs` inputs; returns how many bounds it found broken (a trap ends the call).
@_cdecl("coplay_fuzz") public func coplayFuzz(_ seed: UInt64, _ inputs: Int32) -> Int32 {
    Int32(HostileFuzz(seed: seed, inputs: Int(inputs)).run().failures.count)
}
