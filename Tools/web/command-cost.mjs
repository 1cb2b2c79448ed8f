// What a command costs one viewer's core, apart from the crowd: a tab's calls into its module,
// recorded in a crowd run (`CROWD_RECORD=FILE node … Tools/web/crowd.mjs …`), replayed into fresh
// instances of a module (the one recorded with, or another build of it: the frames are the
// protocol's, not the module's), each call timed. Prints, per kind of call, the median and the
// 90th percentile over the replays after the first few (the engine's optimizing tier has the
// module's hot code by then), and fails if a replay's events differ from the recording's.
//
//   node Tools/web/command-cost.mjs RECORDING [WASM] [REPLAYS]
import { readFileSync } from 'node:fs';
import { replay } from './recorded-core.mjs';

const [recordingPath, wasmPath, replaysText = '60'] = process.argv.slice(2);
if (!recordingPath) {
  console.error('usage: node Tools/web/command-cost.mjs RECORDING [WASM] [REPLAYS]');
  process.exit(2);
}
const recording = JSON.parse(readFileSync(recordingPath, 'utf8'));
const module = await WebAssembly.compile(readFileSync(wasmPath ?? recording.wasm));
const replays = Math.max(4, Number(replaysText) || 60), warm = Math.floor(replays / 3);
const dec = new TextDecoder();

/// A call's kind: the command it delivered (by the events it wrote), or what it was.
function kind(call) {
  if (call.name === 'coplay_socket_bytes') {
    for (const [event, name] of [['time-jumped', 'seek'], ['paused', 'pause'], ['playing', 'play'], ['waiting', 'play (coordinated start)']]) {
      if (call.events.includes(event)) return `frame: ${name}`;
    }
    return 'frame: other (beacon, probe reply, …)';
  }
  return call.name.replace('coplay_', '');
}
/// The event names in a call's output records (kind 4, JSON).
function events(x, length) {
  const out = [], base = x.coplay_output(), view = new DataView(x.memory.buffer, base, length);
  for (let i = 0; i + 5 <= length;) {
    const k = view.getUint8(i), n = view.getUint32(i + 1, true);
    if (k === 4) out.push(JSON.parse(dec.decode(new Uint8Array(x.memory.buffer, base + i + 5, n))).event);
    i += 5 + n;
  }
  return out;
}

const times = new Map();
let mismatches = 0;
for (let r = 0; r < replays; r++) {
  await replay(module, recording.calls, (i, call, us, x, length) => {
    if (r === 0 && length >= 0 && call.events.length) {
      const got = events(x, length);
      if (got.join() !== call.events.join()) { mismatches++; console.error(`call ${i} (${call.name}): recorded ${call.events.join()}, replayed ${got.join()}`); }
    }
    if (r < warm) return;
    const k = kind(call);
    if (!times.has(k)) times.set(k, []);
    times.get(k).push(us);
  });
}
const q = (v, p) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
console.log(`${recording.calls.length} calls, ${replays} replays (the first ${warm} not counted)`);
for (const [k, v] of [...times].sort()) {
  console.log(`${k.padEnd(40)} median ${q(v, 0.5).toFixed(1).padStart(7)} us   p90 ${q(v, 0.9).toFixed(1).padStart(7)} us   (${v.length})`);
}
if (mismatches) { console.error(`${mismatches} calls replayed with other events than recorded`); process.exit(1); }
