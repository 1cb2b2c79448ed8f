// The page: the person's side of a browser participant. The participant itself (the core and
// its connection) runs in worker.js; this draws what it says and carries out its player
// commands on the one <video> element, which plays every item and is never replaced, so that
// the Join click's permission to play holds for every later start.
//
// The adapter follows PLAYERS.md's boundary: `load`/`prepare` are answered with `ready` once the
// element can play at the position; `play` starts at an instant (early by the start lag it has
// learned); `rate` nudges `playbackRate`; samples go out every 100 ms while it plays. A pause the
// browser imposes (a hidden tab's video, a locked phone, another page's audio) is this
// participant's own stall, never a group pause: only the person's clicks here are commands.
'use strict';
const $ = (id) => document.getElementById(id);
const video = $('video');
const wallMs = () => performance.timeOrigin + performance.now();
const wallNanos = () => BigInt(Math.round(wallMs() * 1e6));
const sampleIntervalMs = 100;
let worker, view = null, name = '';

// MARK: Joining

function invitation() {
  const fields = new URLSearchParams(location.hash.replace(/^#/, ''));
  // One relay, or several (the servers of a cluster: the core fails over among them).
  const relays = fields.getAll('relay').filter(Boolean), session = fields.get('session'), key = fields.get('key');
  const relay = relays.length > 1 ? relays : relays[0];
  if (!relay || !session) return { error: 'This page needs an invitation link: ask someone in the group to run “coplay invite” and open the link it prints.' };
  if (!key) return { error: 'This invitation carries no group key. Ask for a new link (coplay invite).' };
  if (!/^([0-9a-fA-F]{2}){32,256}$/.test(key)) return { error: 'This invitation’s key is damaged (it must be 64 hex digits or more). Ask for a new link.' };
  if (new TextEncoder().encode(session).length > 64) return { error: 'This invitation’s session name is longer than 64 bytes. Ask for a new link.' };
  const bad = relays.find((r) => !/^wss?:\/\//.test(r));
  if (bad) return { error: `This invitation’s relay (${bad}) is not a ws:// or wss:// address.` };
  return { relay, session, key };
}

function join() {
  const invite = invitation();
  if (invite.error) return;
  name = utf8Prefix($('name').value.trim(), 64) || `web-${Math.random().toString(16).slice(2, 6)}`;
  try { localStorage.setItem('coplay-name', name); } catch { /* private mode */ }
  // The gesture: the one element plays here once, so later remote starts need no gesture. A
  // browser that still refuses sound plays muted (the button offers sound back).
  video.muted = false;
  video.play().catch(() => {}).finally(() => { if (!player.item) video.pause(); });
  $('join-panel').hidden = true;
  $('room').hidden = false;
  worker = new Worker('worker.js', { type: 'module' });
  worker.onmessage = ({ data }) => onWorker(data);
  worker.postMessage({ type: 'join', ...invite, name, wasm: 'coplay.wasm' });
  setInterval(sample, sampleIntervalMs);
  watchRelay();
}

/// The longest start of `text` within `bytes` bytes of UTF-8 (the core takes names of 64).
function utf8Prefix(text, bytes) {
  const encoder = new TextEncoder();
  let out = '';
  for (const character of text) {
    if (encoder.encode(out + character).length > bytes) break;
    out += character;
  }
  return out;
}

// The relay: not reached within a few seconds (of joining, or of losing it) is said at the top.
const relayState = { up: false, everUp: false, refused: false, timer: 0 };
function watchRelay() {
  clearTimeout(relayState.timer);
  relayState.timer = setTimeout(() => {
    if (relayState.up || relayState.refused) return;
    const relay = [].concat(invitation().relay || '')[0];
    const host = (() => { try { return new URL(relay).host; } catch { return relay; } })();
    showProblem('relay', `${relayState.everUp ? 'Lost the relay' : 'Cannot reach the relay'} at ${host}: is this device on the same network as the party (the room's Wi-Fi, not mobile data), and is the party still running? Trying again…`);
  }, 5000);
}

function send(message) { worker?.postMessage(message); }
function report(kind, fields = {}) { send({ type: 'report', kind, ...fields }); }

function onWorker(message) {
  switch (message.type) {
    case 'event': onEvent(message.event); break;
    case 'player': perform(message.command); break;
    case 'view': view = message.view; draw(); break;
    case 'connection':
      $('connection').textContent = message.up ? 'connected' : relayState.everUp ? 'relay lost: reconnecting…' : 'connecting…';
      $('connection').className = message.up ? 'up' : 'down';
      relayState.up = message.up;
      if (message.up) { relayState.everUp = true; clearProblem('relay'); } else watchRelay();
      break;
    case 'diagnostic':
      if (/Authorization Violation/i.test(message.text)) {
        // Said once, not at every retry.
        if (!relayState.refused) log(`⚠ ${message.text}`);
        relayState.refused = true;
        showProblem('relay', 'The relay refused this link: its token is wrong or out of date. Ask the host for a new link (a new party makes a new one).');
      } else {
        // The relay's client says when it connects and what the cluster announced: news, not a
        // warning (the screenshot showed "⚠ relay: connected").
        log(/^relay: (connected|the cluster announced)/.test(message.text) ? message.text : `⚠ ${message.text}`);
      }
      break;
    case 'trap': log(`⚠ the core stopped (${message.text}); rejoining`); break;
    case 'left': log('left the group'); break;
  }
}

// MARK: The player

const player = {
  item: null, url: null,
  intended: 'paused',          // what the group wants of the element
  lastPlay: null,              // the last play command: {rate, position, atMs}
  awaitingReady: false,        // a load or prepare waits to be answered
  startAfterSeek: false,       // a start waits for the element's seek
  startTimer: 0,
  seeking: false, seekStartedMs: 0, seekMs: 80,   // a seek of ours is on; their learned duration
  pendingPosition: null,       // where to seek once the element knows the media (metadata)
  ownPause: false,
  startLagMs: 30,              // how late play() starts the media, learned from the first sample
  calledPlayAtMs: 0, learnLag: false,
  gated: true,                 // no samples until the element plays after a seek or start
  stalled: false,              // reported stalled (ran out of media, or the browser paused it)
};
window.coplayPlayer = player;  // the tests read it through DevTools
// The element's last events with their wall instants (ms), for the tests and the benchmark.
player.trace = [];
for (const type of ['pause', 'playing', 'seeked', 'waiting']) {
  video.addEventListener(type, () => {
    player.trace.push({ type, atMs: wallMs(), position: video.currentTime });
    if (player.trace.length > 100) player.trace.shift();
  });
}

// The rate. Chromium plays rates within 0.1% of 1 as 1 (its audio renderer passes them through
// untouched), and each switch from that pass-through to time-stretching moves currentTime back
// by about 25 ms, while changes between stretched rates move it by a few ms (Tools/web/rate-probe;
// PLAYERS.md). The core's nudges are mostly inside that band, so a nudge would do nothing, then
// cost 25 ms. The element therefore stays stretched while it plays: a rate inside
// ±0.2% of 1 is made by alternating 1 − 0.2% and 1 + 0.2% within each 200 ms, for the same mean.
const rateEdge = 0.002, ratePeriodMs = 200;
const rate = { wanted: 1, timer: 0 };
// Where playbackRate does not steer (some WebKit builds play every rate at 1), the page steers by
// skips alone: a seek when the error passes 40 ms, then none for 3 s (the hysteresis that keeps
// a seek's own time from starting another). It switches when three rate checks in a row find
// the media not following its rate; `?steer=skip` forces it (the tests).
const steering = { mode: new URLSearchParams(location.search).get('steer') === 'skip' ? 'skip' : 'rate',
  misses: 0, check: null, lastSkipMs: 0, skips: 0 };
player.steering = steering;
function applyRate(wanted) {
  rate.wanted = wanted;
  clearTimeout(rate.timer);
  // Hidden, the page's timers run once a second, then once a minute: a nudge would last a minute
  // and samples would steer by stale errors. The element plays at the group's rate unsteered
  // (its clock and the group's drift apart by parts per million) and sends no samples until
  // it is shown, when the first sample brings it back.
  if (steering.mode === 'skip' || document.visibilityState === 'hidden') {
    video.playbackRate = player.lastPlay?.rate ?? 1;
    return;
  }
  if (Math.abs(wanted - 1) >= rateEdge) { video.playbackRate = wanted; return; }
  const high = (wanted - (1 - rateEdge)) / (2 * rateEdge);  // the share of the period above 1
  const cycle = () => {
    video.playbackRate = 1 + rateEdge;
    rate.timer = setTimeout(() => {
      video.playbackRate = 1 - rateEdge;
      rate.timer = setTimeout(cycle, (1 - high) * ratePeriodMs);
    }, high * ratePeriodMs);
  };
  cycle();
}

function expectedPosition(atMs) {
  const p = player.lastPlay;
  return p ? p.position + p.rate * (atMs - p.atMs) / 1000 : video.currentTime;
}

// A seek of ours. Before the element has the media's metadata it cannot seek: the position
// waits for it. Several seeks in a row end with one 'seeked': ours are done when the element
// no longer seeks and nothing waits.
function seekTo(position) {
  player.seekTarget = Math.max(0, position);
  player.seeking = true;
  player.seekStartedMs = wallMs();
  player.gated = true;
  if (video.readyState < 1) { player.pendingPosition = Math.max(0, position); return; }
  video.currentTime = Math.max(0, position);
  // A page's media pipeline suspended by the browser (a page frozen, then resumed) may never
  // finish a seek (Chromium: readyState stays 1 with the whole file buffered). A seek not done
  // in 2 s reloads the media at its position.
  clearTimeout(player.seekWatchdog);
  const target = Math.max(0, position);
  player.seekWatchdog = setTimeout(() => {
    if (!player.seeking || !video.seeking) return;
    // Without byte ranges the element cannot fetch the position: a reload would not either.
    if (player.ranges === false) cannotSeek(target); else reloadMedia(target);
  }, 2000);
}

/// The media loaded anew, at `position` when paused, or where the group will be once it has
/// loaded when playing: a pipeline the browser suspended starts afresh.
function reloadMedia(position) {
  if (!player.url) return;
  player.reloads = (player.reloads ?? 0) + 1;
  player.seeking = true;
  player.gated = true;
  player.startAfterSeek = player.intended === 'playing';
  player.pendingPosition = player.intended === 'playing' && player.lastPlay
    ? expectedPosition(wallMs()) + (player.seekMs + player.startLagMs) / 1000 * player.lastPlay.rate
    : position;
  video.src = player.url;
}
video.addEventListener('loadedmetadata', () => {
  // A film whose picture this browser does not decode plays as sound alone, with no error
  // (Chromium and HEVC): a black box is not watching.
  if (video.videoWidth === 0 && /\.(mp4|m4v|mov|mkv|webm|avi|ts)(\?|#|$)/i.test(player.url ?? '')) {
    return cannotPlay({ problem: 'format', text: formatText(player.url, true) });
  }
  // A server that answers no byte ranges (python3's http.server): the element can seek nowhere
  // (Chromium reports the media seekable from 0 to 0, however much it holds), whatever origin it
  // is on. A start anywhere but at 0 is then impossible: said, rather than sitting at 0:00.
  // The film's length, for an item shared without one: the group's seeks past it stop at its end.
  if (Number.isFinite(video.duration) && video.duration > 0) report('duration', { position: video.duration });
  const seekableEnd = video.seekable.length ? video.seekable.end(video.seekable.length - 1) : 0;
  player.ranges = !(Number.isFinite(video.duration) && video.duration > 1 && seekableEnd < 0.5);
  if (player.pendingPosition == null) return;
  if (!player.ranges && player.pendingPosition > 0.5) return cannotSeek(player.pendingPosition);
  const position = player.pendingPosition;
  player.pendingPosition = null;
  video.currentTime = position;
});

function perform(command) {
  player.trace.push({ type: command.op, atMs: wallMs(), position: video.currentTime, command: JSON.stringify(command, (k, v) => typeof v === 'bigint' ? Number(v) / 1e6 : v) });
  if (player.trace.length > 100) player.trace.shift();
  switch (command.op) {
    case 'load': {
      player.item = command.item; player.intended = 'paused'; player.lastPlay = null; player.awaitingReady = true;
      player.stalled = false;
      clearTimeout(player.startTimer); player.startAfterSeek = false;
      $('item').textContent = command.item;
      clearProblem('media');
      pauseElement();
      const refusal = refusalBeforeLoad(command.url);
      if (refusal) {
        player.url = null;
        video.removeAttribute('src'); video.load();
        return cannotPlay(refusal);
      }
      if (player.url !== command.url) {
        player.url = command.url;
        player.pendingPosition = null;
        player.ranges = null;  // known once the element has the media's metadata
        video.src = command.url;
      }
      seekTo(command.position);
      break;
    }
    case 'prepare':
      player.intended = 'paused'; player.awaitingReady = true;
      clearTimeout(player.startTimer); player.startAfterSeek = false;
      pauseElement();
      seekTo(command.position);
      break;
    case 'play': {
      const atMs = Number(command.at) / 1e6;
      player.intended = 'playing';
      player.lastPlay = { rate: command.rate, position: command.position, atMs };
      applyRate(command.rate);
      clearTimeout(player.startTimer);
      const now = wallMs();
      if (atMs > now) {
        // A coordinated start: be at the position, then start early by the learned lag.
        if (Math.abs(video.currentTime - command.position) > 0.010) seekTo(command.position);
        player.startTimer = setTimeout(startElement, Math.max(0, atMs - now - player.startLagMs));
      } else if (!video.paused && !video.seeking && Math.abs(video.currentTime - expectedPosition(now)) < 0.020) {
        // Already playing with the group: the rate nudges close the rest.
      } else {
        // Continue from where the group is by now: seek ahead by what the seek and start cost.
        const ahead = (player.seekMs + player.startLagMs) / 1000 * command.rate;
        player.startAfterSeek = true;
        pauseElement();
        seekTo(expectedPosition(now) + ahead);
      }
      break;
    }
    case 'rate': applyRate(command.rate); break;
    case 'pause':
      player.intended = 'paused';
      clearTimeout(player.startTimer); player.startAfterSeek = false;
      pauseElement();
      if (Math.abs(video.currentTime - command.position) > 0.002) seekTo(command.position);
      break;
    case 'unload':
      player.item = null; player.url = null; player.intended = 'paused'; player.lastPlay = null;
      clearTimeout(player.startTimer);
      pauseElement();
      video.removeAttribute('src'); video.load();
      $('item').textContent = 'nothing';
      break;
    case 'interstitial':
      $('interstitial').hidden = false;
      $('interstitial').textContent = `interstitial: ${command.url} (${command.duration.toFixed(1)} s)`;
      break;
    case 'interstitial-end': $('interstitial').hidden = true; break;
  }
}

function pauseElement() {
  clearTimeout(rate.timer);
  if (!video.paused) { player.ownPause = true; video.pause(); }
}

function startElement() {
  if (player.intended !== 'playing') return;
  // At the media's end play() would start it again from 0: the group is past this item's end.
  if (video.ended || (Number.isFinite(video.duration) && video.currentTime >= video.duration - 0.01)) return;
  player.calledPlayAtMs = wallMs();
  player.learnLag = true;
  video.play().catch((error) => {
    if (error.name !== 'NotAllowedError') return;
    // The browser wants a gesture for sound: play muted, and offer the sound back.
    video.muted = true;
    $('unmute').hidden = false;
    video.play().catch(() => report('stalled', { position: video.currentTime }));
  });
}

function checkReady() {
  if (!player.awaitingReady || video.seeking || player.seeking || video.readyState < 3) return;
  player.awaitingReady = false;
  report('ready', { position: video.currentTime });
}

function sample() {
  if (player.intended !== 'playing' || video.paused || video.seeking || player.gated || video.readyState < 3) return;
  if (document.visibilityState === 'hidden') return;
  const at = wallMs(), position = video.currentTime;
  if (player.learnLag && at - player.calledPlayAtMs > 60 && player.lastPlay) {
    // How much later than asked the media started: the next start calls play() that much earlier.
    player.learnLag = false;
    const lateMs = (expectedPosition(at) - position) / player.lastPlay.rate * 1000;
    if (Math.abs(lateMs) < 500) player.startLagMs = Math.min(300, Math.max(0, player.startLagMs + 0.5 * lateMs));
  }
  if (steering.mode === 'skip') return steerBySkips(at, position);
  checkRateFollows(at, position);
  report('sample', { position, rate: rate.wanted, at: BigInt(Math.round(at * 1e6)) });
}

/// Whether the media follows a rate away from 1: over a second at one wanted rate, the media's
/// own slope must move at least half as far from 1 as the rate does.
function checkRateFollows(at, position) {
  const c = steering.check;
  if (!c || c.wanted !== rate.wanted) { steering.check = { wanted: rate.wanted, at, position }; return; }
  if (at - c.at < 1000) return;
  const slope = (position - c.position) / ((at - c.at) / 1000), asked = Math.abs(rate.wanted - 1);
  if (asked >= 0.01) {
    steering.misses = Math.abs(slope - 1) < asked / 2 ? steering.misses + 1 : 0;
    if (steering.misses >= 3) { steering.mode = 'skip'; applyRate(rate.wanted); }
  }
  steering.check = { wanted: rate.wanted, at, position };
}

function steerBySkips(at, position) {
  if (!player.lastPlay) return;
  const error = position - expectedPosition(at);
  if (Math.abs(error) < 0.040 || at - steering.lastSkipMs < 3000) return;
  steering.lastSkipMs = at;
  steering.skips++;
  seekTo(expectedPosition(wallMs()) + player.seekMs / 1000 * player.lastPlay.rate);
}

video.addEventListener('seeked', () => {
  if (video.seeking || player.pendingPosition != null) return;  // another seek follows
  // A server without byte ranges: the element lands where it has data, not where it was sent.
  if (player.ranges === false && player.seeking && Math.abs(video.currentTime - player.seekTarget) > 1) {
    return cannotSeek(player.seekTarget);
  }
  if (player.seeking) {
    player.seeking = false;
    const took = wallMs() - player.seekStartedMs;
    if (took > 0 && took < 2000) player.seekMs = 0.7 * player.seekMs + 0.3 * took;
  }
  // A seek while playing may end without a 'playing' event: samples resume a little later.
  if (!video.paused) setTimeout(() => { if (!video.seeking && !player.seeking) player.gated = false; }, sampleIntervalMs);
  if (player.startAfterSeek && player.intended === 'playing') {
    // A seek that took longer than learned (a reload, a fetch) lands behind the group: once more,
    // within what is now buffered, before starting.
    const behind = expectedPosition(wallMs()) - video.currentTime;
    if (Math.abs(behind) > 0.030 && !player.reseeked && player.lastPlay) {
      player.reseeked = true;
      seekTo(expectedPosition(wallMs()) + (player.seekMs + player.startLagMs) / 1000 * player.lastPlay.rate);
      return;
    }
    player.reseeked = false;
    player.startAfterSeek = false;
    startElement();
  }
  checkReady();
});
video.addEventListener('canplay', checkReady);
video.addEventListener('playing', () => {
  // Seeks and starts are done: samples may steer again, from the next one on.
  setTimeout(() => { if (!video.seeking) player.gated = false; }, sampleIntervalMs);
  if (player.stalled) { player.stalled = false; report('stallEnded', { position: video.currentTime }); }
});
video.addEventListener('waiting', () => {
  if (player.intended !== 'playing' || player.seeking || player.startAfterSeek || player.stalled) return;
  player.stalled = true;
  report('stalled', { position: video.currentTime });
});
video.addEventListener('pause', () => {
  if (player.ownPause) { player.ownPause = false; return; }
  if (player.intended !== 'playing' || video.ended) return;
  // Not ours and not the person's (they click the page's buttons): the browser paused it (a
  // frozen or hidden page, another page's audio). This participant stalls; the group plays on.
  // It tries to play again while the page is shown; once it plays, the core brings it back to
  // the group's time.
  if (!player.stalled) { player.stalled = true; report('stalled', { position: video.currentTime }); }
  retryPlay();
});
function retryPlay() {
  clearTimeout(player.retryTimer);
  player.retryTimer = setTimeout(() => {
    if (player.intended !== 'playing' || !video.paused) return;
    if (document.visibilityState === 'visible') startElement();
    retryPlay();
  }, 1000);
}
video.addEventListener('ended', () => report('ended', { position: video.currentTime }));
video.addEventListener('error', async () => {
  const url = player.url;
  if (!url || !video.error) return;
  const detail = video.error.message || `media error ${video.error.code}`;
  const failure = await explainFailure(url, video.error.code);
  if (url !== player.url) return;  // another item meanwhile
  cannotPlay({ ...failure, detail });
});

// MARK: Saying why it cannot play
//
// A failure is said at the top of the page, in words, with what to do; the core is told which
// kind it is (PlaybackProblem: format, notFound, unreachable, noRanges, localPath, live), leaves
// the item, and the group sees why this participant is not watching (its row says so everywhere).

/// The last part of a URL's path, decoded: how a person names the file.
function fileName(url) {
  try { return decodeURIComponent(new URL(url, location.href).pathname.split('/').pop()) || url; } catch { return url; }
}

/// What cannot play here before trying: a path on another machine, or a live HLS stream in a
/// browser that does not play HLS itself. Null: try it.
function refusalBeforeLoad(url) {
  if (!/^(https?|blob):/i.test(url)) {
    return { problem: 'localPath',
      text: `The group is watching ${url}, a file on another machine's disk: a browser can only play an http:// address. Ask whoever shared it to share it with coplay party, which serves files to every device.` };
  }
  if (/\.m3u8(\?|#|$)/i.test(url) && !video.canPlayType('application/vnd.apple.mpegurl')) {
    return { problem: 'live',
      text: `This browser cannot play the live stream ${fileName(url)} itself (Safari can, on an iPhone, iPad or Mac). On this device, watch it with mpv and coplay join.` };
  }
  return null;
}

function cannotSeek(position) {
  cannotPlay({ problem: 'noRanges',
    text: `The server of ${fileName(player.url)} answers no byte ranges, so this browser can only play it from the start, not at ${clock(position)} with the others. Serve it with coplay party or coplay web --media, which do.` });
}

/// Why the element could not play `url`: the server's answer to a HEAD tells a missing file and
/// an unreachable server from a format this browser does not decode.
async function explainFailure(url, code) {
  const file = fileName(url);
  let response = null;
  try { response = await fetch(url, { method: 'HEAD', cache: 'no-store' }); } catch { /* unreachable, or another origin */ }
  if (response && (response.status === 404 || response.status === 410)) {
    return { problem: 'notFound', text: `${file} is not at its address any more (its server answered ${response.status}). Ask whoever shared it to share it again.` };
  }
  if (!response) {
    let reachable = false;
    try { await fetch(url, { method: 'HEAD', mode: 'no-cors', cache: 'no-store' }); reachable = true; } catch { /* not reachable */ }
    if (!reachable || code === 2) {
      const host = (() => { try { return new URL(url).host; } catch { return url; } })();
      return { problem: 'unreachable', text: `This device cannot reach ${host}, where ${file} is. Is it on the same network as the others (the room's Wi-Fi, not mobile data)?` };
    }
  }
  return { problem: 'format', text: formatText(url, false) };
}

/// What to say of a film this browser does not decode (`soundOnly`: it plays its sound alone).
function formatText(url, soundOnly) {
  const file = fileName(url);
  const container = url.match(/\.(mkv|avi|wmv|flv)(\?|#|$)/i)?.[1];
  const why = container ? ` (its container, ${container.toUpperCase()}, is one most browsers do not play)`
    : /\.(mp4|m4v|mov)(\?|#|$)/i.test(url) ? ' (its video codec: HEVC, for one, plays in few browsers)' : '';
  return `This browser cannot ${soundOnly ? 'show the picture of' : 'play'} ${file}${why}. An MP4 with H.264 video and AAC sound, or a WebM, plays in every browser.`;
}

/// Says why at the top of the page, and tells the core, which leaves the item and tells the group.
function cannotPlay({ problem, text, detail }) {
  showProblem('media', text);
  log(`⚠ ${text}${detail ? ` (${detail})` : ''}`);
  clearTimeout(player.startTimer); player.startAfterSeek = false; player.intended = 'paused';
  report('loadFailed', { problem, text: `${player.url ?? ''}: ${text}` });
  player.awaitingReady = false;
}

// The banner: one sentence per topic (the media, the relay), newest first.
const problems = new Map();
function showProblem(topic, text) { problems.set(topic, text); drawProblems(); }
function clearProblem(topic) { if (problems.delete(topic)) drawProblems(); }
function drawProblems() {
  $('problem').textContent = [...problems.values()].join(' ');
  $('problem').hidden = problems.size === 0;
}

/// A peer's suspension or problem, in words.
function reasonWords(reason) {
  const problem = reason.startsWith('cannotPlay:') ? reason.slice(11) : null;
  if (!problem) return reason === 'stallRecovery' ? 'catching up' : reason;
  return { format: "can't play this format", notFound: 'its file is missing', unreachable: "can't reach the film",
    noRanges: "can't seek in it", localPath: "can't read a path", live: "can't play live streams" }[problem] || "can't play it";
}

// The page comes back: a hidden video the browser paused plays again (it is still stalled for
// the core until the element plays); a frozen or restored page reconnects at once.
function playIfPaused() { if (player.intended === 'playing' && video.paused && !player.startAfterSeek) startElement(); }
document.addEventListener('visibilitychange', () => {
  steering.check = null;
  if (document.visibilityState === 'hidden') return applyRate(player.lastPlay?.rate ?? 1);
  playIfPaused();
  sample();  // at once: the core corrects what drifted while hidden
});
// A frozen page's media pipeline does not come back whole (seeks never finish): it is reloaded.
document.addEventListener('resume', () => { send({ type: 'resume' }); if (player.item) reloadMedia(video.currentTime); });
window.addEventListener('pageshow', (e) => { if (e.persisted) { send({ type: 'resume' }); playIfPaused(); } });
window.addEventListener('pagehide', (e) => { if (!e.persisted) send({ type: 'leave' }); });

// MARK: The person's controls: each is a group command

$('play').onclick = () => report(player.intended === 'playing' ? 'pause' : 'play', { rate: 1 });
$('back').onclick = () => report('seek', { position: Math.max(0, video.currentTime - 10) });
$('forward').onclick = () => report('seek', { position: video.currentTime + 10 });
$('next').onclick = () => report('next');
$('previous').onclick = () => report('previous');
$('seek').oninput = () => { $('seek').dataset.dragging = '1'; };
$('seek').onchange = () => {
  delete $('seek').dataset.dragging;
  const duration = video.duration || view?.duration || 0;
  if (duration > 0) report('seek', { position: duration * $('seek').value / 1000 });
};
$('unmute').onclick = () => { video.muted = false; $('unmute').hidden = true; };
$('share-form').onsubmit = (e) => {
  e.preventDefault();
  const url = $('share-url').value.trim();
  if (url) send({ type: 'console', line: `share ${url}` });
};
$('queue-form').onsubmit = (e) => {
  e.preventDefault();
  const url = $('queue-url').value.trim();
  if (url) { send({ type: 'console', line: `queue add ${url}` }); $('queue-url').value = ''; }
};
$('join').onclick = join;

// MARK: Drawing

const history = [];  // [wallMs, errorMs]: the sync error the core measured from each sample
function draw() {
  if (!view) return;
  const playing = view.rate > 0;
  $('play').textContent = player.intended === 'playing' ? 'Pause' : 'Play';
  // Beside the item's title, this tab's part: "joined" alone read like a person of that name joining.
  const part = { joined: 'you are in the group', waiting: 'joining…', invalidated: 'you left the group' }[view.state] || view.state;
  $('state').textContent = `· ${part}${view.waiting ? ', waiting for the group' : ''}${view.suspensions.length ? `, ${view.suspensions.map(reasonWords).join(', ')}` : ''}`;
  $('item').textContent = view.title || view.item || 'nothing';
  const duration = video.duration || view.duration || 0;
  $('time').textContent = view.position == null ? '–' : `${clock(video.currentTime)} / ${duration ? clock(duration) : '?'}${playing ? '' : ' (paused)'}`;
  if (duration > 0 && !$('seek').dataset.dragging) $('seek').value = Math.round(1000 * video.currentTime / duration);
  const peers = $('peers');
  const own = view.suspensions.length ? view.suspensions.map(reasonWords).join(', ') : view.waiting ? 'waiting' : playing ? 'playing' : 'paused';
  peers.replaceChildren(row(['you', `${name} (${view.id.slice(0, 6)})`, 'web', view.item || '–', own, '–']));
  for (const p of view.peers) {
    const offsetMs = p.offsetNanos == null ? null : p.offsetNanos / 1e6, errorMs = (p.offsetErrorNanos ?? 0) / 1e6;
    const clockText = offsetMs == null ? 'measuring' : `${offsetMs >= 0 ? '+' : ''}${offsetMs.toFixed(2)} ± ${errorMs.toFixed(2)} ms`;
    const state = p.state === 'suspected' ? 'silent' : p.suspensions.length ? p.suspensions.map(reasonWords).join(', ') : p.waiting ? 'waiting' : p.ready ? 'ready' : 'here';
    peers.append(row(['', `${p.name} (${p.id.slice(0, 6)})`, p.kind, p.item || '–', state, clockText]));
  }
  const queue = $('queue');
  queue.replaceChildren(...view.queue.map((e) => { const li = document.createElement('li'); li.textContent = e.title || e.url; if (e.current) li.className = 'current'; return li; }));
  $('queue-empty').hidden = view.queue.length > 0;
  if (view.errorMs != null && playing) history.push([wallMs(), view.errorMs]);
  while (history.length && history[0][0] < wallMs() - 60000) history.shift();
  plot();
  $('correction').textContent = view.errorMs == null ? '' : `error ${view.errorMs.toFixed(2)} ms, nudge ${view.nudgePercent.toFixed(3)} %`;
}

function row(cells) {
  const tr = document.createElement('tr');
  for (const c of cells) { const td = document.createElement('td'); td.textContent = c; tr.append(td); }
  return tr;
}
function clock(s) { const m = Math.floor(s / 60); return `${m}:${String(Math.floor(s % 60)).padStart(2, '0')}`; }

function plot() {
  const canvas = $('plot'), g = canvas.getContext('2d');
  const w = canvas.width, h = canvas.height, now = wallMs();
  g.clearRect(0, 0, w, h);
  const bound = Math.max(5, ...history.map(([, e]) => Math.abs(e)));
  g.strokeStyle = '#8884'; g.beginPath(); g.moveTo(0, h / 2); g.lineTo(w, h / 2); g.stroke();
  g.strokeStyle = '#2a7'; g.beginPath();
  history.forEach(([t, e], i) => {
    const x = w - (now - t) / 60000 * w, y = h / 2 - e / bound * (h / 2 - 4);
    i ? g.lineTo(x, y) : g.moveTo(x, y);
  });
  g.stroke();
  g.fillStyle = '#888'; g.font = '11px sans-serif';
  g.fillText(`±${bound.toFixed(1)} ms, last 60 s`, 4, 12);
}

// Each event is the core's record (PROTOCOL.md, "Events"), as `coplay --json` prints it.
function onEvent(e) {
  const by = e.originator ? ` by ${e.originator.local ? 'you' : e.originator.name}` : '';
  const at = e.position != null ? ` at ${clock(e.position)}` : '';
  switch (e.event) {
    case 'peer-joined': log(`${e.peer.name} joined`); break;
    case 'peer-left': log(`${e.peer.name} left (${e.reason})`); break;
    case 'peer-unresponsive': log(`${e.peer.name} went silent`); break;
    case 'activity': log(`now watching ${e.title || e.item}${by}`); break;
    case 'playing': log(`playing${at}${by}`); break;
    case 'paused': log(e.reason === 'ended' ? `the end${at}` : `paused${at}${by}`); break;
    case 'time-jumped': log(`jumped${at}${by}`); break;
    case 'queue-changed': log(`queue: ${e.change} ${e.title || e.entry || ''}${by}`); break;
    case 'state-adopted': log(`caught up from ${e.from.name}`); break;
    case 'error': case 'player-error': log(`⚠ ${e.message}`); break;
    case 'suspension-began': log(`you are ${e.reason === 'stallRecovery' ? 'catching up' : e.reason}`); break;
    case 'message': log(`${e.from.name}: ${e.text}`); break;
  }
}

function log(text) {
  const li = document.createElement('li');
  li.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  $('log').prepend(li);
  while ($('log').children.length > 200) $('log').lastChild.remove();
}

// MARK: Start

// A new link pasted into this tab changes only the fragment, which loads nothing: follow it.
window.addEventListener('hashchange', () => location.reload());

{
  const invite = invitation();
  if (invite.error) {
    $('refused').textContent = invite.error;
    $('refused').hidden = false;
    $('join').disabled = true;
  } else {
    $('session').textContent = invite.session;
  }
  try { $('name').value = localStorage.getItem('coplay-name') || ''; } catch { /* private mode */ }
}
