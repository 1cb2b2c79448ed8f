// A tab fed garbage, replays and oversized frames by its server keeps running and keeps its
// state. Two participants (the page's shell module, participant.mjs, with coplay.wasm) meet
// through an in-memory NATS server that speaks the text protocol over a fake WebSocket; then the
// server turns on one of them: every frame of the session replayed, frames of random bytes,
// frames longer than any sealed datagram, truncated and malformed protocol lines, a MSG that
// announces a gigabyte, a line of 20 KiB with no end. The victim must not trap, must keep its
// peer and its item, reconnect when it closes a hostile connection, and still follow a pause.
//
//   node Tools/web/hostile-relay.mjs coplay.wasm [SEED]
import { readFileSync } from 'node:fs';
import { Core, Participant, concat } from '../../Sources/CoplayWeb/Page/participant.mjs';

const [wasm, seedText = '1'] = process.argv.slice(2);
let seed = Number(seedText) >>> 0 || 1;
const random = () => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed / 2 ** 32; };
const enc = new TextEncoder(), dec = new TextDecoder();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The server: subscriptions by subject; every published frame kept for the replay.
const sockets = new Set(), published = [];
class FakeSocket {
  constructor(url) {
    this.url = url; this.subs = new Map(); this.open = true; this.pending = new Uint8Array(0);
    sockets.add(this);
    setTimeout(() => this.onopen?.(), 0);
    setTimeout(() => this.deliver(enc.encode('INFO {"server_id":"fake","max_payload":4096}\r\n')), 1);
  }
  deliver(bytes) { if (this.open && this.onmessage) this.onmessage({ data: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) }); }
  send(bytes) {
    this.pending = concat(this.pending, bytes);
    for (;;) {
      const text = dec.decode(this.pending);
      const end = text.indexOf('\r\n');
      if (end < 0) return;
      const line = text.slice(0, end), words = line.split(' ');
      if (words[0] === 'PUB') {
        const n = Number(words[2]), start = enc.encode(line).length + 2;
        if (this.pending.length < start + n + 2) return;
        const frame = this.pending.slice(start, start + n);
        this.pending = this.pending.slice(start + n + 2);
        published.push({ subject: words[1], frame });
        for (const socket of sockets) for (const [subject, sid] of socket.subs) if (subject === words[1]) socket.msg(subject, sid, frame);
        continue;
      }
      this.pending = this.pending.slice(enc.encode(line).length + 2);
      if (words[0] === 'SUB') this.subs.set(words[1], words[2]);
      if (words[0] === 'PING') setTimeout(() => this.deliver(enc.encode('PONG\r\n')), 1);
    }
  }
  msg(subject, sid, frame) {
    setTimeout(() => this.deliver(concat(enc.encode(`MSG ${subject} ${sid} ${frame.length}\r\n`), frame, enc.encode('\r\n'))), 1);
  }
  close() { if (!this.open) return; this.open = false; sockets.delete(this); setTimeout(() => this.onclose?.(), 1); }
}

const core = await Core.load(readFileSync(wasm));
const key = crypto.getRandomValues(new Uint8Array(32));
function member(name) {
  const m = { name, events: [], diagnostics: [] };
  // Named to the stage, as two that are the group from the start (by default the first would
  // seat itself only after hearing no stage for a second or two): the attack is the point here.
  m.p = new Participant(core, {
    relay: 'ws://fake@127.0.0.1:1', session: 'hostile', key, name, WebSocketImpl: FakeSocket, stage: true,
    onEvent: (e) => m.events.push(e),
    onDiagnostic: (text) => m.diagnostics.push(text),
    onPlayer: (c) => { if (c.op === 'load' || c.op === 'prepare') setTimeout(() => m.p.report('ready', { position: c.position }), 5); },
  });
  m.p.connect();
  return m;
}
const alice = member('alice'), victim = member('victim');
const fail = (why) => { console.error(`hostile-relay: FAIL: ${why}`); process.exit(1); };
await sleep(1500);
if (victim.p.peerCount !== 1) fail(`the two did not meet (${victim.p.peerCount})`);
alice.p.console('share https://example.com/kept.webm id=kept');
await sleep(500);
alice.p.console('play');
await sleep(1000);
const before = victim.p.view();
if (before.item !== 'kept') fail(`the victim has no item before the attack (${before.item})`);

