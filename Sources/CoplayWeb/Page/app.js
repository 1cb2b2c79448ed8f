// The page: the person's side of a browser participant. The participant itself (the core and
// its connection) runs in worker.js; this draws what it says and carries out its player
// commands on the one <video> element, which plays every item and is never replaced, so that
// the Join click's permission to play holds for every later start.
//
// The player is an adapter: the core's follower (PlayerFollower, the same as mpv's) decides when
// the element seeks, plays, pauses, at what rate, and when its position is read; this performs
// those actions and says what the element did. A pause the browser imposes (a hidden tab's
// video, a locked phone, another page's audio) is this participant's own stall, never a group
// pause: only the person's clicks here are commands.
'use strict';
const $ = (id) => document.getElementById(id);
const video = $('video');
const wallMs = () => performance.timeOrigin + performance.now();
const wallNanos = () => BigInt(Math.round(wallMs() * 1e6));
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
  // audience=1 (coplay invite --audience): this tab joins a large party's audience, as a viewer.
  return { relay, session, key, viewer: fields.get('audience') === '1' };
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
  // The element's capabilities, for the core's follower: Chromium plays rates within 0.1% of 1 as
  // 1 (its audio renderer passes them through; PLAYERS.md), so rates near 1 are alternated either
  // side of that band; `?steer=skip` forces skip-only steering (the tests).
  // Firefox and WebKit stretch every rate (a dead band would only alternate their rates).
  // Chromium's and Firefox's rates were measured to steer. WebKit on Linux (WebKitGTK, WPE: a
  // GStreamer pipeline) plays a rate changed with every nudge at 1: it steers by skips. Another
  // engine (Safari's AVFoundation) steers by rate until the follower finds it does not.
  const ua = navigator.userAgent;
  const chromium = /Chrom(e|ium)\//.test(ua);  // HeadlessChrome/ too
  const firefox = /Firefox\//.test(ua);
  const gstreamerWebKit = !chromium && !firefox && /AppleWebKit\//.test(ua) && /\b(X11|Linux)\b/.test(ua) && !/Android/.test(ua);
  const forced = new URLSearchParams(location.search).get('steer') === 'skip';
  const steering = forced || gstreamerWebKit ? 'skip' : chromium || firefox ? 'rate' : 'check';
  // Firefox's currentTime moves every 40 ms or so, each reading up to that old
  // (Tools/web/clock-probe); `?steps=on|off` overrides the engine's declaration (measurements).
  const steps = new URLSearchParams(location.search).get('steps');
  // Chromium's clock ran 30 ms after a start, then stood 65 ms while its audio output started: a
  // start is judged once the clock runs. Declared for every engine (one that never stands is
  // judged 30 ms later, no worse). Chromium's first start after a seek began 72-98 ms late in
  // five joins (Tools/web/party-check): the core starts it that much early until it has learnt.
  const capabilities = {
    steering, deadBand: chromium ? 0.001 : 0, readsInSteps: steps ? steps === 'on' : firefox, standsAfterStart: true,
    startLateness: chromium ? 0.085 : 0,
  };
  player.readsInSteps = capabilities.readsInSteps;
  worker.postMessage({ type: 'join', ...invite, name, wasm: 'coplay.wasm', player: capabilities });
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

// The relay, as the core's client says: connected, lost, refused, or not reached for a while
// (the core decides when that is worth saying: Settings.Relay.unreachableNotice).
const relayState = { up: false, everUp: false, refused: false, ended: null };
function relayUnreachable(server, lost) {
  if (relayState.ended) return;  // the party is over: its relay is gone, and that is no problem
  showProblem('relay', `${lost ? 'Lost the relay' : 'Cannot reach the relay'} at ${hostOf(server)}: ${location.protocol === 'https:' ? 'is the hub running?' : "is this device on the same network as the party (the room's Wi-Fi, not mobile data), and is the party still running?"} Trying again…`);
}

function send(message) { worker?.postMessage(message); }
function report(kind, fields = {}) { send({ type: 'report', kind, ...fields }); }

function onWorker(message) {
  switch (message.type) {
    case 'event': onEvent(message.event); break;
    case 'player': perform(message.action); break;
    case 'view': {
      const length = view?.duration;
      view = message.view; if (view.steering) player.steering = view.steering;
      // The film's length, once known, joins what this device is said to lack.
      if (player.lacking && view.duration && view.duration !== length) showProblem('media', lackingText(player.lacking));
      draw(); break;
    }
    case 'connection':
      $('connection').textContent = message.up ? 'connected' : relayState.everUp ? 'relay lost: reconnecting…' : 'connecting…';
      $('connection').className = message.up ? 'up' : 'down';
      relayState.up = message.up;
      if (message.refused) {
        // The core's word that the server refused the credentials (its diagnostic says how).
        relayState.refused = true;
        showProblem('relay', 'The relay refused this link: its token is wrong or out of date. Ask the host for a new link (a new party makes a new one).');
      } else if (message.up) { relayState.everUp = true; clearProblem('relay'); }
      else if (message.unreachable && !relayState.refused) relayUnreachable(message.server, message.unreachable === 'lost');
      break;
    case 'diagnostic':
      // The relay's client says when it connects and what the cluster announced, and a viewer
      // that took a seat says it is in the group in full: news, not warnings (the screenshot
      // showed "⚠ relay: connected"; every phone at a party showed a seat under an alarm sign).
      log(/^(relay: (connected|the cluster announced)|in the group in full)/.test(message.text) ? message.text : `⚠ ${message.text}`);
      break;
    case 'fingerprint': fingerprinting.get(message.token)?.(message); fingerprinting.delete(message.token); break;
    case 'trap': log(`⚠ the core stopped (${message.text}); rejoining`); break;
    case 'left': log('left the group'); break;
  }
}

