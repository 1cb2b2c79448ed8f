// The hostile fuzz of the whole core (HostileFuzz.swift), run inside WebAssembly, where Int is
// 32 bits: no input may trap (a value that fits 64 bits and not 32 did) and every table stays
// within its bound.
//   node Tools/web/fuzz.mjs .build/wasm/coplay-fuzz.wasm SEEDS INPUTS
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
let memory;
const { instance } = await WebAssembly.instantiate(readFileSync(process.argv[2]), {
  env: { coplay_host_random: (ptr, n) => webcrypto.getRandomValues(new Uint8Array(memory.buffer, ptr, n)) },
});
memory = instance.exports.memory;
const seeds = Number(process.argv[3] || 5), inputs = Number(process.argv[4] || 20000);
let trapped = [], failed = 0;
for (let seed = 1; seed <= seeds; seed++) {
  try { failed += instance.exports.coplay_fuzz(BigInt(seed), inputs); }
  catch (e) { trapped.push(`${seed}: ${e.stack.split("\n").slice(0,8).join(" | ")}`); break; }
}
console.log(JSON.stringify({ seeds, inputs, failed, trapped, memoryMB: memory.buffer.byteLength / 1048576 }));
if (failed > 0 || trapped.length > 0) process.exit(1);
