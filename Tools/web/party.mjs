// coplay party as a person uses it (run by Tools/web/party-check, inside the TV's namespace of a
// two-host test LAN). The TV's host types `coplay party film.webm hevc.mp4` with mpv, and no
// --listen: the default route gives the address. Headless Chromium on the phone's host opens
// the printed link, types a name and clicks Join, then:
//   - it plays in sync with the TV's mpv (Join → playing; the media clocks' offset), and a pause
//     pressed in mpv pauses it;
//   - `coplay join LINK` with mpv on the phone's host plays the film over HTTP, in step with the
//     TV's mpv (their audio-pts compared);
//   - the page is laid out for a phone (390 px: nothing wider than the screen) and for a laptop
//     (1000 px), each kept as a screenshot;
//   - the first film ends and the group moves to the queue's next, an HEVC film, which mpv plays
//     and this browser does not: the tab says why at the top of the page, the TV's `peers` lists
//     it as cannotPlay:format, and mpv plays on;
//   - a film from a server without byte ranges (python3's http.server), joined mid-film by a
//     second tab: it says why, and the TV lists it as cannotPlay:noRanges;
//   - a link with a wrong token, and one to a relay that cannot be reached, are said at the top of
//     the page; a new link pasted into the tab is followed;
//   - Ctrl-C ends the party with exit status 0 and nothing of it left running; the phone says
//     the party has ended within 2 s, and nothing of the relay after.
// Prints one figure per line and a summary (JSON) last; exits 1 when a check fails. With
// PARTY_TRACE=1 it also prints the phone's player steps from its Join, and its element's
// position read every 5 ms for its first 4 s (how its clock started).
//
//   node Tools/web/party.mjs COPLAY WORKDIR ARTIFACTS PHONE-NAMESPACE
import { execFileSync } from 'node:child_process';
import { spawnOwned } from './owned.mjs';
import { writeFileSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { Browser } from './cdp.mjs';
import { wallMs, sleep, until, quantile, mpvClient, tabAgainstMpv } from './probes.mjs';

const [coplay, work, artifacts, phone] = process.argv.slice(2);
const tvAddress = '10.79.0.1', plainPort = 18081;
const failures = [], figures = {}, children = [];
function check(ok, what) { if (!ok) failures.push(what); console.log(`${ok ? 'ok' : 'FAIL'}: ${what}`); }
function figure(name, value, unit = 'ms') { figures[name] = value; console.log(`${name}: ${typeof value === 'number' ? value.toFixed(2) : value} ${unit}`); }
function start(command, args, options = {}) {
  const child = spawnOwned(command, args, { stdio: ['pipe', 'pipe', 'pipe'], ...options });
  child.events = []; child.errors = '';
  let partial = '';
  child.stdout.on('data', (d) => {
    partial += d;
    const lines = partial.split('\n'); partial = lines.pop();
    for (const line of lines) { try { child.events.push(JSON.parse(line)); } catch { /* not an event */ } }
  });
  child.stderr.on('data', (d) => { child.errors = (child.errors + d).slice(-20000); });
  children.push(child);
  return child;
}
const say = (agent, line) => agent.stdin.write(line + '\n');

// MARK: The films
mkdirSync(`${work}/films`, { recursive: true });
mkdirSync(`${work}/run`, { recursive: true });
const encode = (file, seconds, video, audio) => execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=30',
  '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000', '-t', String(seconds), ...video, ...audio, file]);
encode(`${work}/films/film.webm`, 120, ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '100k', '-g', '30'], ['-c:a', 'libopus', '-b:a', '48k']);
// Its subtitles beside it, in English and French: a cue every 10 s, "en 3" from 0:30 to 0:39.5.
const srtTime = (s) => `00:${String(Math.floor(s / 60)).padStart(2, '0')}:${String(Math.floor(s % 60)).padStart(2, '0')},${String(Math.round((s % 1) * 1000)).padStart(3, '0')}`;
for (const language of ['en', 'fr']) {
  writeFileSync(`${work}/films/film.${language}.srt`, Array.from({ length: 12 }, (_, i) => `${i + 1}\r\n${srtTime(i * 10)} --> ${srtTime(i * 10 + 9.5)}\r\n${language} ${i}\r\n`).join('\r\n'));
}
// And a German stream of the film's own (WebM's WebVTT), which the party extracts with ffmpeg:
// offered beside the sidecars, "de 3" from 0:30.
writeFileSync(`${work}/de.srt`, Array.from({ length: 12 }, (_, i) => `${i + 1}\r\n${srtTime(i * 10)} --> ${srtTime(i * 10 + 9.5)}\r\nde ${i}\r\n`).join('\r\n'));
execFileSync('ffmpeg', ['-v', 'error', '-nostdin', '-i', `${work}/films/film.webm`, '-i', `${work}/de.srt`, '-map', '0', '-map', '1', '-c', 'copy',
  '-c:s', 'webvtt', '-metadata:s:s:0', 'language=ger', `${work}/film-de.webm`]);