// MARK: The player: an adapter
//
// How the element follows the group (when a start plays, what a seek costs, the pause snap, the
// rate, skips where the rate cannot steer, what a hidden page does) is the core's PlayerFollower,
// the same as mpv's. This performs its actions on the one element and says what the element did:
// loaded (it knows the media), restarted (it holds a frame where it was sent and can play),
// a position when asked, paused when the browser paused it, playing, starved, ended.

const player = {
  item: null, url: null,
  intended: 'paused',          // what the follower last asked: 'playing' or 'paused'
  awaitingReady: false,        // a load not yet settled (the tests read it)
  loading: false,              // a load waits for the element to know the media
  settling: false,             // a load or seek waits for the element to hold a frame
  pendingPosition: null,       // where to seek once the element knows the media (a reload)
  seekTarget: 0, ranges: null, // the last seek's target; whether the server takes byte ranges
  ownPause: false,             // the next 'pause' event is ours
  steering: { mode: 'rate', skips: 0 },  // from the core's view
  readsInSteps: false,         // currentTime moves in steps: read at a frame's callback
};
window.coplayPlayer = player;  // the tests read it through DevTools
// The element's last events and the follower's actions with their wall instants (ms), for the
// tests and the benchmark.
player.trace = [];
function trace(entry) {
  player.trace.push({ atMs: wallMs(), position: video.currentTime, ...entry });
  if (player.trace.length > 100) player.trace.shift();
}
for (const type of ['pause', 'playing', 'seeked', 'waiting']) video.addEventListener(type, () => trace({ type }));
video.addEventListener('play', () => trace({ type: 'unpaused' }));  // WebKit may fire no 'playing' after

function observe(kind, fields = {}) { send({ type: 'observe', kind, ...fields }); }

function perform(action) {
  trace({ type: action.op, command: JSON.stringify(action) });
  switch (action.op) {
    case 'load': {
      player.item = action.item; player.awaitingReady = true; player.lacking = null;
      player.sharedURL = action.url;
      if (player.offer) { URL.revokeObjectURL(player.offer.url); player.offer = null; $('own-offer').hidden = true; }
      $('item').textContent = action.item;
      clearProblem('media');
      // A film known by its content plays from the person's own copy where they picked one.
      const own = ownCopies.get(action.item);
      const url = own ? own.url : action.url;
      drawOwnCopy();
      loadSubtitles(action.url);  // beside the group's film, whichever copy plays here
      if (own?.another) report('anotherEncode');  // every participant lists this copy as another encode
      const refusal = refusalBeforeLoad(url);
      if (refusal) {
        player.url = null;
        video.removeAttribute('src'); video.load();
        return cannotPlay(refusal);
      }
      player.loading = true; player.settling = true;
      if (player.url !== url) {
        player.url = url;
        player.pendingPosition = null;
        player.ranges = null;  // known once the element has the media's metadata
        video.src = url;
      } else {
        video.currentTime = 0;  // the same media again: from its start, as a load is
      }
      break;
    }
    case 'seek': seekTo(action.position); break;
    case 'reload':
      // A seek the element never finished: a pipeline the browser suspended starts afresh, unless
      // the server takes no byte ranges (then a reload could not get there either).
      if (player.ranges === false) cannotSeek(player.seekTarget); else reloadMedia(action.position);
      break;
    case 'pause': player.intended = 'paused'; pauseElement(); break;
    case 'play': player.intended = 'playing'; startElement(); break;
    case 'rate': player.rate = action.rate; video.playbackRate = action.rate; break;
    case 'read':
      if (video.paused || video.seeking || video.readyState < 2) observe('unavailable');
      else if (player.readsInSteps && video.requestVideoFrameCallback && !document.hidden) readAtFrame();
      else observe('position', { position: video.currentTime, at: wallNanos() });
      break;
    case 'unload':
      player.item = null; player.url = null; player.loading = false; player.settling = false;
      video.removeAttribute('src'); video.load();
      $('item').textContent = 'nothing';
      break;
    case 'interstitial':
      $('interstitial').hidden = false;
      $('interstitial').textContent = `interstitial: ${action.url} (${action.duration.toFixed(1)} s)`;
      break;
    case 'interstitial-end': $('interstitial').hidden = true; break;
  }
}

