// Instances of the core in WebAssembly (Tools/wasm-core builds coplay.wasm) talk through nothing
// but what their outputs carry: two as on a LAN (datagrams), then three through an in-memory
// relay (sealed frames on subjects), as browser tabs would through NATS. They must find each
// other, measure each other's clock and share an item (the first two also play it together on
// a model of the page's player); one under another key must join nobody.
//   node Tools/web/smoke.mjs .build/wasm/coplay.wasm .build/wasm/coplay-fuzz.wasm
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
// The LAN pair runs in the test module (a browser has no UDP: the shipped module has no LAN
// entry points); the bounds and the relayed three run in the shipped module, as the page's do.
async function load(path) {
  const holder = {};
  const { instance } = await WebAssembly.instantiate(readFileSync(path), {
    env: { coplay_host_random: (ptr, n) => webcrypto.getRandomValues(new Uint8Array(holder.memory.buffer, ptr, n)) },
  });
  holder.memory = instance.exports.memory;
  return instance.exports;
}
const shipped = await load(process.argv[2]), test = await load(process.argv[3]);
let x = shipped, memory = shipped.memory;
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
// An event object (kind 4) as 'name what': 'activity film', 'clock-synced bob', 'playing film'.
const summary = (e) => `${e.event} ${e.item ?? e.peer?.name ?? e.state ?? ''}`;
// Names and sessions past the core's 64 bytes are refused at the boundary (-2), where the
// core's initializer would trap: 65 ASCII bytes, and 33 two-byte characters (66 bytes).
{
  const key = new Uint8Array(32), entropy = new Uint8Array(32), s = enc.encode('web');
  for (const [name, expected] of [['a'.repeat(64), 'a handle'], ['a'.repeat(65), -2], ['é'.repeat(33), -2]]) {
    const n = enc.encode(name);
    const h = x.coplay_create_relayed(1n, 1n, put(n), n.length, put(s), s.length, put(key), 32, put(entropy), 1n, 1n, 0);
    if (expected === 'a handle' ? h < 0 : h !== expected) { console.error(`smoke: a name of ${n.length} bytes gave ${h}`); process.exit(1); }
  }
}
// The LAN pair: the test module.
x = test; memory = test.memory;
let clock = 5_000_000_000n; const wall0 = 1_780_000_000_000_000_000n;
// Past ASCII on purpose: the module has no Unicode tables (runtime.c), so its names and item
// identifiers must still meet as the bytes they are: a combining accent, an emoji, a ZWJ sequence.
const film = 'https://example.com/ame\u0301lie \u{1F3AC} \u{1F469}\u200D\u{1F467}.mp4';
const agents = ['alice', 'zoe\u0308'].map((name, i) => {
  const n = enc.encode(name), s = enc.encode('web');
  const h = x.coplay_create(BigInt(0xA0 + i), 7n + BigInt(i), 40000 + i, put(n), n.length, put(s), s.length, clock, wall0 + clock);
  return { name, h, address: 0x0A000001 + i, port: 40000 + i, inbox: [], events: [], player: { item: null, position: 0, rate: 0, at: 0n, readyAt: null } };
});
// A model of the page's player (the HTMLVideoElement adapter does the same): a load or a seek
// is ready 40 ms later; play and pause set where it is; the core hears back what it reports.
function perform(agent, record) {
  const view = new DataView(record.buffer, record.byteOffset, record.byteLength);
  const player = agent.player;
  switch (record[0]) {
    case 1: player.position = view.getFloat64(1, true); player.rate = 0; player.item = dec.decode(record.slice(19, 19 + view.getUint16(17, true))); player.readyAt = clock + 40_000_000n; break;
    case 2: player.position = view.getFloat64(1, true); player.rate = 0; player.readyAt = clock + 40_000_000n; break;
    case 3: player.rate = view.getFloat64(1, true); player.position = view.getFloat64(9, true); player.at = view.getBigInt64(17, true); break;
    case 5: player.rate = 0; player.position = view.getFloat64(1, true); break;
    case 6: player.item = null; player.rate = 0; break;
  }
}
function positionAt(player, wall) {
  if (player.rate === 0 || wall < player.at) return player.position;
  return player.position + player.rate * Number(wall - player.at) / 1e9;
}
function handle(agent, length) {
  for (const r of records(length)) {
    if (r.kind === 1) for (const other of agents) if (other !== agent) other.inbox.push({ data: r.data, from: agent, group: 1 });
    if (r.kind === 2) { const port = r.data[16] | (r.data[17] << 8); const other = agents.find(a => a.port === port); if (other) other.inbox.push({ data: r.data.slice(18), from: agent, group: 0 }); }
    if (r.kind === 4) agent.events.push(summary(JSON.parse(dec.decode(r.data))));
    if (r.kind === 9) perform(agent, r.data);
  }
}
for (const a of agents) handle(a, x.coplay_start(a.h, clock, wall0 + clock));
for (let step = 0; step < 400; step++) {
  clock += 5_000_000n;
  for (const a of agents) {
    const inbox = a.inbox.splice(0);
    for (const m of inbox) { const p = put(m.data); handle(a, x.coplay_datagram(a.h, p, m.data.length, m.from.address, m.from.port, m.group, clock, wall0 + clock)); x.coplay_dealloc(p); }
    handle(a, x.coplay_tick(a.h, clock, wall0 + clock));
    if (a.player.readyAt !== null && clock >= a.player.readyAt) {
      a.player.readyAt = null;
      handle(a, x.coplay_player_report(a.h, 1, a.player.position, 0, 0n, 0, 0, clock, wall0 + clock));
    }
  }
  // The page's ways: its share form (the URL as typed, spaces its own) and its play button.
  if (step === 100) { const l = enc.encode(film); handle(agents[0], x.coplay_share(agents[0].h, put(l), l.length, 0, clock, wall0 + clock)); }
  if (step === 150) handle(agents[1], x.coplay_player_report(agents[1].h, 6, 0, 1, 0n, 0, 0, clock, wall0 + clock));
}
const now = wall0 + clock;
const positions = agents.map(a => positionAt(a.player, now));
const result = { peers: agents.map(a => x.coplay_peer_count(a.h)), positions, events: agents.map(a => a.events.filter(e => !e.startsWith('event'))) };
console.log(JSON.stringify(result));
const met = result.peers.every(n => n === 1)
  && result.events.every(list => list.includes(`activity ${film}`) && list.some(e => e.startsWith('clock-synced')) && list.includes(`playing ${film}`))
  // Within a step (5 ms): a datagram waits up to a step one way and none the other, and a
  // clock estimate is off by half that asymmetry, as NTP's is.
  && agents.every(a => a.player.item === film) && agents.some(a => a.events.includes('clock-synced zoe\u0308'))
  && positions.every(p => p > 0.5) && Math.abs(positions[0] - positions[1]) < 0.005;
