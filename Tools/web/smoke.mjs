// Instances of the core in WebAssembly (Tools/wasm-core builds coplay.wasm) talk through nothing
// but what their outputs carry: two as on a LAN (datagrams), then three through an in-memory
// relay (sealed frames on subjects), as browser tabs would through NATS. They must find each
// other, measure each other's clock and share an item; one under another key must join nobody.
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

// The browser's path: keyed instances that share no network, only a relay. An in-memory NATS
// (a subject's subscribers get each message, the publisher too) carries the sealed frames; a
// third instance under another key hears them and joins nobody.
const key = new Uint8Array(32).map((_, i) => i * 7 + 1), otherKey = new Uint8Array(32).fill(9);
const subscribers = new Map();
const relayed = [['carol', key], ['dave', key], ['eve', otherKey]].map(([name, k], i) => {
  const n = enc.encode(name), s = enc.encode('web-relay'), entropy = webcrypto.getRandomValues(new Uint8Array(32));
  const h = x.coplay_create_relayed(BigInt(0xC0 + i), 11n + BigInt(i), put(n), n.length, put(s), s.length, put(k), k.length, put(entropy), clock, wall0 + clock);
  const agent = { name, h, inbox: [], events: [], published: 0 };
  for (const r of records(x.coplay_relay_subjects(h))) {
    const subject = dec.decode(r.data);
    if (!subscribers.has(subject)) subscribers.set(subject, []);
    subscribers.get(subject).push(agent);
  }
  return agent;
});
function carryRelayed(agent, length) {
  for (const r of records(length)) {
    if (r.kind === 3) {
      const n = r.data[0] | (r.data[1] << 8);
      const subject = dec.decode(r.data.slice(2, 2 + n)), frame = r.data.slice(2 + n);
      agent.published++;
      for (const other of subscribers.get(subject) ?? []) other.inbox.push({ subject, frame });
    }
    if (r.kind === 4) agent.events.push(dec.decode(r.data));
  }
}
for (const a of relayed) carryRelayed(a, x.coplay_start(a.h, clock, wall0 + clock));
for (let step = 0; step < 400; step++) {
  clock += 5_000_000n;
  for (const a of relayed) {
    for (const m of a.inbox.splice(0)) {
      const s = enc.encode(m.subject);
      carryRelayed(a, x.coplay_relay_frame(a.h, put(s), s.length, put(m.frame), m.frame.length, clock, wall0 + clock));
    }
    carryRelayed(a, x.coplay_tick(a.h, clock, wall0 + clock));
  }
  if (step === 100) { const l = enc.encode('share https://example.com/sealed.mp4 id=sealed'); carryRelayed(relayed[0], x.coplay_console(relayed[0].h, put(l), l.length, clock, wall0 + clock)); }
}
const relayResult = { peers: relayed.map(a => x.coplay_peer_count(a.h)), published: relayed.map(a => a.published), events: relayed.map(a => a.events.filter(e => !e.startsWith('event'))) };
console.log(JSON.stringify(relayResult));
const relayMet = relayResult.peers[0] === 1 && relayResult.peers[1] === 1 && relayResult.peers[2] === 0
  && relayResult.events.slice(0, 2).every(list => list.includes('activity sealed') && list.some(e => e.startsWith('clock-synced')))
  && !relayResult.events[2].includes('activity sealed');
if (!relayMet) { console.error('smoke: the relayed instances did not form their group, or another key joined it'); process.exit(1); }