// Firefox's currentTime moves every 40 ms or so, and read at any moment it is up to that old;
// read at a frame's callback, it has just moved (within a millisecond of the instant read, in
// Tools/web/clock-probe). The frame comes within 33 ms at 30 frames a second; without one (no
// video track, a frame held) the element is read as it is after 50 ms, and the core's follower
// takes stale readings for what they are (readsInSteps).
function readAtFrame() {
  let answered = false;
  const answer = () => {
    if (answered) return;
    answered = true;
    if (video.paused || video.seeking) observe('unavailable');
    else observe('position', { position: video.currentTime, at: wallNanos() });
  };
  const frame = video.requestVideoFrameCallback(answer);
  setTimeout(() => { if (!answered) video.cancelVideoFrameCallback(frame); answer(); }, 50);
}

// A seek of the follower's. A server without byte ranges lets the element seek nowhere: said,
// rather than sitting at 0:00.
function seekTo(position) {
  player.seekTarget = Math.max(0, position);
  player.settling = true;
  if (player.ranges === false && player.seekTarget > 0.5) return cannotSeek(player.seekTarget);
  if (video.readyState < 1) { player.pendingPosition = player.seekTarget; return; }
  video.currentTime = player.seekTarget;
}

/// The media loaded anew at `position` (its pipeline, suspended by the browser, starts afresh).
function reloadMedia(position) {
  if (!player.url) return;
  player.reloads = (player.reloads ?? 0) + 1;
  player.settling = true;
  player.pendingPosition = Math.max(0, position);
  video.src = player.url;
}

