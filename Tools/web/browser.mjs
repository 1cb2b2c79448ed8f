// A browser tab in a group with native agents, end to end, on loopback (run it inside a network
// namespace of its own: Tools/web/browser-check does). nats-server with its WebSocket listener,
// `coplay web` serving the page and two WebM files made by ffmpeg, two native agents through the
// relay (one drives a headless mpv, one the simulated player), and a browser: headless Chromium
// over the DevTools protocol, firefox-esr over WebDriver BiDi, or WebKitGTK's MiniBrowser over W3C
// WebDriver (BROWSER_ENGINE; drivers.mjs), the same scenario in each. The invitation comes from `coplay invite` (its QR code read back with
// zbarimg); the tab clicks Join, then:
//   - the agent's share and play reach the tab, which plays with mpv: the media clocks' offset
//     (the tab's currentTime against mpv's audio-pts, each read with its own clock's instant);
//   - a pause pressed in mpv pauses the tab, a seek and a play in the tab move mpv, a pause in
//     the tab pauses mpv (each latency from the press to the other's element event);
//   - a second tab that joins mid-item starts in place; the page's queue form adds an entry; the
//     queue's next moves the tab too;
//   - a screenshot of the page is kept.
// Prints one figure per line and a summary (JSON) last; exits 1 when a check fails.
// COPLAY_BROWSER_DEBUG=1 prints the late tab's last 40 steps (its trace); =raw also each reading of
// the media clocks (the tab's instant and position, mpv's instant and audio-pts); =steady the
// element's clock every few ms for 3 s once in sync.
//
//   node Tools/web/browser.mjs COPLAY WEBDIR WORKDIR [ARTIFACTS]
import { execFileSync } from 'node:child_process';
import { spawnOwned } from './owned.mjs';
import { writeFileSync, mkdirSync, copyFileSync, readdirSync, existsSync, createWriteStream, readFileSync } from 'node:fs';
import net from 'node:net';
import { launch } from './drivers.mjs';
import { freshPosition } from './probes.mjs';

