// A watch party: N browser participants (the page's own shell module, participant.mjs, each
// with its own WebSocket to nats-server) in one Node process, spread over THREADS worker threads
// (Tools/web/crowd-thread.mjs; default 2, this machine's cores: each browser has a CPU of its
// own), with two native agents, all through one nats-server on loopback, or SERVERS of them
// clustered (3: as Tools/nats/party-*.conf, participant i and agent i on server i mod SERVERS,
// each given the others after its own). Each participant drives a model of the page's player (a
// load or a seek is ready 20 ms later). Measured: the time until every participant has its
// members, then a pause typed on a native agent until each participant's core reports it
// paused, the same for a seek, a pause typed on the other agent, and a late participant from its
// start until it plays in place. With an audience, a viewer's page must show how many watch.
// With AUDIENCE 1 the participants join as viewers of a large party (PROTOCOL.md, "A party with
// an audience"): the agents are the stage, and each participant follows one of them (its
// members: one) instead of listing everyone. With AUDIENCE 2 they join as a page does by
// default: each asks for a seat, the first to be granted one fill the stage's 32 (beside the
// agents) and list its other 31 members, and the rest follow as viewers. STAGE native agents (default 2, at most 8): the
// first is the host, where the commands are typed. With MEDIA (a local file, 30 s or longer) each
// agent plays it in a headless mpv of its own (`--player mpv`, `vo=null`, `ao=null`) and must
// play and pause it as the crowd does; without, the agents have no player. Prints the figures
// and a summary (JSON) last; exits 1 if a participant missed a command.
//
//   node --experimental-websocket Tools/web/crowd.mjs COPLAY WASM WORKDIR [N] [THREADS] [SERVERS] [AUDIENCE]
//        [STAGE] [MEDIA]
import { execFileSync } from 'node:child_process';
import { spawnOwned } from './owned.mjs';
import { readFileSync, writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { parseKey } from '../../Sources/CoplayWeb/Page/participant.mjs';

const [coplay, wasm, work, countText = '100', threadsText = '2', serversText = '1', audienceText = '0', stageText = '2', media] =
  process.argv.slice(2);
const builtinWebSocket = process.env.CROWD_WEBSOCKET === 'builtin';
// CROWD_RECORD=FILE: the first tab's calls into its module are written to FILE (JSON) as the run
// ends, for Tools/web/command-cost.mjs to replay apart from the crowd.
const stageCount = Math.min(8, Math.max(2, Number(stageText) || 2));
const seats = audienceText === '2';
const viewers = audienceText === '1' || seats;
const count = Number(countText), threads = Math.max(1, Number(threadsText));
const servers = Math.min(3, Math.max(1, Number(serversText) || 1));
// The relay's listening ports below Linux's ephemeral range (32768-60999), where any
// connection's local end may hold a port: per server its client port, its WebSocket and its route.
const base = 23000 + (process.pid % 1000) * 9;
const ports = [0, 1, 2].map((i) => ({ nats: base + 3 * i, websocket: base + 3 * i + 1, route: base + 3 * i + 2 }));
const group = 22000 + (process.pid % 1000), token = 'crowd';
const wallMs = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const children = [];
// An agent's diagnostics kept, its last ones: a run's are some hundreds.
const agentDiagnosticsKept = 5000;
const failures = [];
function check(ok, what) { console.log(`${ok ? 'ok' : 'FAIL'}: ${what}`); if (!ok) failures.push(what); }
function quantile(values, q) { const s = [...values].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN; }
const figures = {};
function figure(name, value, unit = 'ms') { figures[name] = value; console.log(`${name}: ${value.toFixed(1)} ${unit}`); }
async function until(test, ms, step = 20) {
  const end = wallMs() + ms;
  for (;;) { if (test()) return true; if (wallMs() > end) return false; await sleep(step); }
}

for (let i = 0; i < servers; i++) {
  const { nats, websocket, route } = ports[i];
  const routes = ports.slice(0, servers).filter((_, j) => j !== i).map((p) => `"nats-route://127.0.0.1:${p.route}"`);
  const cluster = servers > 1 ? `cluster { name: crowd, host: 127.0.0.1, port: ${route}, routes: [${routes.join(', ')}] }\n` : '';
  writeFileSync(`${work}/nats-${i}.conf`, `server_name: crowd-${i}\nhost: 127.0.0.1\nport: ${nats}\nauthorization { token: "${token}" }\nmax_payload: 4096\n`
    + `max_connections: ${count + 50}\nwebsocket { host: 127.0.0.1, port: ${websocket}, no_tls: true }\n` + cluster);
  children.push(spawnOwned('nats-server', ['-c', `${work}/nats-${i}.conf`], { stdio: 'ignore' }));
}
writeFileSync(`${work}/group.key`, execFileSync(coplay, ['keygen']), { mode: 0o600 });
const key = parseKey(readFileSync(`${work}/group.key`, 'utf8').split('\n').find((l) => l.trim() && !l.startsWith('#')));
await sleep(servers > 1 ? 1500 : 500);  // the routes form
// Server i first, then the others: where a participant connects, and where it fails over to.
const order = (i) => [0, 1, 2].slice(0, servers).map((k) => (i + k) % servers);
const player = media ? ['--player', 'mpv', '--mpv-option', 'vo=null', '--mpv-option', 'ao=null'] : [];
// Without AUDIENCE everyone is named to the stage (today's way: one group). With it the host is
// named (as `coplay party`'s is) and the other agents take the default: each asks for a seat and
// the host grants it, while the tabs are named viewers.
function agent(name, index) {
  const relays = order(index).flatMap((k) => ['--relay', `nats://${token}@127.0.0.1:${ports[k].nats}`]);
  const role = !viewers || index === 0 ? ['--stage'] : [];
  const child = spawnOwned(coplay, ['--name', name, '--interface', 'lo', '--group', `239.255.77.10:${group}`, '--session', 'crowd',
    '--key-file', `${work}/group.key`, ...relays, ...role, ...player], { stdio: ['pipe', 'pipe', 'pipe'] });
  child.agentName = name;
  child.lines = [];
  // Its diagnostics (stderr), the last agentDiagnosticsKept of them: said when a check fails.
  child.diagnostics = [];
  for (const [stream, into] of [[child.stdout, child.lines], [child.stderr, child.diagnostics]]) {
    let partial = '';
    stream.on('data', (d) => {
      partial += d; const p = partial.split('\n'); partial = p.pop(); into.push(...p);
      if (into === child.diagnostics && into.length > agentDiagnosticsKept) into.splice(0, into.length - agentDiagnosticsKept);
    });
  }
  children.push(child);
  return child;
}
// The host first: it joined first, so with AUDIENCE it is the stage's speaker (what a viewer hears
// from it comes in one relay hop; from the second, in two: through the speaker).
const host = agent('host', 0);
await sleep(300);
const second = agent('second', 1);
const stage = [host, second];
for (let i = 2; i < stageCount; i++) stage.push(agent(`stage${i}`, i));

const crowd = [], byName = new Map(), workers = [], watchingSeen = [];
const relayOf = (i) => order(i).map((k) => `ws://${token}@127.0.0.1:${ports[k].websocket}`);
function member(name) { const m = { name, events: [], peers: 0 }; crowd.push(m); byName.set(name, m); return m; }
const started = wallMs();
for (let t = 0; t < threads; t++) {
  const names = [];
  for (let i = t; i < count; i += threads) names.push(`web${i}`);
  const relays = Object.fromEntries(names.map((n) => [n, relayOf(Number(n.slice(3)))]));
  relays.late = relayOf(count);
  const worker = new Worker(new URL('./crowd-thread.mjs', import.meta.url), { workerData: { wasm, names, relays, key, viewers, seats, builtinWebSocket, record: t === 0 ? process.env.CROWD_RECORD : undefined } });
  worker.on('message', (m) => {
    if ('watching' in m) watchingSeen.push(m.watching);
    else if (m.counts) { for (const [name, n] of m.counts) { const x = byName.get(name); if (x) x.peers = n; } }
    else for (const { name, event } of m.events) byName.get(name)?.events.push(event);
  });
  workers.push(worker);
}
for (let i = 0; i < count; i++) member(`web${i}`);
// Each lists the others of the crowd and the agents, less itself; a viewer, the agent it follows.
// With seats, those seated list the stage's other 31 members, and the seats are all taken.
const expected = viewers ? 1 : count + stageCount - 1;
const seatsFree = Math.min(count, 32 - stageCount);
const seated = () => crowd.filter((m) => m.peers > 1);
const formed = await until(() => crowd.every((m) => m.peers >= expected)
  && (!seats || (seated().length === seatsFree && seated().every((m) => m.peers === 31))), 60000, 100);
check(formed, seats ? `the stage's free seats (${seatsFree}) taken, the others of ${count} following a stage member`
  : viewers ? `every one of ${count} viewers follows a stage member`
  : `every one of ${count} participants lists the ${expected} others`);
figure('crowd-formed', wallMs() - started);
if (seats) figure('seated', seated().length, 'participants');
for (const worker of workers) worker.postMessage({ formed: true });

function after(at, test) { return crowd.map((m) => m.events.find((e) => e.at >= at && test(e))); }
const say = (line) => host.stdin.write(line + '\n');
// Whether an agent printed an event (`playing`, `paused`) since `from`, an index in its lines.
const agentSaid = (agent, event, from = 0) => agent.lines.slice(from).some((l) => l.startsWith(`${event} `));
say(`share ${media ?? 'https://example.com/party.webm'} id=party`);
await until(() => crowd.every((m) => m.events.some((e) => e.event === 'activity' && e.item === 'party')), 10000);
say('play');
await until(() => crowd.every((m) => m.events.some((e) => e.event === 'playing' && e.item === 'party')), 10000);
check(crowd.every((m) => m.events.some((e) => e.event === 'playing')), 'every participant plays the shared item');
if (media) {
  await until(() => stage.every((a) => agentSaid(a, 'playing')), 10000);
  check(stage.every((a) => agentSaid(a, 'playing')), `each of the ${stageCount} agents' mpv plays it`);
}
await sleep(1500);

for (const [command, test, name] of [
  ['pause', (e) => e.event === 'paused', 'pause'],
  ['seek 30', (e) => e.event === 'time-jumped' || (e.event === 'paused' && Math.abs(e.position - 30) < 0.01), 'seek'],
  ['play', (e) => e.event === 'playing', 'play'],
]) {
  const at = wallMs();
  const said = stage.map((a) => a.lines.length);
  say(command);
  await until(() => after(at, test).every(Boolean), 5000);
  const seen = after(at, test);
  if (media && command === 'pause') {
    await until(() => stage.every((a, i) => agentSaid(a, 'paused', said[i])), 3000);
    check(stage.every((a, i) => agentSaid(a, 'paused', said[i])), `each of the ${stageCount} agents' mpv paused`);
  }
  const delays = seen.filter(Boolean).map((e) => e.at - at);
  check(delays.length === count, `${command} typed on an agent reaches all ${count} (${delays.length})`);
  figure(`${name}-to-all-p50`, quantile(delays, 0.5));
  figure(`${name}-to-all-p99`, quantile(delays, 0.99));
  figure(`${name}-to-all-max`, Math.max(...delays));
  await sleep(1500);
}

// A pause typed on the second stage member: with AUDIENCE, carried to the viewers by the speaker.
{
  await sleep(500);
  const at = wallMs();
  second.stdin.write('pause\n');
  await until(() => after(at, (e) => e.event === 'paused').every(Boolean), 5000);
  const delays = after(at, (e) => e.event === 'paused').filter(Boolean).map((e) => e.at - at);
  check(delays.length === count, `pause typed on the second agent reaches all ${count} (${delays.length})`);
  figure('pause-from-second-to-all-p50', quantile(delays, 0.5));
  figure('pause-from-second-to-all-p99', quantile(delays, 0.99));
  say('play');
  await sleep(1500);
}

// How many watch, as a viewer's page would show it: every tab a viewer but those seated (the
// speaker tells the count as it changes, looked at every 5 s; the crowd formed 10 s ago or more).
if (viewers) {
  const audience = seats ? count - seated().length : count;
  const asked = watchingSeen.length;
  workers[0].postMessage({ watching: 'web0' });
  await until(() => watchingSeen.length > asked, 2000);
  const shown = watchingSeen[asked];
  check(shown === audience, `a viewer's page shows the ${audience} watching (${shown})`);
}

// A late participant: from its start (its socket opens) until it plays the item in place.
const lateAt = wallMs();
const late = member('late');
workers[0].postMessage({ join: 'late' });
await until(() => late.events.some((e) => e.event === 'playing'), 10000);
const latePlaying = late.events.find((e) => e.event === 'playing');
check(latePlaying, 'a late participant plays the item');
if (latePlaying) figure('late-joiner-to-playing', latePlaying.at - lateAt);

for (const worker of workers) worker.postMessage({ leave: true });
await sleep(1000);
for (const a of stage) a.stdin.end();
await sleep(500);
// Viewers are no agent's peers: their leaving is seen only in the speaker's count of them.
if (!viewers) {
  const left = host.lines.filter((l) => /^peer-left web\d+ .*reason=shutdown/.test(l)).length;
  check(left >= count * 0.9, `the agent saw the crowd leave (${left} of ${count})`);
}
// A check failed: what each agent said, its last lines (events and diagnostics), to see why; with
// CROWD_KEEP=DIR, all of them in DIR too.
if (failures.length) {
  for (const a of stage) {
    console.log(`--- ${a.agentName}: its last events\n${a.lines.slice(-40).join('\n')}\n--- ${a.agentName}: its last diagnostics\n${a.diagnostics.slice(-40).join('\n')}`);
    if (process.env.CROWD_KEEP) {
      writeFileSync(`${process.env.CROWD_KEEP}/${process.pid}-${a.agentName}.events`, a.lines.join('\n'));
      writeFileSync(`${process.env.CROWD_KEEP}/${process.pid}-${a.agentName}.diagnostics`, a.diagnostics.join('\n'));
    }
  }
}
for (const c of children) { try { c.kill('SIGTERM'); } catch { /* gone */ } }
// The CPU the crowd's process took (its threads, not the agents or servers): a steadier measure of
// the tabs' cost than a pause's spread (5 runs of the same code within 10%).
{ const { user, system } = process.cpuUsage(); figure('crowd-cpu', (user + system) / 1000); }
console.log(JSON.stringify({ count, servers, viewers, seats, stage: stageCount, mpv: Boolean(media), figures, failures }));
process.exit(failures.length ? 1 : 0);