// A new src (a load, a reload) puts playbackRate back to 1: the rate the follower asked holds on.
video.addEventListener('loadstart', () => { if (player.rate != null) video.playbackRate = player.rate; });
video.addEventListener('loadedmetadata', () => {
  if (player.rate != null && video.playbackRate !== player.rate) video.playbackRate = player.rate;
  // A film whose picture this browser does not decode plays as sound alone, with no error
  // (Chromium and HEVC): a black box is not watching.
  if (video.videoWidth === 0 && /\.(mp4|m4v|mov|mkv|webm|avi|ts)(\?|#|$)/i.test(player.url ?? '')) {
    return cannotPlay({ problem: 'format', text: formatText(player.url, true) });
  }
  // A server that answers no byte ranges (python3's http.server): the element can seek nowhere
  // (Chromium reports the media seekable from 0 to 0, however much it holds).
  const seekableEnd = video.seekable.length ? video.seekable.end(video.seekable.length - 1) : 0;
  player.ranges = !(Number.isFinite(video.duration) && video.duration > 1 && seekableEnd < 0.5);
  // The film's length, for an item shared without one: the group's seeks past it stop at its end.
  if (Number.isFinite(video.duration) && video.duration > 0) observe('duration', { position: video.duration });
  if (player.pendingPosition != null) {
    const position = player.pendingPosition;
    player.pendingPosition = null;
    seekTo(position);
  }
  if (player.loading) { player.loading = false; observe('loaded'); }
});

/// Whether the element holds media from where it stands on (`seconds` of it, or to the end).
/// WebKit's GStreamer pipeline leaves readyState at 2 (HAVE_CURRENT_DATA) after a seek and fires
/// 'waiting' at a play() while it plays on, never 'canplay' or 'playing' after: what it has
/// buffered says whether it can play, in every engine.
function holdsAhead(seconds) {
  const t = video.currentTime, b = video.buffered;
  for (let i = 0; i < b.length; i++) {
    if (b.start(i) <= t + 0.001 && (b.end(i) >= t + seconds || b.end(i) >= video.duration - 0.05)) return true;
  }
  return false;
}
const aheadToPlay = 0.3;  // seconds of media held ahead for the element to count as able to play

/// The element holds a frame where it was sent and can play: the follower's seek or load is done.
function restarted() {
  if (!player.settling || video.seeking || player.pendingPosition != null) return;
  if (video.readyState < 3 && !(video.readyState >= 2 && holdsAhead(aheadToPlay))) return;
  if (player.loading) { player.loading = false; observe('loaded'); }
  player.settling = false;
  player.awaitingReady = false;
  observe('restarted');
}
video.addEventListener('seeked', () => {
  // A server without byte ranges: the element lands where it has data, not where it was sent.
  if (player.ranges === false && player.settling && Math.abs(video.currentTime - player.seekTarget) > 1) {
    return cannotSeek(player.seekTarget);
  }
  restarted();
});
video.addEventListener('canplay', restarted);
video.addEventListener('progress', restarted);
// Playing again ends any stall, the browser's pause as well as a starved element's.
video.addEventListener('playing', () => { player.starvedAt = null; observe('playing'); observe('fed'); });
// Out of media while playing: a 'waiting' with nothing held ahead (a seek's own wait is the
// seek's; WebKit's 'waiting' at a play() that plays on is not one). Fed again when the element
// plays ('playing'), or its time moves on (WebKit fires no 'playing' after its 'waiting').
video.addEventListener('waiting', () => {
  if (video.seeking || player.settling || holdsAhead(aheadToPlay)) return;
  player.starvedAt = video.currentTime;
  observe('starved');
});
function fed() {
  if (player.starvedAt == null) return;
  player.starvedAt = null;
  observe('fed');
}
video.addEventListener('timeupdate', () => {
  if (player.starvedAt != null && !video.paused && video.currentTime > player.starvedAt + 0.05) fed();
});
video.addEventListener('pause', () => {
  if (player.ownPause) { player.ownPause = false; return; }
  // Not the follower's and not the person's (they click the page's buttons): the browser paused it
  // (a frozen or hidden page, another page's audio). The follower counts it a stall and asks again.
  if (!video.ended) observe('paused');
});
video.addEventListener('ended', () => observe('ended'));

function pauseElement() {
  if (!video.paused) { player.ownPause = true; video.pause(); }
}

function startElement() {
  // At the media's end play() would start it again from 0: the group is past this item's end.
  if (video.ended || (Number.isFinite(video.duration) && video.currentTime >= video.duration - 0.01)) return;
  video.play().catch((error) => {
    if (error.name !== 'NotAllowedError') return;
    // The browser wants a gesture for sound: play muted, and offer the sound back.
    video.muted = true;
    $('unmute').hidden = false;
    video.play().catch(() => observe('playRefused'));
  });
}

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
// kind it is (PlaybackProblem: format, notFound, unreachable, noRanges, localPath, live, noCopy), leaves
// the item, and the group sees why this participant is not watching (its row says so everywhere).

/// The last part of a URL's path, decoded: how a person names the file (`fallback` for none).
function fileName(url, fallback = url) {
  try { return decodeURIComponent(new URL(url, location.href).pathname.split('/').pop()) || fallback; } catch { return fallback; }
}

const hostOf = (url) => { try { return new URL(url).host; } catch { return url; } };
const isLoopback = (url) => { try { return ['localhost', '127.0.0.1', '[::1]'].includes(new URL(url).hostname); } catch { return false; } };

/// What cannot play here before trying: a path on another machine, an http:// film from a page
/// that came over https://, or a live HLS stream in a browser that does not play HLS itself.
/// Null: try it.
function refusalBeforeLoad(url) {
  if (!/^(https?|blob):/i.test(url)) {
    return { problem: 'localPath',
      text: `The group is watching ${url}, a file on another machine's disk: a browser can only play an http:// address. Ask whoever shared it to share it with coplay party, which serves files to every device.` };
  }
  // A page from https:// (a hub's) plays no http:// film but this device's own: browsers block it
  // (Firefox) or ask for it over https:// (Chromium), which the host's own server does not speak.
  if (location.protocol === 'https:' && /^http:/i.test(url) && !isLoopback(url)) {
    return { problem: 'unreachable',
      text: `This page came through the hub, and ${fileName(url)} is on the host's own network (${hostOf(url)}), which a browser does not reach from here. From another home, a copy of your own is needed (or ask the host to share a URL every home reaches, such as the hub's).` };
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
  // A copy of the person's own is on this device: what fails there is its format.
  if (url.startsWith('blob:')) {
    const own = [...ownCopies.values()].find((copy) => copy.url === url);
    return { problem: 'format', text: formatText(own?.name ?? url, false) };
  }
  const file = fileName(url);
  let response = null;
  try { response = await fetch(url, { method: 'HEAD', cache: 'no-store' }); } catch { /* unreachable, or another origin */ }
  if (response && (response.status === 404 || response.status === 410)) {
    return { problem: 'notFound', text: `${file} is not at its address any more (its server answered ${response.status}). Ask whoever shared it to share it again.` };
  }
  if (!response) {
    // (A network error is said so whatever a second question would find.)
    let reachable = false;
    if (code !== 2) {
      try { await fetch(url, { method: 'HEAD', mode: 'no-cors', cache: 'no-store' }); reachable = true; } catch { /* not reachable */ }
    }
    if (!reachable) {
      const host = hostOf(url);
      return { problem: 'unreachable', text: location.protocol === 'https:'
        ? `This device cannot reach ${host}, where ${file} is: it is on the host's own network. From another home, a copy of your own is needed (or ask the host to share a URL every home reaches).`
        : `This device cannot reach ${host}, where ${file} is. Is it on the same network as the others (the room's Wi-Fi, not mobile data)?` };
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
/// A film known by its content that this device cannot reach is one to play from a copy of the
/// person's own: said so (`noCopy`), and picking it plays it (`useOwnCopies`).
function cannotPlay({ problem, text, detail }) {
  if (isFingerprint(player.item) && ['localPath', 'unreachable', 'notFound'].includes(problem)) {
    player.lacking = player.item;
    problem = 'noCopy';
    text = lackingText(player.item);
  }
  showProblem('media', text);
  // The log gets the words once: from the core's player-error, which this report makes.
  if (detail) log(`⚠ ${detail}`);
  player.settling = false; player.awaitingReady = false;
  report('loadFailed', { problem, text: player.url ? `${player.url}: ${text}` : text });
}

// MARK: A copy of one's own
//
// A film shared from a file is known by its content (its item id is the file's fingerprint:
// PROTOCOL.md, "Fingerprints"), so a person with a copy of it plays that copy, wherever it came
// from and whatever it is called: the Worker reads the windows the core names (1 MiB, whatever
// the size) and the core hashes them; the element plays the file from an object URL, and nothing
// of it leaves the device. The group's timeline is the same: only where the bytes come from differs.

const ownCopies = new Map();  // fingerprint -> { name, url }, oldest first
const ownCopiesMax = 32;      // files a person picks in one tab: their object URLs hold only a reference
const fingerprinting = new Map();
let fingerprintToken = 0;
const isFingerprint = (id) => /^v1-[0-9]{1,16}-[0-9a-f]{64}$/.test(id ?? '');
/// The file's fingerprint (`id`, null when it cannot be read) and whether its name is `wanted`'s
/// as another encode's is (`sameName`): the Worker's, by the core's rule and the agent's.
function fingerprint(file, wanted) {
  return new Promise((resolve) => {
    const token = ++fingerprintToken;
    fingerprinting.set(token, resolve);
    send({ type: 'fingerprint', file, token, wanted });
  });
}

/// A film's length as this browser reads it from its own copy (null: it cannot say within 5 s).
function mediaLength(url) {
  return new Promise((resolve) => {
    const probe = document.createElement('video');
    const done = (length) => { clearTimeout(timer); probe.removeAttribute('src'); probe.load(); resolve(length); };
    const timer = setTimeout(() => done(null), 5000);
    probe.preload = 'metadata'; probe.muted = true;
    probe.onloadedmetadata = () => done(Number.isFinite(probe.duration) && probe.duration > 0 ? probe.duration : null);
    probe.onerror = () => done(null);
    probe.src = url;
  });
}

/// What this device lacks, in words: the film's name (its address's last part), size and length.
function lackingWords(id) {
  const size = Number(id.split('-')[1]);
  const name = fileName(player.sharedURL ?? '') || 'the film';
  const length = view?.duration ? `, ${clock(view.duration)} long` : '';
  return `The group is watching ${name} (${megabytes(size)}${length}), and this device has no copy it can reach.`;
}
const lackingText = (id) => `${lackingWords(id)} Choose your own copy of it below (“Your own copy of the film”): it plays from this device, and nothing of it leaves it.`;
const megabytes = (bytes) => bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(1)} MB`;

async function useOwnCopies(files) {
  for (const file of [...files].slice(0, 8)) {
    $('own-copy').textContent = `reading ${file.name}…`;
    const lacking = player.lacking;
    const { id, sameName, slack } = await fingerprint(file, lacking ? fileName(player.sharedURL ?? '') : null);
    if (!id) { log(`⚠ cannot read ${file.name}: choose it again`); continue; }
    if (lacking && id !== lacking && sameName && await offerOtherEncode(file, lacking, slack)) continue;
    if (!ownCopies.has(id)) rememberCopy(id, { name: file.name, url: URL.createObjectURL(file) });
    const wanted = player.lacking ?? player.item;
    if (id === player.lacking) {
      log(`your copy ${file.name} is the film the group is watching: it plays from this device`);
      player.lacking = null;
      clearProblem('media');
      report('copyFound');  // the core loads the item again, where the group is
    } else if (id === wanted) {
      log(`your copy ${file.name} is the film the group is watching: from its next load, it plays from this device`);
    } else {
      log(`${file.name} is not the film the group is watching${isFingerprint(wanted) ? ` (${megabytes(Number(wanted.split('-')[1]))})` : ''}: kept, should the group watch it`);
    }
  }
  drawOwnCopy();
}
/// A file with the film's name but other bytes is another encode of it when its length is the
/// group's (within the Worker's `otherEncodeSlack`, the agent's: the names' vectors hold both): offered, and played on the group's timeline once the
/// person accepts it. False: it is not one (said why).
async function offerOtherEncode(file, lacking, slack) {
  const url = URL.createObjectURL(file);
  const length = await mediaLength(url), wanted = view?.duration;
  if (!length || !wanted || Math.abs(length - wanted) > slack) {
    URL.revokeObjectURL(url);
    log(`${file.name} has the film's name but ${!wanted ? "the group's film has no known length" : !length ? 'this browser cannot read its length' : `lasts ${clock(length)}, not ${clock(wanted)}`}: not another encode of it`);
    return false;
  }
  if (player.offer) URL.revokeObjectURL(player.offer.url);
  player.offer = { id: lacking, name: file.name, url };
  $('own-offer').textContent = `Play ${file.name} (another encode)`;
  $('own-offer').hidden = false;
  log(`${file.name} is another encode of the film (the same name and length, ${clock(length)}, other bytes): play it with the button`);
  return true;
}
$('own-offer').onclick = () => {
  const offer = player.offer;
  $('own-offer').hidden = true;
  player.offer = null;
  if (!offer || offer.id !== player.lacking) { if (offer) URL.revokeObjectURL(offer.url); return; }
  rememberCopy(offer.id, { name: offer.name, url: offer.url, another: true });
  player.lacking = null;
  clearProblem('media');
  report('copyFound');  // loaded again where the group is, from this encode
};

/// A copy kept for its item, the oldest let go past `ownCopiesMax`.
function rememberCopy(id, copy) {
  if (ownCopies.has(id)) URL.revokeObjectURL(ownCopies.get(id).url);
  ownCopies.delete(id);
  if (ownCopies.size >= ownCopiesMax) {
    const [oldest, old] = ownCopies.entries().next().value;
    URL.revokeObjectURL(old.url);
    ownCopies.delete(oldest);
  }
  ownCopies.set(id, copy);
}

function drawOwnCopy() {
  const own = ownCopies.get(player.item ?? player.lacking);
  $('own-copy').textContent = own ? `playing ${own.name} from this device${own.another ? ' (another encode)' : ''}` : ownCopies.size ? `${ownCopies.size} of yours known` : '';
}
$('own-file').onchange = () => { useOwnCopies($('own-file').files); };
for (const type of ['dragover', 'drop']) {
  document.querySelector('.stage').addEventListener(type, (e) => {
    if (!e.dataTransfer?.types.includes('Files')) return;
    e.preventDefault();
    if (type === 'drop') useOwnCopies(e.dataTransfer.files);
  });
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
  if (reason === 'copy:anotherEncode') return 'plays another encode';
  if (!problem) return reason === 'stallRecovery' ? 'catching up' : reason;
  return { format: "can't play this format", notFound: 'its file is missing', unreachable: "can't reach the film",
    noRanges: "can't seek in it", localPath: "can't read a path", live: "can't play live streams", noCopy: 'has no copy' }[problem] || "can't play it";
}

// The page hidden and shown: the follower stops steering a hidden page (its timers are throttled)
// and, shown, plays a video the browser paused and corrects what drifted. A frozen or restored
// page reconnects at once.
document.addEventListener('visibilitychange', () => observe(document.visibilityState === 'hidden' ? 'hidden' : 'shown'));
// A frozen page's media pipeline does not come back whole (seeks never finish): it is reloaded
// where it was, and the follower, told it stopped, plays it again and brings it back in sync.
document.addEventListener('resume', () => {
  send({ type: 'resume' });
  if (!player.item) return;
  reloadMedia(video.currentTime);
  observe('paused');
});
window.addEventListener('pageshow', (e) => { if (e.persisted) { send({ type: 'resume' }); observe('shown'); } });
window.addEventListener('pagehide', (e) => { if (!e.persisted) send({ type: 'leave' }); });

// MARK: The person's controls: each is a group command

$('play').onclick = () => {
  const asked = player.intended === 'playing' ? 'pause' : 'play';
  trace({ type: 'pressed', asked });  // when the page had the click (the tests measure from it)
  report(asked, { rate: 1 });
};
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
$('unmute').onclick = () => { video.muted = false; $('unmute').hidden = true; drawSound(); };

// MARK: This device's player: full screen, picture in picture, volume (none is a group command)

// Full screen: the stage (the film and what shows over it) where the engine can; only the video
// element where that is all it can (an iPhone: webkitEnterFullscreen, with the system's controls,
// whose pause is the person's and so the group's). A tap on the film is the group's play or pause.
const stage = document.querySelector('.stage');
const fullscreenElement = () => document.fullscreenElement || document.webkitFullscreenElement || null;
$('fullscreen').onclick = async () => {
  if (fullscreenElement()) return (document.exitFullscreen || document.webkitExitFullscreen).call(document);
  try {
    if (stage.requestFullscreen) return await stage.requestFullscreen({ navigationUI: 'hide' });
    if (stage.webkitRequestFullscreen) return stage.webkitRequestFullscreen();
  } catch { /* refused: the video alone, below */ }
  if (video.webkitEnterFullscreen) video.webkitEnterFullscreen();
};
const drawFullscreen = () => { $('fullscreen').textContent = fullscreenElement() ? 'Exit full screen' : 'Full screen'; };
document.addEventListener('fullscreenchange', drawFullscreen);
document.addEventListener('webkitfullscreenchange', drawFullscreen);
video.addEventListener('click', () => { if (view?.item) $('play').click(); });
// Picture in picture, where the engine has it.
$('pip').hidden = !(document.pictureInPictureEnabled && video.requestPictureInPicture);
$('pip').onclick = () => (document.pictureInPictureElement ? document.exitPictureInPicture() : video.requestPictureInPicture()).catch(() => {});
// Volume and mute: this device's own, remembered by the browser.
const soundKey = 'coplay.volume';
try { const kept = JSON.parse(localStorage.getItem(soundKey) || 'null'); if (kept && Number.isFinite(kept.volume)) video.volume = Math.min(1, Math.max(0, kept.volume)); } catch { /* none kept */ }
function drawSound() {
  $('volume').value = String(Math.round(video.volume * 100));
  $('mute').textContent = video.muted ? 'Unmute' : 'Mute';
}
$('volume').oninput = () => { video.volume = Number($('volume').value) / 100; if (video.muted && video.volume > 0) { video.muted = false; $('unmute').hidden = true; } };
$('mute').onclick = () => { video.muted = !video.muted; if (!video.muted) $('unmute').hidden = true; };
video.addEventListener('volumechange', () => {
  drawSound();
  try { localStorage.setItem(soundKey, JSON.stringify({ volume: video.volume })); } catch { /* storage refused */ }
});
drawSound();
$('share-form').onsubmit = (e) => {
  e.preventDefault();
  const url = $('share-url').value.trim();
  if (url) send({ type: 'share', url });
};
$('queue-form').onsubmit = (e) => {
  e.preventDefault();
  const url = $('queue-url').value.trim();
  if (url) { send({ type: 'share', url, queue: true }); $('queue-url').value = ''; }
};
$('join').onclick = join;

// MARK: Drawing

const history = [];  // [wallMs, errorMs]: the sync error the core measured from each sample
function draw() {
  if (!view) return;
  const playing = view.rate > 0;
  $('play').textContent = player.intended === 'playing' ? 'Pause' : 'Play';
  // Beside the item's title, this tab's part: "joined" alone read like a person of that name joining.
  const part = { joined: 'you are in the group', waiting: 'joining…', invalidated: relayState.ended ? 'the session has ended' : 'you left the group' }[view.state] || view.state;
  $('state').textContent = `· ${part}${view.waiting ? ', waiting for the group' : ''}${view.suspensions.length ? `, ${view.suspensions.map(reasonWords).join(', ')}` : ''}`;
  // The film by its title, else by its file's name: never by its id, which says nothing to a person.
  const film = view.title || filmName(view.url) || (view.item ? 'the group\'s film' : 'nothing');
  $('item').textContent = film;
  const duration = video.duration || view.duration || 0;
  $('time').textContent = view.position == null ? '–' : `${clock(video.currentTime)} / ${duration ? clock(duration) : '?'}${playing ? '' : ' (paused)'}`;
  // With nothing of known length, the bar rests at the start (a range with no value sat at its far right).
  if (!$('seek').dataset.dragging) $('seek').value = duration > 0 ? Math.round(1000 * video.currentTime / duration) : 0;
  const peers = $('peers');
  const own = view.suspensions.length ? view.suspensions.map(reasonWords).join(', ') : view.waiting ? 'waiting' : playing ? 'playing' : 'paused';
  const itemWords = (item) => !item ? '–' : item === view.item ? film : 'another film';
  peers.replaceChildren(row(['you', `${name} (${view.id.slice(0, 6)})`, 'web', itemWords(view.item), own, '–']));
  for (const p of view.peers) {
    const offsetMs = p.offsetNanos == null ? null : p.offsetNanos / 1e6, errorMs = (p.offsetErrorNanos ?? 0) / 1e6;
    const clockText = offsetMs == null ? 'measuring' : `${offsetMs >= 0 ? '+' : ''}${offsetMs.toFixed(2)} ± ${errorMs.toFixed(2)} ms`;
    // A peer ready on the group's film plays or pauses with the group ('ready' read as if the TV
    // that played had not started).
    const state = p.state === 'suspected' ? 'silent' : p.suspensions.length ? p.suspensions.map(reasonWords).join(', ') : p.waiting ? 'waiting'
      : !p.item ? 'no film' : p.item !== view.item ? 'on another film' : p.ready ? (playing ? 'playing' : 'paused') : 'loading';
    // Whose copy of the film differs: another encode (the same film by name and length), said beside its state.
    const copy = p.copy === 'anotherEncode' ? ', another encode' : '';
    peers.append(row(['', `${p.name} (${p.id.slice(0, 6)})`, p.kind, itemWords(p.item), state + copy, clockText]));
  }
  // A party with an audience: the stage's count of those who watch (this tab among them when it is
  // a viewer), since the table lists only the stage member a viewer follows.
  $('watching').hidden = !view.watching;
  $('watching').textContent = view.watching ? `${view.watching.toLocaleString('en')} watching in the audience` : '';
  const queue = $('queue');
  queue.replaceChildren(...view.queue.map((e) => { const li = document.createElement('li'); li.textContent = e.title || filmName(e.url) || e.url; if (e.current) li.className = 'current'; return li; }));
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
// MARK: Subtitles

// The subtitles beside the film and its own text streams, as the party's server lists them
// (URL.tracks.json, WebVTT, an SRT or a stream converted): each tab picks its own, never a group command, and the browser remembers the
// language (localStorage; 'off' for none).
const subtitleChoice = 'coplay.subtitles';
let subtitlesFor = null, subtitleTracks = [];
async function loadSubtitles(url) {
  subtitlesFor = url;
  for (const old of [...video.querySelectorAll('track')]) old.remove();
  $('subtitles').hidden = true;
  let listing;
  try {
    const film = new URL(url, location.href);
    if (film.origin !== location.origin) return;  // another server's film: nothing is listed here
    const response = await fetch(`${film.origin}${film.pathname}.tracks.json`);
    if (!response.ok) return;
    listing = await response.json();
  } catch { return; }
  if (subtitlesFor !== url) return;  // another film since
  // The film's own streams are still being extracted (ffmpeg reads the film): asked again.
  if (listing?.pending === true) setTimeout(() => { if (subtitlesFor === url) loadSubtitles(url); }, 2000);
  const tracks = (Array.isArray(listing?.tracks) ? listing.tracks : []).slice(0, 16)
    .filter((t) => typeof t.url === 'string' && t.url.startsWith('/') && typeof t.language === 'string' && t.language.length <= 12);
  subtitleTracks = tracks;
  if (!tracks.length) return;
  const select = $('subtitles');
  const option = (value, text) => { const o = document.createElement('option'); o.value = value; o.textContent = text; return o; };
  select.replaceChildren(option('', 'Subtitles off'), ...tracks.map((t, i) => option(String(i), languageName(t.language))));
  for (const t of tracks) {
    const element = document.createElement('track');
    element.kind = 'subtitles'; element.src = t.url; element.srclang = t.language || 'und'; element.label = languageName(t.language);
    video.append(element);
  }
  let wanted = null;
  try { wanted = localStorage.getItem(subtitleChoice); } catch { /* storage refused */ }
  const chosen = tracks.findIndex((t) => t.language === wanted);
  select.value = wanted !== null && chosen >= 0 ? String(chosen) : '';
  showSubtitles();
  select.hidden = false;
}
function showSubtitles() {
  const chosen = $('subtitles').value;
  [...video.querySelectorAll('track')].forEach((element, i) => { element.track.mode = String(i) === chosen ? 'showing' : 'disabled'; });
}
$('subtitles').onchange = () => {
  showSubtitles();
  const value = $('subtitles').value;
  try { localStorage.setItem(subtitleChoice, value === '' ? 'off' : subtitleTracks[Number(value)]?.language ?? 'off'); } catch { /* storage refused */ }
};
/// A language tag in words where the browser knows it ("fr" → "French"), else as it is.
function languageName(tag) {
  if (!tag) return 'Subtitles';
  try { return new Intl.DisplayNames([navigator.language || 'en'], { type: 'language' }).of(tag) || tag; } catch { return tag; }
}

/// A film's name from its URL ("Our Film (2026).mp4"), '' for none: where a title is missing.
const filmName = (url) => (url ? fileName(url, '') : '');
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
  // Another participant's action, over the film (the follower's own corrections are not said).
  const other = e.originator && !e.originator.local ? e.originator.name : null;
  if (other && e.event === 'paused' && e.reason === 'pause') toast(`paused by ${other}${at}`);
  if (other && e.event === 'playing' && ['play', 'start', 'play-now'].includes(e.reason)) toast(`played by ${other}`);
  if (other && e.event === 'time-jumped' && e.reason === 'seek') toast(`${other} jumped${at}`);
  if (e.event === 'peer-joined') toast(`${e.peer.name} joined`);
  switch (e.event) {
    case 'peer-joined': log(`${e.peer.name} joined`); break;
    case 'peer-left': log(`${e.peer.name} left (${e.reason})`); break;
    case 'peer-unresponsive': log(`${e.peer.name} went silent`); break;
    case 'activity': log(`now watching ${e.title || filmName(e.url) || 'a film'}${by}`); break;
    case 'playing': log(`playing${at}${by}`); break;
    case 'paused': log(e.reason === 'ended' ? `the end${at}` : `paused${at}${by}`); break;
    case 'time-jumped': log(`jumped${at}${by}`); break;
    case 'queue-changed': log(`queue: ${e.change} ${e.title || e.entry || ''}${by}`); break;
    case 'state-adopted': log(`caught up from ${e.from.name}`); break;
    case 'error': case 'player-error': log(`⚠ ${e.message}`); break;
    case 'suspension-began': log(`you are ${e.reason === 'stallRecovery' ? 'catching up' : e.reason}`); break;
    case 'message': log(`${e.from.name}: ${e.text}`); toast(`${e.from.local ? 'you' : e.from.name}: ${e.text}`); break;
    case 'session':
      // Someone ended the session (the party's host, by Ctrl-C or quit, or an `end`): said once,
      // in words, and this tab leaves rather than try the gone relay for good.
      if (e.state === 'invalidated' && /^ended by /.test(e.reason || '') && !relayState.ended) {
        relayState.ended = e.reason.slice('ended by '.length);
        clearProblem('relay');
        const [who, ...why] = relayState.ended.split(': ');
        showProblem('ended', why.length && why.join(': ') === 'the party is over'
          ? `The party has ended (${who} ended it).` : `${who} ended the session${why.length ? `: ${why.join(': ')}` : ''}.`);
        log(`${who} ended the session${why.length ? `: ${why.join(': ')}` : ''}`);
        send({ type: 'leave' });
      }
      break;
  }
}

// Over the film, for a few seconds: who did what, and what was said. Text only (textContent):
// a name or a message from the network is never markup. At most three at once.
const toastMillis = 5000, toastsMax = 3;
function toast(text) {
  const li = document.createElement('li');
  li.textContent = text.length > 300 ? `${text.slice(0, 299)}…` : text;
  $('toasts').append(li);
  while ($('toasts').children.length > toastsMax) $('toasts').firstChild.remove();
  setTimeout(() => li.remove(), toastMillis);
}
$('chat').onsubmit = (e) => {
  e.preventDefault();
  const text = $('chat-text').value.trim();
  if (!text) return;
  trace({ type: 'message-sent', text });
  send({ type: 'message', text });
  toast(`you: ${text}`);
  $('chat-text').value = '';
};

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