if (!met) { console.error('smoke: the two instances did not form a group, share the item and play it together'); process.exit(1); }

// Back to the shipped module.
x = shipped; memory = shipped.memory;
// The browser's path: keyed instances that share no network, only a relay. An in-memory NATS
// (a subject's subscribers get each message, the publisher too) carries the sealed frames; a
// third instance under another key hears them and joins nobody.
const key = new Uint8Array(32).map((_, i) => i * 7 + 1), otherKey = new Uint8Array(32).fill(9);
const sealed = 'https://example.com/sealed.mp4';
const subscribers = new Map();
const relayed = [['carol', key], ['dave', key], ['eve', otherKey]].map(([name, k], i) => {
  const n = enc.encode(name), s = enc.encode('web-relay'), entropy = webcrypto.getRandomValues(new Uint8Array(32));
  // Named to the stage (2): a group of three that forms at once, as the relay's carriage is checked here.
  const h = x.coplay_create_relayed(BigInt(0xC0 + i), 11n + BigInt(i), put(n), n.length, put(s), s.length, put(k), k.length, put(entropy), clock, wall0 + clock, 2);
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
    if (r.kind === 4) agent.events.push(summary(JSON.parse(dec.decode(r.data))));
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
  if (step === 100) { const l = enc.encode(sealed); carryRelayed(relayed[0], x.coplay_share(relayed[0].h, put(l), l.length, 0, clock, wall0 + clock)); }
}
const relayResult = { peers: relayed.map(a => x.coplay_peer_count(a.h)), published: relayed.map(a => a.published), events: relayed.map(a => a.events.filter(e => !e.startsWith('event'))) };
console.log(JSON.stringify(relayResult));
const relayMet = relayResult.peers[0] === 1 && relayResult.peers[1] === 1 && relayResult.peers[2] === 0
  && relayResult.events.slice(0, 2).every(list => list.includes(`activity ${sealed}`) && list.some(e => e.startsWith('clock-synced')))
  && !relayResult.events[2].includes(`activity ${sealed}`);
if (!relayMet) { console.error('smoke: the relayed instances did not form their group, or another key joined it'); process.exit(1); }
