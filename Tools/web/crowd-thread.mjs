// One worker thread of Tools/web/crowd.mjs: its share of the crowd, each participant (the page's
// shell module) with a model of the page's player (a load or a seek is ready 20 ms later). It
// sends the main thread the events the measurements need, with their instants, and each
// participant's peer count every 100 ms.
import { readFileSync, writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { Core, Participant } from '../../Sources/CoplayWeb/Page/participant.mjs';
import { LeanWebSocket } from './lean-websocket.mjs';
import { recordingCore } from './recorded-core.mjs';

const { wasm, names, relays, key, viewers = false, seats = false, builtinWebSocket = false, record } = workerData;
const WebSocketImpl = builtinWebSocket ? globalThis.WebSocket : LeanWebSocket;
const core = await Core.load(readFileSync(wasm));
// With `record`, the first tab has a module instance of its own whose calls are kept (recorded-core.mjs),
// the first recordedMax of them: a run's are some 200 (a replay of a prefix is still whole).
const recorded = [], recordedMax = 100_000;
let recordedAll = true;
const recordedCore = record ? await recordingCore(readFileSync(wasm), (call) => {
  if (recorded.length < recordedMax) recorded.push(call); else recordedAll = false;
}) : null;
const participants = new Map();
const measured = new Set(['activity', 'playing', 'paused', 'time-jumped']);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The events of one turn of the loop go to the main thread in one message (a message each cost
// the thread 60 us: the harness's load, not a tab's), each with the instant it happened.
let pending = [];
function report(m) {
  if (pending.push(m) === 1) setImmediate(() => { parentPort.postMessage({ events: pending }); pending = []; });
}
function join(name) {
  const own = recordedCore && name === names[0];
  const p = new Participant(own ? recordedCore : core, {
    relay: relays[name], session: 'crowd', key, name, viewer: viewers && !seats, stage: !viewers, WebSocketImpl,
    onEvent: (e) => {
      if (own && recordedAll) recorded.at(-1)?.events.push(e.event);
      if (measured.has(e.event)) {
        report({ name, event: { event: e.event, item: e.item, position: e.position, at: performance.timeOrigin + performance.now() } });
      }
    },
    onPlayer: (c) => { if (c.op === 'load' || c.op === 'prepare') setTimeout(() => p.report('ready', { position: c.position }), 20); },
  });
  p.connect();
  participants.set(name, p);
}
parentPort.on('message', (m) => {
  if (m.formed) clearInterval(counting);
  if (m.join) join(m.join);
  // How many watch, as the participant's view says (the speaker's summary, PROTOCOL.md).
  if (m.watching) parentPort.postMessage({ watching: participants.get(m.watching)?.view()?.watching ?? null });
  if (m.leave) {
    for (const p of participants.values()) p.leave();
    if (record) writeFileSync(record, JSON.stringify({ wasm, calls: recorded }));
    setTimeout(() => { for (const p of participants.values()) p.close(); process.exit(0); }, 500);
  }
});
// Until the main thread has seen the crowd formed: past that the counts are not needed, and asking
// each of a thousand participants ten times a second is the harness's load, not a tab's.
const counting = setInterval(() => parentPort.postMessage({ counts: [...participants].map(([name, p]) => [name, p.peerCount]) }), 100);
for (let i = 0; i < names.length; i++) { join(names[i]); if (i % 10 === 9) await sleep(50); }