renameSync(`${work}/film-de.webm`, `${work}/films/film.webm`);
encode(`${work}/films/hevc.mp4`, 60, ['-c:v', 'libx265', '-pix_fmt', 'yuv420p', '-tag:v', 'hvc1', '-x265-params', 'log-level=error'], ['-c:a', 'aac']);
// A server that answers no byte ranges: python3's http.server, as the newcomer used.
mkdirSync(`${work}/plain`, { recursive: true });
execFileSync('cp', [`${work}/films/film.webm`, `${work}/plain/plain.webm`]);
start('python3', ['-m', 'http.server', String(plainPort), '--bind', tvAddress, '--directory', `${work}/plain`]);

// MARK: The party, typed as the README says (plus mpv without a window or sound, and its socket)
const started = wallMs();
// (The TV's mpv logs the commands it runs: what it shows on its screen is read from there.)
const tvLog = `${work}/tv-mpv.log`;
const party = start(coplay, ['party', 'film.webm', 'hevc.mp4', '--json', '--name', 'tv', '--mpv-option', 'vo=null', '--mpv-option', 'ao=null',
  '--mpv-option', `log-file=${tvLog}`, '--mpv-option', 'msg-level=cplayer=trace', '--mpv-socket', `${work}/mpv.sock`], { cwd: `${work}/films`, env: { ...process.env, XDG_RUNTIME_DIR: `${work}/run` } });