// The attack, on the victim's connection only.
let attacks = 0;
const aliceSocket = [...sockets][0];
const reconnectsBefore = victim.p.reconnects;
for (let round = 0; round < 6; round++) {
  const target = [...sockets].find((s) => s !== aliceSocket);
  if (!target) { await sleep(600); continue; }
  const [subject, sid] = [...target.subs][Math.floor(random() * target.subs.size)];
  // Every frame of the session again: stale or duplicate, never applied twice.
  for (const { subject: s, frame } of published.slice()) if (target.subs.has(s)) { target.msg(s, target.subs.get(s), frame); attacks++; }
  for (let i = 0; i < 300; i++) {
    const n = Math.floor(random() * (i % 3 === 0 ? 4000 : 1300));
    const frame = crypto.getRandomValues(new Uint8Array(n));
    if (i % 7 === 0 && published.length) { const real = published[Math.floor(random() * published.length)].frame.slice(); real[Math.floor(random() * real.length)] ^= 1 << Math.floor(random() * 8); target.msg(subject, sid, real); }
    else target.msg(subject, sid, frame);
    attacks++;
  }
  // Each of these ends the connection as a real client must (the first malformed one does), so
  // each round starts them from a different one.
  const lines = ['+OK', 'INFO {', 'MSG', 'MSG a', 'MSG a 1 -5', 'MSG a 1 x',
    'HMSG a 1 5 5', '\u0000\u0001\u00ff', 'PING', 'PONG', 'MSG ' + subject + ' ' + sid + ' 2\r\nA', '-ERR \'Unknown Protocol Operation\''];
  for (const line of lines.slice(round % lines.length).concat(lines.slice(0, round % lines.length))) {
    target.deliver(enc.encode(line + '\r\n')); attacks++;
  }
  await sleep(200);
  const closer = round % 3;
  if (closer === 0) target.deliver(enc.encode(`MSG ${subject} ${sid} 1000000000\r\n`));
  if (closer === 1) target.deliver(crypto.getRandomValues(new Uint8Array(20 * 1024)).map((b) => (b === 13 ? 14 : b)));
  if (closer === 2) target.deliver(enc.encode(`MSG ${subject} ${sid} 70000\r\n`));
  attacks++;
  await sleep(700);
}
await sleep(2000);
const after = victim.p.view();
if (after.item !== 'kept') fail(`the victim lost its item (${after.item})`);
if (!after.peers.some((p) => p.name === 'alice')) fail('the victim lost alice');
if (victim.p.reconnects - reconnectsBefore < 6) fail(`the victim closed and remade ${victim.p.reconnects - reconnectsBefore} of 6 hostile connections`);
const pausedBefore = victim.events.filter((e) => e.event === 'paused').length;
alice.p.console('pause');
await sleep(800);
if (victim.events.filter((e) => e.event === 'paused').length <= pausedBefore) fail('the victim no longer follows a pause');
const closed = victim.diagnostics.filter((d) => /^relay .*: the server (sent|said)/.test(d)).length;
if (process.env.COPLAY_DEBUG) console.log(victim.diagnostics.join("\n"));
console.log(`hostile-relay: ${attacks} hostile deliveries; the victim closed ${closed} connections and reconnected ${victim.p.reconnects - reconnectsBefore} times, kept item '${after.item}' and peer alice, and followed the pause after it`);
for (const m of [alice, victim]) m.p.close();
process.exit(0);
