// A browser tab's participant without the page: the page's own shell module
// (Sources/CoplayWeb/Page/participant.mjs, which the page's Worker runs) in Node, joined to a
// group through nats-server's WebSocket listener. Prints each event as 'name what' and a summary
// as the last line (JSON).
//
//   node --experimental-websocket Tools/web/tab.mjs coplay.wasm ws://TOKEN@127.0.0.1:PORT \
//        KEYFILE SESSION NAME SECONDS [COMMAND|press:play|press:pause AT-SECONDS]...
import { readFileSync } from 'node:fs';
import { Core, Participant, parseKey } from '../../Sources/CoplayWeb/Page/participant.mjs';

const [wasmPath, relay, keyFile, session, name, seconds, ...script] = process.argv.slice(2);
const core = await Core.load(readFileSync(wasmPath));
// The key file: hex lines, the current key first (comments and blank lines skipped).
const keyHex = readFileSync(keyFile, 'utf8').split('\n').map(l => l.trim()).find(l => l && !l.startsWith('#'));
const events = [];
const summary = (e) => `${e.event} ${e.item ?? e.peer?.name ?? e.state ?? ''}`.trim();
let participant;
function finish() {
  console.log(JSON.stringify({ name, peers: participant.peerCount, published: participant.published, received: participant.received, events }));
  participant.close();
  process.exit(0);
}
participant = new Participant(core, {
  relay, session, key: parseKey(keyHex), name,
  onEvent: (e) => { events.push(summary(e)); console.log(JSON.stringify(e)); },
  onDiagnostic: (text) => console.error('tab: ' + text),
  onExit: finish,
});
participant.connect();
// Commands typed at given seconds (a test module's console), or a button the page has pressed
// (`press:play`, `press:pause`: the page's Play button, a report to the core, as the page makes it).
const act = (word) => word.startsWith('press:') ? participant.report(word.slice(6), { rate: 1 }) : participant.console(word);
for (let i = 0; i + 1 < script.length; i += 2) setTimeout(() => act(script[i]), Number(script[i + 1]) * 1000);
setTimeout(() => { participant.leave(); setTimeout(finish, 500); }, Number(seconds) * 1000);