const announced = await until(() => party.events.find((e) => e.event === 'party'), 10000);
let browser, lateBrowser;
try {
  check(announced, `the party prints its link (${party.errors.split('\n').filter(Boolean).slice(-3).join(' | ')})`);
  if (!announced) throw new Error('no party');
  figure('party-link-printed', wallMs() - started);
  check(announced.link.startsWith(`http://${tvAddress}:`), `the link is at the default route's address: ${announced.link.slice(0, 40)}…`);

  const mpvCommand = await mpvClient(`${work}/mpv.sock`);
  check(mpvCommand, "the party's mpv answers on its socket");

  say(party, 'play');
  check(await until(() => party.events.find((e) => e.event === 'playing'), 10000), 'the TV plays');
  await sleep(2000);

  // MARK: The phone joins
  browser = await Browser.launch(['--headless=new', '--no-sandbox', `--user-data-dir=${work}/profile`, '--mute-audio', '--disable-gpu',
    '--no-first-run', '--disable-background-networking', '--window-size=1000,900'], { prefix: ['ip', 'netns', 'exec', phone] });
  const page = await browser.newPage(announced.link);
  await page.type('#name', 'phone');
  const clicked = await page.click('#join');
  if (process.env.PARTY_TRACE) await page.evaluate('(() => { const v = document.getElementById("video"); window.samples = []; const h = setInterval(() => { window.samples.push([performance.timeOrigin + performance.now(), v.currentTime, v.playbackRate, v.paused]); if (window.samples.length > 800) clearInterval(h); }, 5); })()');
  const video = 'document.getElementById("video")';
  const offset = (target) => tabAgainstMpv(target, mpvCommand);
  // In sync: from the first of readings that stay within 10 ms of mpv's for a second (a reading
  // that passes through on its way does not count).
  let streak = null;
  const inSync = await until(async () => {
    const o = await offset(page), at = wallMs();
    if (o == null || Math.abs(o) >= 10) { streak = null; return false; }
    streak ??= at;
    return at - streak >= 1000;
  }, 12000, 20);
  check(inSync, 'the phone plays within 10 ms of the TV after Join, for a second');
  figure('join-click-to-in-sync', (streak ?? wallMs()) - clicked);
  if (process.env.PARTY_TRACE) console.log(await page.evaluate('coplayPlayer.trace.map((t) => (t.atMs - ' + clicked + ').toFixed(1) + " " + t.type + " at " + t.position.toFixed(3) + " " + (t.command ?? "")).join("\\n")'));
  if (process.env.PARTY_TRACE) console.log(await page.evaluate('window.samples.filter((s) => !s[3]).map((s, i, a) => (s[0] - ' + clicked + ').toFixed(1) + " " + s[1].toFixed(4) + " " + s[2].toFixed(3) + " lag " + ((s[1] - a[0][1]) * 1000 - (s[0] - a[0][0])).toFixed(1)).join("\\n")'));
  await sleep(2000);
  const media = [];
  for (let i = 0; i < 50; i++) { const o = await offset(page); if (o != null) media.push(o); await sleep(100); }
  figure('media-offset-phone-tv-p50', quantile(media.map(Math.abs), 0.5));
  figure('media-offset-phone-tv-p99', quantile(media.map(Math.abs), 0.99));
  check(media.length >= 40 && quantile(media.map(Math.abs), 0.5) < 40, 'the phone stays within 40 ms of the TV (p50)');

  // MARK: Subtitles: the film's SRT sidecars and its own stream, as this tab's own choice
  const offering = '(() => { const s = document.getElementById("subtitles"); return !s.hidden && [...s.options].map((o) => o.textContent).join("|"); })()';
  // (The film's own stream is listed once extracted: the page asks again while it is pending.)
  const offered = await until(async () => { const o = await page.evaluate(offering); return o && o.includes('German') ? o : null; }, 8000, 50) ?? await page.evaluate(offering);
  check(offered === 'Subtitles off|English|French|German', `the tab offers the film's subtitles, its own German stream among them: ${offered}`);
  // (Within a frame of the SRT's times: the remux shifts every stream by the sound's 7 ms start.)
  const german = await page.evaluate(`(async () => { const t = [...${video}.querySelectorAll("track")].find((t) => t.srclang === "de"); return t ? (await fetch(t.src)).text() : ""; })()`);
  check(german.startsWith('WEBVTT') && /00:30\.0[0-3]\d --> 00:39\.5[0-3]\d\nde 3/.test(german), `the German stream is served as WebVTT with its cues (${german.slice(0, 80).replace(/\n/g, ' ')})`);
  const eventsBefore = party.events.length;
  await page.evaluate('(() => { const s = document.getElementById("subtitles"); s.value = [...s.options].find((o) => o.textContent === "French").value; s.dispatchEvent(new Event("change")); })()');
  const cueNow = `(() => { const t = [...${video}.textTracks].find((t) => t.mode === "showing"); return { t: ${video}.currentTime, language: t?.language, cue: t?.activeCues?.[0]?.text ?? null, modes: [...${video}.textTracks].map((t) => t.mode).join(",") }; })()`;
  // (The track is fetched once it is chosen: the first cue shown says it is in.)
  const loaded = await until(async () => (await page.evaluate(cueNow)).cue, 3000, 20);
  check(loaded, 'the chosen track is fetched and shows a cue');
  const cues = [];
  for (let i = 0; i < 20; i++) { cues.push(await page.evaluate(cueNow)); await sleep(150); }
  // The cue shown is the SRT's for that moment, within one frame (1/30 s) of a cue's edges.
  const wrongCues = cues.filter((c) => { const inCue = c.t % 10; const edge = Math.min(inCue, Math.abs(inCue - 9.5)) < 1 / 30; return !edge && c.cue !== (inCue < 9.5 ? `fr ${Math.floor(c.t / 10)}` : null); });
  check(cues[cues.length - 1].language === 'fr' && wrongCues.length === 0, `the French cue shown is the SRT's for its moment (${wrongCues.length} of ${cues.length} not: ${JSON.stringify(wrongCues.slice(0, 2))})`);
  check(cues.every((c) => c.modes === 'disabled,showing,disabled'), `only the chosen track shows (${cues[0].modes})`);
  check(await page.evaluate('localStorage.getItem("coplay.subtitles")') === 'fr', 'the browser remembers the language');
  // The TV's mpv plays the film from disk, so it has the subtitles beside it too, and shows the
  // same cue as the phone once French is picked there (its own choice, as the phone's is).
  const tvPath = (await mpvCommand('get_property', 'path')).data;
  check(tvPath === 'film.webm' || String(tvPath).endsWith('/films/film.webm'), `the TV's mpv plays the film from disk (${tvPath})`);
  const subtitleTracks = ((await mpvCommand('get_property', 'track-list')).data ?? []).filter((t) => t.type === 'sub');
  const frenchTrack = subtitleTracks.find((t) => t.lang === 'fr');
  check(frenchTrack && subtitleTracks.some((t) => t.lang === 'en'), `the TV's mpv has the English and French subtitles (${subtitleTracks.map((t) => t.lang).join(', ')})`);
  if (frenchTrack) {
    await mpvCommand('set_property', 'sid', frenchTrack.id);
    const tvCue = await until(async () => {
      const [text, at] = [(await mpvCommand('get_property', 'sub-text')).data, (await mpvCommand('get_property', 'time-pos')).data];
      const inCue = at % 10;
      return typeof text === 'string' && text !== '' && inCue > 0.1 && inCue < 9.4 ? { text, at } : null;
    }, 3000, 50);
    check(tvCue && tvCue.text === `fr ${Math.floor(tvCue.at / 10)}`, `the TV's mpv shows the same French cue (${JSON.stringify(tvCue)})`);
  }
  // MARK: Chat: a message typed on the phone reaches the TV (its events, and its mpv's screen);
  // one from the TV shows over the phone's film, as text.
  const messageDelays = [];
  for (let round = 0; round < 5; round++) {
    const text = `<b>hi</b> ${round} from the phone`;
    await page.type('#chat-text', text);
    const sentAt = await page.click('#chat button');
    const heard = await until(() => party.events.find((e) => e.event === 'message' && e.text === text), 3000, 2);
    if (heard) messageDelays.push(heard.atUnixNanos / 1e6 - sentAt);
  }
  check(messageDelays.length === 5, `the TV hears every message typed on the phone (${messageDelays.length} of 5)`);
  figure('message-phone-to-tv-p50', quantile(messageDelays, 0.5));
  check(quantile(messageDelays, 0.5) <= 50, 'a message typed on the phone is at the TV within 50 ms (p50)');
  // (Five in a second: the screen shows the first three, as OnScreen allows.)
  const onTV = await until(() => { try { return (readFileSync(tvLog, 'utf8').match(/show-text, flags=64, args=\[text="phone: <b>hi<\/b> \d from the phone"/g) ?? []).length; } catch { return 0; } }, 3000, 50);
  check(onTV >= 3, `the messages show on the TV's mpv, as text (${onTV} of 5)`);
  say(party, 'msg <img src=x onerror="window.ran=1"> popcorn?');
  const toastSeen = await until(() => page.evaluate('(() => { const t = document.getElementById("toasts"); return t.textContent.includes("popcorn?") ? { text: t.textContent, elements: t.querySelectorAll("img, b").length, ran: !!window.ran } : null; })()'), 3000, 20);
  check(toastSeen && toastSeen.elements === 0 && !toastSeen.ran && toastSeen.text.includes('tv: <img src=x'), `the TV's message shows over the phone's film, as text (${JSON.stringify(toastSeen)})`);
  const commands = party.events.slice(eventsBefore).filter((e) => ['paused', 'playing', 'time-jumped', 'rate-changed'].includes(e.event));
  check(commands.length === 0, `a subtitle choice is no group command (${commands.map((e) => e.event).join(', ')})`);

  // A pause pressed in the TV's mpv pauses the phone.
  // Each round must end with the phone paused; the latency is its element's pause event's (an
  // element already held by a seek of its own fires none: that round is counted, not timed).
  const pauses = [];
  let pausedRounds = 0;
  for (let round = 0; round < 5; round++) {
    const pressed = wallMs();
    await mpvCommand('set_property', 'pause', true);
    const paused = await until(() => page.evaluate(`coplayPlayer.trace.filter((t) => t.type === 'pause' && t.atMs >= ${pressed}).map((t) => t.atMs)[0]`), 3000, 5);
    if (paused) pauses.push(paused - pressed);
    const held = await until(() => page.evaluate(`${video}.paused && coplayPlayer.intended === 'paused'`), 3000, 5);
    if (held) pausedRounds++;
    if (!paused) {
      const steps = await page.evaluate('coplayPlayer.trace.slice(-10).map((t) => `${t.atMs.toFixed(1)} ${t.type} at ${t.position.toFixed(3)} ${t.command ?? ""}`).join("\\n")');
      console.log(`round ${round}: no pause on the phone (pressed at ${pressed.toFixed(1)}); its last steps:\n${steps}\nthe TV's last events:\n${party.events.slice(-6).map((e) => JSON.stringify(e).slice(0, 200)).join('\n')}`);
    }
    await sleep(500);
    await mpvCommand('set_property', 'pause', false);
    await until(() => page.evaluate(`!${video}.paused`), 5000);
    await sleep(1500);
  }
  check(pausedRounds === 5, `a pause in the TV's mpv pauses the phone (${pausedRounds} of 5 rounds; ${pauses.length} timed)`);
  figure('pause-tv-to-phone-p50', quantile(pauses, 0.5));

  // MARK: A laptop with mpv joins from the same link (coplay join, on the phone's host)
  const laptop = start('ip', ['netns', 'exec', phone, coplay, 'join', announced.link, '--json', '--name', 'laptop', '--player', 'mpv',
    '--mpv-option', 'vo=null', '--mpv-option', 'ao=null', '--mpv-socket', `${work}/laptop.sock`]);
  const laptopCommand = await mpvClient(`${work}/laptop.sock`);
  check(laptopCommand, "the laptop's mpv (coplay join) answers on its socket");
  check(await until(() => laptop.events.find((e) => e.event === 'playing'), 15000), 'the laptop plays the film over HTTP');
  // Its start settles (a catch-up by rate after the join) before the steady offset is sampled.
  const offsetNow = async () => {
    const a = await mpvCommand('get_property', 'audio-pts'), b = await laptopCommand('get_property', 'audio-pts');
    return typeof a.data === 'number' && typeof b.data === 'number' ? (a.data + (b.mid - a.mid) / 1000 - b.data) * 1000 : null;
  };
  let settledRun = 0;
  await until(async () => { const o = await offsetNow(); settledRun = o != null && Math.abs(o) < 5 ? settledRun + 1 : 0; return settledRun >= 3; }, 15000, 200);
  const mpvs = [];
  for (let i = 0; i < 50 && laptopCommand; i++) {
    const a = await mpvCommand('get_property', 'audio-pts'), b = await laptopCommand('get_property', 'audio-pts');
    // Each position at the middle of its request's round trip, carried to one instant at rate 1.
    if (typeof a.data === 'number' && typeof b.data === 'number') mpvs.push((a.data + (b.mid - a.mid) / 1000 - b.data) * 1000);
    await sleep(100);
  }
  figure('mpv-offset-tv-laptop-p50', quantile(mpvs.map(Math.abs), 0.5));
  figure('mpv-offset-tv-laptop-p99', quantile(mpvs.map(Math.abs), 0.99));
  check(mpvs.length >= 40 && quantile(mpvs.map(Math.abs), 0.5) < 10, "the laptop's mpv plays within 10 ms of the TV's (p50)");
  say(laptop, 'quit');
  await until(() => laptop.exitCode != null, 5000);

  // MARK: A phone's width, and a laptop's
  await page.send('Emulation.setDeviceMetricsOverride', { width: 390, height: 844, deviceScaleFactor: 1, mobile: true });
  await sleep(500);
  const layout = await page.evaluate(`(() => { const t = document.querySelector('#peers').closest('table').getBoundingClientRect(); return { page: document.documentElement.scrollWidth, table: t.right }; })()`);
  check(layout.page <= 390 && layout.table <= 390, `at 390 px nothing is wider than the screen (page ${layout.page}, table's right edge ${layout.table.toFixed(0)})`);
  writeFileSync(`${artifacts}/party-390.png`, await page.screenshot());
  // Full screen on the phone: the film fills the screen, and a tap on it pauses everyone (the TV's
  // mpv), then plays everyone again.
  await page.click('#fullscreen');
  const filled = await until(() => page.evaluate(`(() => { const f = document.fullscreenElement; const r = ${video}.getBoundingClientRect(); return f && f.classList.contains('stage') ? { w: r.width, h: r.height, sw: window.innerWidth, sh: window.innerHeight } : null; })()`), 3000, 50);
  check(filled && filled.w >= filled.sw - 1 && filled.h >= filled.sh - 1, `full screen: the film fills the screen (${JSON.stringify(filled)})`);
  writeFileSync(`${artifacts}/party-fullscreen.png`, await page.screenshot());
  const tapped = await page.click('#video');
  const tvPaused = await until(async () => (await mpvCommand('get_property', 'pause')).data === true, 3000, 10);
  check(tvPaused, 'in full screen, a tap on the film pauses the TV');
  if (tvPaused) figure('fullscreen-tap-to-tv-paused', wallMs() - tapped);
  await page.click('#video');
  check(await until(async () => (await mpvCommand('get_property', 'pause')).data === false, 5000, 10), 'a second tap plays everyone again');
  await page.evaluate('document.exitFullscreen()');
  await until(() => page.evaluate('!document.fullscreenElement'), 2000, 50);
  await page.send('Emulation.clearDeviceMetricsOverride');
  await sleep(300);
  writeFileSync(`${artifacts}/party-1000.png`, await page.screenshot());

  // MARK: The first film ends: everyone moves to the queue's next, a film this browser cannot decode
  say(party, 'seek 117');
  const ends = await until(() => party.events.find((e) => e.event === 'activity' && String(e.url ?? e.item ?? '').includes('hevc.mp4')), 15000);
  check(ends, 'at the first film\'s end the group moves to the queue\'s next (hevc.mp4)');
  const nextAt = wallMs();
  const said = await until(() => page.evaluate('document.getElementById("problem").hidden ? null : document.getElementById("problem").textContent'), 10000);
  check(said && said.includes('hevc.mp4') && said.includes('H.264'), `the phone says why it cannot play the HEVC film: "${said}"`);
  if (said) figure('undecodable-to-said-after-the-move', wallMs() - nextAt);
  const listed = async (name, reason) => {
    const from = party.events.length;
    say(party, 'peers');
    await sleep(300);
    return party.events.slice(from).some((e) => JSON.stringify(e).includes(`"name":"${name}"`) && JSON.stringify(e).includes(reason));
  };
  check(await until(() => listed('phone', 'cannotPlay:format'), 3000, 100), "the TV's peers list the phone as cannotPlay:format");
  // The move's coordinated start does not wait for the phone past its deadline (3 s): mpv plays
  // on within it, and a little after.
  const tvPlays = await until(async () => {
    const [pause, path] = [await mpvCommand('get_property', 'pause'), await mpvCommand('get_property', 'path')];
    return pause.data === false && String(path.data).includes('hevc.mp4');
  }, 8000, 100);
  check(tvPlays, "the TV's mpv plays the HEVC film on");
  if (tvPlays) figure('tv-playing-the-next-after-the-move', wallMs() - nextAt);
  writeFileSync(`${artifacts}/party-cannot-play.png`, await page.screenshot());

  // MARK: A film from a server without byte ranges, joined mid-film
  say(party, `share http://${tvAddress}:${plainPort}/plain.webm`);
  await sleep(1000);
  say(party, 'play');
  await until(() => party.events.filter((e) => e.event === 'playing').length >= 3, 10000);
  await sleep(4000);
  // Another device: a browser of its own (in one profile, Chromium's cache would hold the late
  // tab's request for the film behind the first tab's download of it).
  lateBrowser = await Browser.launch(['--headless=new', '--no-sandbox', `--user-data-dir=${work}/profile-late`, '--mute-audio', '--disable-gpu',
    '--no-first-run', '--disable-background-networking', '--window-size=1000,900'], { prefix: ['ip', 'netns', 'exec', phone] });
  const late = await lateBrowser.newPage(announced.link);
  await late.type('#name', 'late');
  const lateClicked = await late.click('#join');
  const lateSaid = await until(() => late.evaluate('document.getElementById("problem").hidden ? null : document.getElementById("problem").textContent'), 10000);
  check(lateSaid && lateSaid.includes('no byte ranges'), `a tab joining mid-film from a server without byte ranges says why: "${lateSaid}"`);
  check(lateSaid && wallMs() - lateClicked < 3000, 'it says so within 3 s of Join');
  if (!lateSaid) console.log(await late.evaluate(`JSON.stringify({ ranges: coplayPlayer.ranges, seeking: coplayPlayer.seeking, target: coplayPlayer.seekTarget, t: ${video}.currentTime, rs: ${video}.readyState, elementSeeking: ${video}.seeking, trace: coplayPlayer.trace.slice(-8) })`));
  if (lateSaid) figure('no-ranges-join-to-said', wallMs() - lateClicked);
  check(await until(() => listed('late', 'cannotPlay:noRanges'), 3000, 100), "the TV's peers list the late tab as cannotPlay:noRanges");
  const lateTime = await late.evaluate(`${video}.currentTime`);
  check(lateTime < 0.5, `the late tab does not pretend to play from 0:00 (${lateTime})`);

  // MARK: A link whose token the relay refuses, and a relay that cannot be reached
  const wrong = announced.link.replace(/relay=ws%3A%2F%2F[0-9a-f]+%40/, 'relay=ws%3A%2F%2Fwrong-token%40');
  check(wrong !== announced.link, 'a link with a wrong token is made');
  const refusedTab = await lateBrowser.newPage(wrong);
  await refusedTab.type('#name', 'wrong');
  const wrongClicked = await refusedTab.click('#join');
  const refusedSaid = await until(() => refusedTab.evaluate('document.getElementById("problem").hidden ? null : document.getElementById("problem").textContent'), 8000);
  check(refusedSaid && refusedSaid.includes('refused this link'), `a wrong token is said once, at the top: "${refusedSaid}"`);
  if (refusedSaid) figure('wrong-token-to-said', wallMs() - wrongClicked);
  const dead = announced.link.replace(/%3A([0-9]+)&session/, '%3A9&session');
  const deadTab = await lateBrowser.newPage(dead);
  await deadTab.type('#name', 'far');
  const deadClicked = await deadTab.click('#join');
  const deadSaid = await until(() => deadTab.evaluate('document.getElementById("problem").hidden ? null : document.getElementById("problem").textContent'), 10000);
  check(deadSaid && deadSaid.includes('Cannot reach the relay'), `an unreachable relay is said at the top: "${deadSaid}"`);
  if (deadSaid) figure('unreachable-relay-to-said', wallMs() - deadClicked);
  // A second link pasted into a tab (only its fragment differs) is followed: the page loads anew.
  await deadTab.evaluate(`location.hash = ${JSON.stringify(new URL(announced.link).hash)}`);
  // (An evaluation during the page's own reload fails: not yet.)
  const followed = await until(() => deadTab.evaluate('!document.getElementById("join").disabled && document.getElementById("join-panel").hidden === false && document.getElementById("problem").hidden').catch(() => null), 5000, 100);
  check(followed, 'a new link in the same tab is followed (the page starts again, ready to join)');

  // MARK: Ctrl-C
  const ctrlC = wallMs();
  party.kill('SIGINT');
  // The phone is told, in words, rather than left trying the gone relay for good.
  const endedText = 'var p = document.getElementById("problem"); p.hidden || !p.textContent.includes("The party has ended") ? null : p.textContent';
  const endedSaid = await until(() => page.evaluate(endedText).catch(() => null), 2000, 20);
  check(endedSaid, `the phone says the party has ended within 2 s of Ctrl-C: "${endedSaid ?? (await page.evaluate('document.getElementById("problem").textContent').catch(() => '?'))}"`);
  if (endedSaid) figure('ctrl-c-to-phone-said-ended', wallMs() - ctrlC);
  const exited = await until(() => party.exitCode != null ? { code: party.exitCode } : null, 8000);
  check(exited?.code === 0, `Ctrl-C ends the party with exit status 0 (${exited?.code})`);
  check(party.errors.includes('the party is over: ending the session for everyone in it'), 'the party says it is over');
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const after = await page.evaluate('document.getElementById("problem").textContent').catch(() => '?');
  check(!after.includes('relay'), `once the party is over, the phone says nothing of the relay: "${after}"`);
  let left = '';
  try { left = execFileSync('pgrep', ['-af', `${work}/run`]).toString(); } catch { /* none: pgrep exits 1 */ }
  check(left.trim() === '', `nothing of the party is left running (${left.trim()})`);
} catch (error) {
  check(false, `the check ran to its end: ${error.stack}`);
} finally {
  browser?.close();
  lateBrowser?.close();
  for (const child of children) { try { child.kill('SIGKILL'); } catch { /* gone */ } }
}
if (failures.length) console.log(`the party's diagnostics:\n${party.errors.split('\n').filter((l) => !/ALSA|Jack|jack/.test(l)).slice(-15).join('\n')}`);
console.log(JSON.stringify({ figures, failures }));
process.exit(failures.length ? 1 : 0);