const [coplay, webDir, work, artifacts = work] = process.argv.slice(2);
const engine = process.env.BROWSER_ENGINE ?? 'chromium';
const nats = 14222, websocket = 14223, web = 18080, group = 47790, token = 'browser-check';
const children = [];
const wallMs = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const failures = [];
function check(ok, what) { if (!ok) { failures.push(what); console.log(`FAIL: ${what}`); } else console.log(`ok: ${what}`); }
function start(command, args, name) {
  const child = spawnOwned(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  child.lines = []; child.name = name;
  let partial = '';
  child.stdout.on('data', (d) => { partial += d; const parts = partial.split('\n'); partial = parts.pop(); child.lines.push(...parts); });
  child.stderr.on('data', (d) => { child.errors = (child.errors ?? '') + d; });
  children.push(child);
  return child;
}
// What went on around a failed check, printed beside it (a CI log keeps its head and its tail):
// the tab's last steps and the deck agent's last lines.
async function explain() {
  const steps = !page ? '' : await page.evaluate('coplayPlayer.trace.slice(-30).map(t => `${t.atMs.toFixed(1)} ${t.type} at ${t.position.toFixed(3)} ${t.command ?? ""}`).join("\\n")').catch((e) => e.message);
  console.log(`  the tab's last steps (now ${wallMs().toFixed(1)}):\n${steps}\n  the deck's last lines:\n${deck.lines.slice(-12).join('\n')}`);
}
async function until(test, ms, step = 20) {
  const end = wallMs() + ms;
  for (;;) { const value = await test(); if (value) return value; if (wallMs() > end) return null; await sleep(step); }
}
function quantile(values, q) { const s = [...values].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN; }
const figures = {};
const rounds = Number(process.env.BROWSER_ROUNDS ?? 3);
const hiddenSeconds = Number(process.env.BROWSER_HIDDEN_SECONDS ?? 20);
// Every latency measured, for the benchmark to pool across runs.
const samples = { pauseMpvToTab: [], playMpvToTab: [], pauseTabToMpv: [], playTabToMpv: [], media: [], frames: [], late: [] };
function figure(name, value, unit = 'ms') { figures[name] = value; console.log(`${name}: ${typeof value === 'number' ? value.toFixed(2) : value} ${unit}`); }

// MARK: The material and the servers
mkdirSync(`${work}/root`, { recursive: true });
for (const f of readdirSync(webDir)) copyFileSync(`${webDir}/${f}`, `${work}/root/${f}`);
// The film outlasts the whole run (its hidden phase included); the second item is for the queue.
for (const [file, tone, seconds] of [['film.webm', 440, 180 + hiddenSeconds], ['second.webm', 660, 60]]) {
  if (!existsSync(`${work}/${file}`)) {
    execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=30', '-f', 'lavfi', '-i', `sine=frequency=${tone}:sample_rate=48000`,
      '-t', String(seconds), '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '100k', '-g', '30', '-c:a', 'libopus', '-b:a', '48k', `${work}/${file}`]);
  }
  copyFileSync(`${work}/${file}`, `${work}/root/${file}`);
}
writeFileSync(`${work}/nats.conf`, `host: 127.0.0.1\nport: ${nats}\nauthorization { token: "${token}" }\nmax_payload: 4096\nwebsocket { host: 127.0.0.1, port: ${websocket}, no_tls: true }\n`);
const key = execFileSync(coplay, ['keygen']).toString();
writeFileSync(`${work}/group.key`, key, { mode: 0o600 });
const server = start('nats-server', ['-c', `${work}/nats.conf`], 'nats');
const webServer = start(coplay, ['web', '--listen', `127.0.0.1:${web}`, '--root', `${work}/root`], 'web');
await sleep(500);

const agentArgs = (name) => ['--name', name, '--interface', 'lo', '--group', `239.255.77.9:${group}`, '--session', 'browser-check',
  '--key-file', `${work}/group.key`, '--relay', `nats://${token}@127.0.0.1:${nats}`];
const deck = start(coplay, [...agentArgs('deck'), '--player', 'mpv', '--mpv-option', 'vo=null', '--mpv-option', 'ao=null', '--mpv-socket', `${work}/mpv.sock`], 'deck');
const sofa = start(coplay, agentArgs('sofa'), 'sofa');
const say = (agent, line) => agent.stdin.write(line + '\n');

// mpv's IPC: requests answered by request_id; every reply and event carries node's instant.
const mpv = await until(() => new Promise((resolve) => {
  const socket = net.connect(`${work}/mpv.sock`, () => resolve(socket));
  socket.on('error', () => resolve(null));
}), 10000, 100);
check(mpv, 'mpv started by the deck agent answers on its IPC socket');
const mpvWaiting = new Map(), mpvEvents = [];
let mpvNext = 1, mpvPartial = '';
mpv.on('data', (d) => {
  const at = wallMs();
  mpvPartial += d;
  const lines = mpvPartial.split('\n'); mpvPartial = lines.pop();
  for (const line of lines) {
    const m = JSON.parse(line);
    if (m.request_id && mpvWaiting.has(m.request_id)) { mpvWaiting.get(m.request_id)({ ...m, at }); mpvWaiting.delete(m.request_id); }
    else if (m.event) mpvEvents.push({ ...m, at });
  }
});
function mpvCommand(...command) {
  const id = mpvNext++, sent = wallMs();
  mpv.write(JSON.stringify({ command, request_id: id }) + '\n');
  return new Promise((resolve) => mpvWaiting.set(id, (m) => resolve({ ...m, sent, mid: (sent + m.at) / 2 })));
}
await mpvCommand('observe_property', 1, 'pause');

// MARK: The invitation
const link = execFileSync(coplay, ['invite', '--page', `http://127.0.0.1:${web}/`, '--relay', `ws://${token}@127.0.0.1:${websocket}`,
  '--session', 'browser-check', '--key-file', `${work}/group.key`, '--no-qr']).toString().trim();
check(link.includes('#relay=') && link.includes('&key='), 'coplay invite prints a link with relay, session and key');
const withQR = execFileSync(coplay, ['invite', '--page', `http://127.0.0.1:${web}/`, '--relay', `ws://${token}@127.0.0.1:${websocket}`,
  '--session', 'browser-check', '--key-file', `${work}/group.key`]).toString().split('\n');
try {
  // The terminal's half blocks back into modules, as a picture zbarimg reads.
  const rows = [];
  for (const line of withQR.slice(2).filter(Boolean)) {
    const top = [], bottom = [];
    for (const ch of line) { const [t, b] = { '█': [1, 1], '▀': [1, 0], '▄': [0, 1], ' ': [0, 0] }[ch]; top.push(t); bottom.push(b); }
    rows.push(top, bottom);
  }
  const scale = 4, w = rows[0].length * scale, h = rows.length * scale;
  const pixels = Buffer.alloc(w * h);
  rows.forEach((row, y) => row.forEach((v, x) => { for (let dy = 0; dy < scale; dy++) pixels.fill(v ? 255 : 0, (y * scale + dy) * w + x * scale, (y * scale + dy) * w + x * scale + scale); }));
  writeFileSync(`${work}/invite.pgm`, Buffer.concat([Buffer.from(`P5 ${w} ${h} 255\n`), pixels]));
  const read = execFileSync('zbarimg', ['-q', '--raw', `${work}/invite.pgm`], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  check(read === link, 'the QR code that coplay invite draws reads back (zbarimg) as the link');
} catch (error) { check(false, `the QR code reads back: ${error.message}`); }

// MARK: The tab joins
console.log(`engine: ${engine}`);
const browserLog = createWriteStream(`${work}/browser.log`);
const browser = await launch(engine, { work, log: browserLog });
let page, late;
try {
  // A link without its key, or with a mangled one, is refused on the page with what is wrong.
  for (const [broken, says] of [[link.replace(/&key=[0-9a-f]+/, ''), 'no group key'], [link.slice(0, -6) + 'zz', 'damaged']]) {
    const refused = await browser.newPage(broken);
    const shown = await refused.evaluate('({ text: document.getElementById("refused").textContent, hidden: document.getElementById("refused").hidden, join: document.getElementById("join").disabled })');
    check(!shown.hidden && shown.join && shown.text.includes(says), `the page refuses a link with ${says === 'damaged' ? 'a mangled key' : 'no key'}: "${shown.text}"`);
    await refused.close();
  }
  page = await browser.newPage(link);
  // Served cross-origin isolated (WebServer.isolation): a fine clock where the engine knows
  // COEP credentialless (Chromium, Firefox; WebKit does not, and is served as before).
  const isolated = await page.evaluate('self.crossOriginIsolated === true');
  console.log(`cross-origin isolated: ${isolated}`);
  if (engine !== 'webkit') check(isolated, `the page is cross-origin isolated in ${engine} (COOP, COEP credentialless)`);
  await page.type('#name', 'tab');
  const clicked = await page.click('#join');
  // Both, not the first: by default the tab follows one agent (it asks for a seat, and lists the
  // stage once seated), so the first count seen may be 1.
  const together = await until(async () => (await page.evaluate('view && view.peers.filter(p => p.clockSynced).length')) >= 2, 8000);
  check(together, 'the tab lists both agents and has measured their clocks');
  figure('join-to-members-synced', wallMs() - clicked);
  await until(() => deck.lines.some(l => l.startsWith('clock-synced tab')), 5000);
  check(deck.lines.some(l => l.startsWith('peer-joined tab')), 'the deck agent lists the tab');

  // The deck shares and plays; the tab plays with mpv.
  say(deck, `share http://127.0.0.1:${web}/film.webm id=film title=Film`);
  const loaded = await until(() => page.evaluate('coplayPlayer.item === "film" && !coplayPlayer.awaitingReady'), 10000);
  check(loaded, 'the share reaches the tab, whose video is ready at the item');
  const pressed = wallMs();
  say(deck, 'play');
  const playing = await until(() => page.evaluate('!document.getElementById("video").paused && document.getElementById("video").currentTime > 0.1'), 8000);
  check(playing, 'play pressed on the deck plays the tab');
  figure('play-to-tab-playing', wallMs() - pressed);
  await sleep(3000);  // the rate nudges settle the start

  // The media clocks: the tab's position at its wall instant, mpv's audio-pts at the middle of
  // its request's round trip; both clocks are this machine's. The tab's position is made of its
  // currentTime readings over 60 ms, each carried forward to the last one's instant at the
  // element's rate. Where the readings move in steps (most alike the one before: Firefox's moves
  // every 40 ms or so), each is where the media was up to a step before, and the highest is taken.
  // Where they move continuously, their mean is: Chromium's clock here runs a sawtooth of about
  // 10 ms (its audio output has no device in a namespace; MEASUREMENTS.md), and the highest
  // reading was its top, a steady +3 ms that was the measure's, not the tab's.
  // `singles`, when given, gets the offsets by the last reading alone, and `tops` by the highest
  // (the measure before it told stepped readings from continuous ones).
  let steppedCount = 0;
  async function offsets(target, count, singles, tops) {
    const values = [];
    for (let i = 0; i < count; i++) {
      const tab = await target.evaluate(freshPosition);
      const m = await mpvCommand('get_property', 'audio-pts');
      if (!tab.paused && typeof m.data === 'number') {
        values.push((tab.p + (m.mid - tab.at) / 1000 * tab.r - m.data) * 1000);
        if (process.env.COPLAY_BROWSER_DEBUG === 'raw') console.log(`raw ${tab.at.toFixed(1)} ${tab.p.toFixed(6)} ${tab.single.toFixed(6)} ${m.mid.toFixed(1)} ${m.data.toFixed(6)} ${tab.stepped ? 'stepped' : 'continuous'} ${tab.top.toFixed(6)}`);
        singles?.push((tab.single + (m.mid - tab.at) / 1000 * tab.r - m.data) * 1000);
        tops?.push((tab.top + (m.mid - tab.at) / 1000 * tab.r - m.data) * 1000);
        steppedCount += tab.stepped ? 1 : 0;
      }
      await sleep(100);
    }
    return values;
  }
  const singles = [], tops = [];
  const media = await offsets(page, 50, singles, tops);
  // =steady: the element's clock read every few ms for 3 s, each reading's lead over the first
  // carried at 1 (ms), and the rate: how it moves between the follower's readings.
  if (process.env.COPLAY_BROWSER_DEBUG === 'steady') {
    const trace = await page.evaluate(`new Promise((done) => { const v = document.getElementById('video'), s = [], b = performance.now();
      const h = setInterval(() => { s.push([performance.now(), v.currentTime, v.playbackRate]); if (performance.now() - b > 3000) { clearInterval(h); done(s); } }, 1); })`);
    const [t0, p0] = trace[0];
    for (const [t, p, r] of trace) console.log(`steady ${(t - t0).toFixed(1)} ${((p - p0) * 1000 - (t - t0)).toFixed(2)} ${r}`);
  }
  figure('media-offset-tab-mpv-one-reading-p50', quantile(singles.map(Math.abs), 0.5));
  figure('media-offset-tab-mpv-one-reading-p99', quantile(singles.map(Math.abs), 0.99));
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
  figure('media-offset-tab-mpv-one-reading-mean-signed', mean(singles));
  figure('media-offset-tab-mpv-highest-reading-mean-signed', mean(tops));
  figure('media-readings-stepped', steppedCount, `of ${media.length}`);
  // The frames shown: each frame's media time at the instant it is due on the display
  // (requestVideoFrameCallback), against mpv's audio-pts at that instant.
  const frames = [];
  for (let i = 0; i < 40; i++) {
    const f = await page.evaluate(`new Promise((done) => document.getElementById('video').requestVideoFrameCallback((now, m) => done({ media: m.mediaTime, shown: performance.timeOrigin + m.expectedDisplayTime, r: document.getElementById('video').playbackRate })))`);
    const m = await mpvCommand('get_property', 'audio-pts');
    if (typeof m.data === 'number') frames.push((f.media - (m.data - (m.mid - f.shown) / 1000 * f.r)) * 1000);
    await sleep(60);
  }
  samples.frames.push(...frames);
  figure('frames-shown-tab-mpv-p50', quantile(frames.map(Math.abs), 0.5));
  figure('frames-shown-tab-mpv-p95', quantile(frames.map(Math.abs), 0.95));
  samples.media.push(...media);
  const absolute = media.map(Math.abs);
  figure('media-offset-tab-mpv-p50', quantile(absolute, 0.5));
  figure('media-offset-tab-mpv-p99', quantile(absolute, 0.99));
  figure('media-offset-tab-mpv-mean-signed', media.reduce((a, b) => a + b, 0) / media.length);
  check(media.length >= 40 && quantile(absolute, 0.5) < 40, 'the tab plays within 40 ms of mpv (p50)');
  if (!(quantile(absolute, 0.5) < 40)) await explain();

  // A pause pressed in mpv: the tab's element pauses.
  // The tab keeps its last 100 steps, and a nudge of its rate is one every 100 ms: a step is
  // found by when it happened on the tab's clock (counting the steps of a type missed the new
  // one when an old one of that type was shifted out at the same time).
  const tabNow = () => page.evaluate('performance.timeOrigin + performance.now()');
  const stepSince = async (type, since) =>
    (await page.evaluate('coplayPlayer.trace')).find(t => t.type === type && t.atMs >= since);
  let since = await tabNow();
  const mpvPause = await mpvCommand('set_property', 'pause', true);
  const tabPaused = await until(() => stepSince('pause', since), 5000);
  check(tabPaused, 'a pause pressed in mpv pauses the tab');
  if (tabPaused) samples.pauseMpvToTab.push(tabPaused.atMs - mpvPause.sent);
  await sleep(1000);

  // A seek in the tab (its +10 s button) moves mpv; its Play plays mpv; its Pause pauses mpv.
  const atPause = (await mpvCommand('get_property', 'time-pos')).data;
  const seekEvents = mpvEvents.length;
  const clickedSeek = await page.click('#forward');
  const sought = await until(() => mpvEvents.slice(seekEvents).find(e => e.event === 'playback-restart'), 5000);
  const afterSeek = (await mpvCommand('get_property', 'time-pos')).data;
  check(sought && Math.abs(afterSeek - atPause - 10) < 0.5, `a seek in the tab moves mpv 10 s (${atPause?.toFixed(2)} -> ${afterSeek?.toFixed(2)})`);
  if (sought) figure('seek-tab-to-mpv', sought.at - clickedSeek);
  // The tab's element is at the new place too (paused, the group's seek reaches it as a pause
  // there) before its Play is pressed: a Play while its element still seeks measures that seek
  // (Chromium's seek in a WebM over HTTP: 45 ms here; the page reloads the media after 2 s).
  const tabReady = await until(() => page.evaluate(`coplayPlayer.trace.some(t => t.type === 'seeked' && t.atMs >= ${clickedSeek} && Math.abs(t.position - ${afterSeek}) < 0.5) && !document.getElementById('video').seeking`), 10000);
  check(tabReady, 'the tab is where its seek went');
  if (tabReady) figure('seek-tab-ready', wallMs() - clickedSeek);
  else await explain();
  await sleep(800);
  const pauseEvents = () => mpvEvents.filter(e => e.event === 'property-change' && e.name === 'pause');
  // When the page had a click of its Play button (its own trace, on the same wall clock): a
  // WebDriver click is an HTTP round trip, and the driver's instant comes before all of it. The
  // driver's instant where the page traced none.
  const pageHadClick = async (clicked) => {
    const trace = await page.evaluate(`coplayPlayer.trace.filter(t => t.type === 'pressed' && t.atMs >= ${clicked - 5})`);
    return trace.length ? trace[trace.length - 1].atMs : clicked;
  };
  // Rounds of: Play in the tab -> mpv plays; Pause in the tab -> mpv pauses; play in mpv -> the
  // tab plays; pause in mpv -> the tab pauses.
  for (let round = 0; round < rounds; round++) {
    let count = pauseEvents().length;
    const clickedPlay = await pageHadClick(await page.click('#play'));
    const mpvPlays = await until(() => pauseEvents().slice(count).find(e => e.data === false), 5000);
    check(mpvPlays, `Play in the tab plays mpv (round ${round + 1})`);
    if (!mpvPlays) await explain();
    if (mpvPlays) samples.playTabToMpv.push(mpvPlays.at - clickedPlay);
    await sleep(1500);
    if (round === 0) {
      const afterResume = await offsets(page, 20);
      figure('media-offset-after-seek-p50', quantile(afterResume.map(Math.abs), 0.5));
    }
    count = pauseEvents().length;
    const clickedPause = await pageHadClick(await page.click('#play'));
    const mpvPauses = await until(() => pauseEvents().slice(count).find(e => e.data === true), 5000);
    check(mpvPauses, `Pause in the tab pauses mpv (round ${round + 1})`);
    if (mpvPauses) samples.pauseTabToMpv.push(mpvPauses.at - clickedPause);
    await sleep(600);
    since = await tabNow();
    const mpvPlay = await mpvCommand('set_property', 'pause', false);
    // The element's 'playing', or where an engine fires none after a play() (WebKit), its 'play'.
    const tabPlays = await until(async () => (await stepSince('playing', since)) ?? (await stepSince('unpaused', since)), 5000);
    check(tabPlays, `play pressed in mpv plays the tab (round ${round + 1})`);
    if (!tabPlays) await explain();
    if (tabPlays) samples.playMpvToTab.push(tabPlays.atMs - mpvPlay.sent);
    await sleep(1500);
    since = await tabNow();
    const pressed = await mpvCommand('set_property', 'pause', true);
    const paused = await until(() => stepSince('pause', since), 5000);
    check(paused, `a pause pressed in mpv pauses the tab (round ${round + 1})`);
    if (paused) samples.pauseMpvToTab.push(paused.atMs - pressed.sent);
    await sleep(600);
  }
  for (const [name, values] of Object.entries(samples)) if (values.length && name !== 'media' && name !== 'frames') {
    figure(`${name}-p50`, quantile(values, 0.5));
    figure(`${name}-max`, Math.max(...values));
  }

  // Playing again, a second tab joins mid-item and starts in place.
  say(deck, 'play');
  await sleep(2000);
  // The late tab steers by skips alone, as on a browser whose playbackRate does not steer. It has
  // a window of its own: a tab in the first one's would hide that one, or be hidden by it (a
  // hidden page is not steered), and the two are watched at once.
  late = await browser.newPage(link.replace('/#', '/?steer=skip#'), { window: true });
  await late.type('#name', 'late');
  const lateClicked = await late.click('#join');
  const latePlaying = await until(() => late.evaluate('!document.getElementById("video").paused && document.getElementById("video").currentTime > 1'), 10000);
  check(latePlaying, 'a tab that joins mid-item plays');
  if (latePlaying) {
    figure('late-join-click-to-playing', wallMs() - lateClicked);
    await sleep(2500);
    const skipsNow = () => late.evaluate('({ mode: coplayPlayer.steering.mode, skips: coplayPlayer.steering.skips })');
    const before = await skipsNow(), measuredFrom = wallMs();
    const lateOffsets = await offsets(late, 40);
    samples.late = lateOffsets;  // signed: which way a skip lands
    if (process.env.COPLAY_BROWSER_DEBUG) console.log(JSON.stringify(await late.evaluate('coplayPlayer.trace.slice(-40)')));
    figure('late-tab-offset-p50', quantile(lateOffsets.map(Math.abs), 0.5));
    figure('late-tab-offset-p99', quantile(lateOffsets.map(Math.abs), 0.99));
    check(lateOffsets.length > 20 && quantile(lateOffsets.map(Math.abs), 0.5) < 60, 'the late tab starts in place (p50 within 60 ms of mpv)');
    const steering = await skipsNow();
    check(steering.mode === 'skip', 'the late tab steers by skips (?steer=skip)');
    figure('skip-steering-skips', steering.skips, 'skips');
    // No seek loop: at most one skip every 3 s while it is measured (the follower's quiet time).
    const perThree = (steering.skips - before.skips) / ((wallMs() - measuredFrom) / 3000);
    figure('skip-steering-skips-per-3s', perThree, 'skips');
    check(perThree <= 1, `skip-only steering makes no seek loop (${perThree.toFixed(2)} skips per 3 s)`);
  }

  // A frozen page (bfcache, a phone's tab in the background): the first tab, hidden, and its
  // worker are frozen 8 s (agents count it gone; a browser freezes only a page out of view),
  // then resumed as it is shown: it reconnects, and must play in sync with mpv again within 2 s.
  if (!page.canFreeze) {
    console.log(`skip: ${engine}'s driver cannot freeze a page`);
  } else {
    await page.hide();
    await page.freeze();
    await sleep(8000);
    const resumed = wallMs();
    // A frozen page is a hidden one; a browser resumes it as it shows it again.
    await page.resume();
    let inSync = 0, backAt = null;
    while (wallMs() - resumed < 6000 && inSync < 3) {
      const [offset] = await offsets(page, 1);
      if (offset !== undefined && Math.abs(offset) < 20) { inSync++; backAt ??= wallMs(); } else { inSync = 0; backAt = null; }
    }
    check(inSync >= 3, 'a tab frozen for 8 s plays in sync with mpv again after it resumes');
    if (inSync < 3) {
      console.log('frozen tab: ' + JSON.stringify(await page.evaluate('(() => { const v = document.getElementById("video"); return { t: v.currentTime, paused: v.paused, seeking: v.seeking, ready: v.readyState, network: v.networkState, buffered: [...Array(v.buffered.length).keys()].map(i => [v.buffered.start(i), v.buffered.end(i)]), error: v.error && v.error.message }; })()')));
      console.log('web server: ' + webServer.lines.slice(-8).join(' | '));
    }
    if (backAt) figure('frozen-8s-resumed-to-in-sync', backAt - resumed);
    const seen = await until(() => page.evaluate('view && view.peers.filter(p => p.state !== "suspected").length >= 3'), 5000);
    check(seen, 'the resumed tab lists the others again');
  }

  // A hidden tab (another tab in front, a window minimized, as on a phone or a desktop): its page's timers are
  // throttled but its core runs in a Worker. It must stay a member, make no group pause, and be
  // in sync with mpv within 2 s of being shown again.
  const hiddenAt = wallMs(), linesBefore = deck.lines.length;
  await page.hide();
  const hidden = await page.evaluate('document.visibilityState');
  // Every engine's driver hides it (Firefox's by a tab in front, the others' by minimizing its window): a page that stays
  // visible is a failure, not a step skipped.
  check(hidden === 'hidden', `the tab is hidden (${hidden})`);
  if (hidden === 'hidden') {
    await sleep(hiddenSeconds * 1000);
    const meanwhile = deck.lines.slice(linesBefore);
    check(!meanwhile.some(l => /^peer-left tab /.test(l)), `the tab hidden ${hiddenSeconds} s stays a member`);
    check(!meanwhile.some(l => /^paused .* by tab\b/.test(l)), 'the hidden tab makes no group pause');
    const shown = wallMs();
    await page.show();
    let inSync = 0, backAt = null;
    while (wallMs() - shown < 8000 && inSync < 3) {
      const [offset] = await offsets(page, 1);
      if (offset !== undefined && Math.abs(offset) < 20) { inSync++; backAt ??= wallMs(); } else { inSync = 0; backAt = null; }
    }
    check(inSync >= 3 && backAt - shown <= 2000, `the tab hidden ${hiddenSeconds} s is in sync with mpv within 2 s of being shown`);
    if (backAt) figure(`hidden-${hiddenSeconds}s-shown-to-in-sync`, backAt - shown);
    figure('hidden-tab-wall', wallMs() - hiddenAt);
  }
  if (hidden !== 'hidden') await page.show();

  // The queue: an entry added on the sofa; next from the deck moves the tabs to it.
  say(sofa, `queue add http://127.0.0.1:${web}/second.webm id=second title=Second`);
  await sleep(1000);
  // The page's queue form, after the sofa's entry (so that next still goes to that): a URL with
  // a space and an '=' of its own (a console line would split it) reaches the queue whole.
  const typedURL = `http://127.0.0.1:${web}/second.webm?note=from the tab`;
  await page.type('#queue-url', typedURL);
  await page.click('#queue-form button');
  const added = await until(() => deck.lines.find(l => /^queue-changed added \S+ by tab/.test(l)), 5000);
  say(deck, 'queue');
  const listed = added && await until(() => deck.lines.find(l => l.includes(`${typedURL} (added by tab)`)), 3000);
  check(added && listed, `the page's queue form adds its URL whole (${added ?? 'nothing added'})`);
  say(deck, 'next');
  const moved = await until(() => page.evaluate('coplayPlayer.item === "second" && !document.getElementById("video").paused'), 8000);
  check(moved, 'the queue advances the tab too (next from the deck)');
  await sleep(1500);

  // Copies of the tabs' own: the deck shares a film from its disk, known by its content (its
  // fingerprint is its id; its address is a path no browser reads). Each tab says in words that
  // it has no copy and stands aside (cannotPlay:noCopy, at the deck too). The late tab's person
  // picks a copy in the page's file input (another name, in another folder, through the engine's
  // own protocol); the first tab's picks another encode of it (the same streams remuxed: other
  // bytes, the same name and length), which is offered, and played once accepted. Both play from
  // the device, in sync with mpv; the deck lists the first as another encode.
  mkdirSync(`${work}/phone`, { recursive: true });
  copyFileSync(`${work}/second.webm`, `${work}/phone/Our copy (2026).webm`);
  execFileSync('ffmpeg', ['-y', '-v', 'error', '-i', `${work}/second.webm`, '-map', '0', '-c', 'copy', '-metadata', 'title=another encode',
    `${work}/phone/Second.webm`]);
  say(deck, `share ${work}/second.webm`);
  const lacking = await until(() => page.evaluate('coplayPlayer.lacking && !document.getElementById("problem").hidden && document.getElementById("problem").textContent'), 8000);
  check(lacking && /second\.webm/.test(lacking) && /no copy/.test(lacking), `the tab says it has no copy of the film, in words ("${lacking}")`);
  // The deck's `peers`: its entry for one participant.
  const entry = async (who) => {
    say(deck, 'peers');
    await sleep(150);
    const line = deck.lines.findLast((l) => /^peers /.test(l)) ?? '';
    return line.replace(/^peers \d+: /, '').split(' | ').find((e) => e.startsWith(`${who} `)) ?? '';
  };
  const noCopyAt = await until(async () => /cannotPlay:noCopy/.test(await entry('tab')) && /cannotPlay:noCopy/.test(await entry('late')), 5000, 50);
  check(noCopyAt, 'the deck lists both tabs as cannotPlay:noCopy');
  say(deck, 'play');
  await sleep(1000);
  const picked = wallMs();
  await late.setFiles('#own-file', [`${work}/phone/Our copy (2026).webm`]);
  const latePlays = await until(() => late.evaluate('coplayPlayer.url?.startsWith("blob:") && !document.getElementById("video").paused && document.getElementById("video").currentTime > 0.5'), 10000);
  check(latePlays, 'the copy picked in the late tab plays from the device (an object URL)');
  if (latePlays) figure('own-copy-picked-to-playing', wallMs() - picked);
  await page.setFiles('#own-file', [`${work}/phone/Second.webm`]);
  const offered = await until(() => page.evaluate('!document.getElementById("own-offer").hidden && document.getElementById("own-offer").textContent'), 8000);
  check(offered && /another encode/.test(offered), `the tab offers the other encode picked ("${offered}")`);
  const accepted = await page.click('#own-offer');
  const ownPlaying = await until(() => page.evaluate('coplayPlayer.url?.startsWith("blob:") && !document.getElementById("video").paused && document.getElementById("video").currentTime > 0.5'), 10000);
  check(ownPlaying, 'the other encode plays once accepted (an object URL)');
  if (ownPlaying) figure('other-encode-accepted-to-playing', wallMs() - accepted);
  await sleep(2500);
  for (const [name, target] of [['own-copy', late], ['other-encode', page]]) {
    // Chromium's and Firefox's drivers give each tab a window of its own; MiniBrowser's late tab
    // stays hidden behind the first one's minimized window (steered by skips either way).
    const shown = await target.evaluate('document.visibilityState');
    if (engine === 'webkit') console.log(`note: the ${name} tab is ${shown}`);
    else check(shown === 'visible', `the ${name === 'own-copy' ? 'late tab' : 'tab'} playing its own copy is in view (${shown})`);
    const own = await offsets(target, 30);
    const ownAbsolute = own.map(Math.abs);
    if (own.length) {
      figure(`${name}-offset-tab-mpv-p50`, quantile(ownAbsolute, 0.5));
      figure(`${name}-offset-tab-mpv-p99`, quantile(ownAbsolute, 0.99));
    }
    const inStep = own.length >= 20 && quantile(ownAbsolute, 0.5) < 60;
    check(inStep, `the ${name === 'own-copy' ? "late tab's own copy" : "tab's other encode"} plays within 60 ms of mpv (p50 ${quantile(ownAbsolute, 0.5).toFixed(1)} ms of ${own.length})`);
    // Out of step, what the tab did since the copy was picked says why (its steps, its steering).
    if (!inStep || process.env.COPLAY_BROWSER_DEBUG) {
      console.log(`${name} offsets: ${own.map((o) => o.toFixed(1)).join(' ')}`);
      console.log(`${name} steering: ${JSON.stringify(await target.evaluate('coplayPlayer.steering'))}`);
      console.log(`${name} trace: ${JSON.stringify(await target.evaluate(`coplayPlayer.trace.filter((t) => t.atMs >= ${picked - 500})`))}`);
    }
  }
  const cleared = await until(async () => {
    const [tab, other] = [await entry('late'), await entry('tab')];
    return /^late .* ready/.test(tab) && !/cannotPlay/.test(tab) && /copy=anotherEncode/.test(other) && !/cannotPlay/.test(other);
  }, 5000, 50);
  check(cleared, 'the deck lists the late tab as ready with its copy, and the tab as playing another encode');
  mkdirSync(artifacts, { recursive: true });
  writeFileSync(`${artifacts}/browser-tab-${engine}.png`, await page.screenshot());
  console.log(`screenshot: ${artifacts}/browser-tab-${engine}.png`);
  const traps = page.console.filter(l => /exception|trap/i.test(l));
  check(traps.length === 0, `the page threw nothing (${traps.slice(0, 3).join('; ')})`);
} catch (error) {
  check(false, `the run: ${error.stack}`);
} finally {
  for (const agent of [deck, sofa]) { try { agent.stdin.end(); } catch { /* gone */ } }
  await sleep(800);
  if (!failures.length) browser.close();
  for (const child of children) { try { child.kill('SIGTERM'); } catch { /* gone */ } }
}
console.log(JSON.stringify({ figures, samples, failures }));
if (failures.length) {
  for (const c of children) if (c.errors) console.error(`--- ${c.name} stderr\n${c.errors.slice(-3000)}`);
  console.error('--- deck\n' + deck.lines.slice(-60).join('\n'));
  if (page) console.error('--- page console\n' + page.console.slice(-40).join('\n'));
  try { console.error(`--- ${engine}'s own output\n` + readFileSync(`${work}/browser.log`, 'utf8').slice(-3000)); } catch { /* none */ }
  for (const [name, target] of [['tab', page], ['late', late]]) {
    if (target) console.error(`--- ${name}'s player trace\n` + (await target.evaluate('coplayPlayer.trace.map(t => `${t.atMs.toFixed(1)} ${t.type} at ${t.position.toFixed(3)} ${t.command ?? ""}`).join("\\n")').catch(e => e.message)));
  }
}
browser.close();
process.exit(failures.length ? 1 : 0);
