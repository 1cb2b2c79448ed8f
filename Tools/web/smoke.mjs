// Two instances of the core in WebAssembly (Tools/wasm-core builds coplay.wasm) talk through
// nothing but the datagrams their outputs carry, as two browser tabs would through a relay:
// they must find each other, measure each other's clock and share an item.
//   node Tools/web/smoke.mjs .build/wasm/coplay.wasm
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
const bytes = readFileSync(process.argv[2]);
let memory;
const { instance } = await WebAssembly.instantiate(bytes, {
  env: { coplay_host_random: (ptr, n) => webcrypto.getRandomValues(new Uint8Array(memory.buffer, ptr, n)) },
});
const x = instance.exports;
memory = x.memory;
const enc = new TextEncoder(), dec = new TextDecoder();
function put(data) { const p = x.coplay_alloc(data.length); new Uint8Array(memory.buffer, p, data.length).set(data); return p; }
function records(length) {
  const out = []; const base = x.coplay_output(); const view = new DataView(memory.buffer, base, length);
  for (let i = 0; i < length;) {
    const kind = view.getUint8(i); const n = view.getUint32(i + 1, true);
    out.push({ kind, data: new Uint8Array(memory.buffer, base + i + 5, n).slice() }); i += 5 + n;
  }
  return out;
}
let clock = 5_000_000_000n; const wall0 = 1_780_000_000_000_000_000n;
const agents = ['alice', 'bob'].map((name, i) => {
  const n = enc.encode(name), s = enc.encode('web');
  const h = x.coplay_create(BigInt(0xA0 + i), 7n + BigInt(i), 40000 + i, put(n), n.length, put(s), s.length, clock, wall0 + clock);
  return { name, h, address: 0x0A000001 + i, port: 40000 + i, inbox: [], events: [] };
});
function handle(agent, length) {
  for (const r of records(length)) {
    if (r.kind === 1) for (const other of agents) if (other !== agent) other.inbox.push({ data: r.data, from: agent, group: 1 });
    if (r.kind === 2) { const port = r.data[16] | (r.data[17] << 8); const other = agents.find(a => a.port === port); if (other) other.inbox.push({ data: r.data.slice(18), from: agent, group: 0 }); }
    if (r.kind === 4) agent.events.push(dec.decode(r.data));
  }
}
for (const a of agents) handle(a, x.coplay_start(a.h, clock, wall0 + clock));
for (let step = 0; step < 400; step++) {
  clock += 5_000_000n;
  for (const a of agents) {
    const inbox = a.inbox.splice(0);
    for (const m of inbox) { const p = put(m.data); handle(a, x.coplay_datagram(a.h, p, m.data.length, m.from.address, m.from.port, m.group, clock, wall0 + clock)); x.coplay_dealloc(p); }
    handle(a, x.coplay_tick(a.h, clock, wall0 + clock));
  }
  if (step === 100) { const l = enc.encode('share https://example.com/film.mp4 id=film duration=60'); handle(agents[0], x.coplay_console(agents[0].h, put(l), l.length, clock, wall0 + clock)); }
  if (step === 150) { const l = enc.encode('play-now'); handle(agents[1], x.coplay_console(agents[1].h, put(l), l.length, clock, wall0 + clock)); }
}
const result = { peers: agents.map(a => x.coplay_peer_count(a.h)), events: agents.map(a => a.events.filter(e => !e.startsWith('event'))) };
console.log(JSON.stringify(result));
const met = result.peers.every(n => n === 1)
  && result.events.every(list => list.includes('activity film') && list.some(e => e.startsWith('clock-synced')));
if (!met) { console.error('smoke: the two instances did not form a group and share the item'); process.exit(1); }
