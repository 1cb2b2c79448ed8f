// A participant's shell: the core in WebAssembly (coplay.wasm) joined to its group through
// nats-server's WebSocket listener. The same module runs in the page's Worker, in Node (the
// tests' tabs and the crowd) and anywhere else with WebSocket, performance and crypto. It only
// carries: it opens the WebSocket the core names, sends the bytes the core gives it, hands back
// the bytes that arrive and says when the socket closed; it keeps the one timer the core asks
// for, and gives the clocks and randomness. The NATS session (handshake, keep-alive, a silent
// server given up, failover to the servers a cluster announces, backoff) is the core's
// (NatsClient), the same as the native agent's. It decides nothing about the protocol.
//
//   const core = await Core.load(bytes);
//   const p = new Participant(core, { relay: ['ws://TOKEN@HOST:PORT', …], session, key, name,
//     onEvent, onPlayer, onDiagnostic, onConnection, onExit });
//   p.connect(); p.share('https://…/film.mp4'); p.report('ready', { position: 12.5 });
//   // or, for a real player that follows through the core: p.follow(); p.observe('restarted');

const enc = new TextEncoder(), dec = new TextDecoder();

// The clocks: monotonic nanoseconds from performance.now(); wall nanoseconds from the time
// origin plus it (a Worker's origin differs from its page's; the sum is the same clock).
export const monoNanos = () => BigInt(Math.round(performance.now() * 1e6));
export const wallNanos = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));

/// The WebAssembly module, instantiated once; many participants may live in it.
export class Core {
  static async load(bytes) {
    const core = new Core();
    const { instance } = await WebAssembly.instantiate(bytes, {
      env: { coplay_host_random: (ptr, n) => crypto.getRandomValues(new Uint8Array(core.x.memory.buffer, ptr, n)) },
    });
    core.x = instance.exports;
    return core;
  }
  put(data) {
    const p = this.x.coplay_alloc(data.length);
    new Uint8Array(this.x.memory.buffer, p, data.length).set(data);
    return p;
  }
  // An input's bytes are the core's for the call only.
  withBytes(data, body) {
    const p = this.put(data);
    try { return body(p); } finally { this.x.coplay_dealloc(p); }
  }
  /// The fingerprint of a `File` (or any Blob) a person picked: the item id a film shared from
  /// that file has (`v1-SIZE-HEX`; PROTOCOL.md, "Fingerprints"). The core names the windows and
  /// hashes them; only they are read (1 MiB, whatever the size), and nothing leaves the device.
  /// Null for a file that cannot be read whole or changed while it was read.
  async fingerprint(file) {
    const length = this.x.coplay_fingerprint_windows(file.size);
    if (length < 0) return null;
    const layout = this.records(length)[0].data;
    const v = new DataView(layout.buffer, layout.byteOffset, layout.byteLength);
    const windows = [];
    for (let i = 0; i + 16 <= v.byteLength; i += 16) windows.push([v.getFloat64(i, true), v.getFloat64(i + 8, true)]);
    const bytes = new Uint8Array(windows.reduce((n, [, count]) => n + count, 0));
    let at = 0;
    try {
      for (const [offset, count] of windows) {
        const part = new Uint8Array(await file.slice(offset, offset + count).arrayBuffer());
        if (part.length !== count) return null;
        bytes.set(part, at);
        at += count;
      }
    } catch { return null; }  // a file changed or removed since it was picked: NotReadableError
    const n = this.withBytes(bytes, (p) => this.x.coplay_fingerprint(file.size, p, bytes.length));
    return n < 0 ? null : dec.decode(this.records(n)[0].data);
  }
  records(length) {
    const out = [], base = this.x.coplay_output();
    const view = new DataView(this.x.memory.buffer, base, length);
    for (let i = 0; i + 5 <= length;) {
      const kind = view.getUint8(i), n = view.getUint32(i + 1, true);
      out.push({ kind, data: new Uint8Array(this.x.memory.buffer, base + i + 5, n).slice() });
      i += 5 + n;
    }
    return out;
  }
}

/// A file's name as two copies of one film are compared for another encode (PROTOCOL.md,
/// "Fingerprints"; the agent's OwnCopies.normalisedName, the same vectors:
/// Tests/Vectors/names.json): without an extension of up to 5 characters, lowercased, without
/// the characters Syncplay strips.
/// Two encodes of one film last the same within this (seconds): Syncplay's allowance, and the
/// agent's `Settings.OwnCopies.otherEncodeDurationSlack` (names.json's `durationSlack`).
export const otherEncodeSlack = 2.5;
export function normalisedName(name) {
  const dot = name.lastIndexOf('.');
  const base = dot > 0 && name.length - dot <= 6 ? name.slice(0, dot) : name;
  return base.toLowerCase().replace(/[-~_.[\](): ]/g, '');
}

/// A player command record (kind 9) as an object; see PlayerRecord in Exports.swift.
export function playerCommand(r) {
  const v = new DataView(r.buffer, r.byteOffset, r.byteLength);
  const f = (at) => v.getFloat64(at, true), i64 = (at) => v.getBigInt64(at, true);
  switch (r[0]) {
    case 1: {
      const n = v.getUint16(17, true);
      return { op: 'load', position: f(1), duration: Number.isNaN(f(9)) ? null : f(9),
        item: dec.decode(r.subarray(19, 19 + n)), url: dec.decode(r.subarray(19 + n)) };
    }
    case 2: return { op: 'prepare', position: f(1) };
    case 3: return { op: 'play', rate: f(1), position: f(9), at: i64(17) };
    case 4: return { op: 'rate', rate: f(1), at: i64(9) };
    case 5: return { op: 'pause', position: f(1) };
    case 6: return { op: 'unload' };
    case 7: {
      const n = v.getUint16(9, true);
      return { op: 'interstitial', duration: f(1), id: dec.decode(r.subarray(11, 11 + n)), url: dec.decode(r.subarray(11 + n)) };
    }
    case 8: return { op: 'interstitial-end' };
    default: return { op: 'none' };
  }
}

/// A follower's action record (kind 15) as an object; see FollowerRecord in Exports.swift.
export function playerAction(r) {
  const v = new DataView(r.buffer, r.byteOffset, r.byteLength);
  const f = (at) => v.getFloat64(at, true);
  switch (r[0]) {
    case 1: {
      const n = v.getUint16(1, true);
      return { op: 'load', item: dec.decode(r.subarray(3, 3 + n)), url: dec.decode(r.subarray(3 + n)) };
    }
    case 2: return { op: 'seek', position: f(1) };
    case 3: return { op: 'pause' };
    case 4: return { op: 'play' };
    case 5: return { op: 'rate', rate: f(1) };
    case 6: return { op: 'read' };
    case 7: return { op: 'reload', position: f(1) };
    case 8: return { op: 'unload' };
    case 9: {
      const n = v.getUint16(9, true);
      return { op: 'interstitial', duration: f(1), id: dec.decode(r.subarray(11, 11 + n)), url: dec.decode(r.subarray(11 + n)) };
    }
    case 10: return { op: 'interstitial-end' };
    default: return { op: 'none' };
  }
}

/// What a following player observes (coplay_player_observe's kinds).
export const observationKinds = { loaded: 1, restarted: 2, position: 3, unavailable: 4, paused: 5, playing: 6,
  starved: 7, fed: 8, ended: 9, seekRefused: 10, duration: 11, hidden: 12, shown: 13, playRefused: 14 };

/// What a player reports (coplay_player_report's kinds).
export const reportKinds = { ready: 1, stalled: 2, stallEnded: 3, ended: 4, sample: 5, play: 6, pause: 7, seek: 8,
  next: 9, previous: 10, failed: 11, loadFailed: 12, interstitialFailed: 13, duration: 14, copyFound: 15,
  anotherEncode: 16 };

/// The relay's address from an invitation: `ws://TOKEN@HOST:PORT` (wss for TLS). The token is
/// the server's authorization token, sent in CONNECT; a browser's WebSocket takes no user part.
export function relayAddress(relay) {
  const u = new URL(relay);
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new Error(`the relay must be ws:// or wss://, not ${u.protocol}`);
  const token = decodeURIComponent(u.username || '');
  u.username = ''; u.password = '';
  return { url: u.toString(), token };
}

export class Participant {
  constructor(core, { relay, session, key, name, seed, viewer = false, stage = false, onEvent, onPlayer, onDiagnostic, onConnection, onExit, WebSocketImpl }) {
    this.core = core;
    this.relays = (Array.isArray(relay) ? relay : [relay]).filter(Boolean);
    if (!this.relays.length) throw new Error('no relay to join through');
    this.relays.forEach(relayAddress);
    this.on = { event: onEvent || (() => {}), player: onPlayer || (() => {}), diagnostic: onDiagnostic || (() => {}),
      connection: onConnection || (() => {}), exit: onExit || (() => {}) };
    this.WebSocketImpl = WebSocketImpl || globalThis.WebSocket;
    this.reconnects = 0; this.opens = 0;
    this.connected = false; this.closed = false; this.socket = null;
    const random = crypto.getRandomValues(new BigUint64Array(3));
    this.relaySeed = random[2];
    const entropy = crypto.getRandomValues(new Uint8Array(32));
    const x = core.x, nameBytes = enc.encode(name), sessionBytes = enc.encode(session);
    const np = core.put(nameBytes), sp = core.put(sessionBytes), kp = core.put(key), ep = core.put(entropy);
    this.handle = x.coplay_create_relayed(random[0], seed ?? random[1], np, nameBytes.length, sp, sessionBytes.length,
      kp, key.length, ep, monoNanos(), wallNanos(), viewer ? 1 : stage ? 2 : 0);
    for (const p of [np, sp, kp, ep]) x.coplay_dealloc(p);
    if (this.handle === -1) throw new Error('the group key must be 32 bytes or more');
    if (this.handle === -2) throw new Error('the name must be at most 64 bytes and the session at most 64 bytes (UTF-8)');
    if (this.handle < 0) throw new Error('this page holds too many participants');
  }

  // MARK: Inputs

  /// Every input goes through here: the socket's unsent bytes first (the core drops a frame past
  /// its bound, as the agent's client does), then the call, then its outputs carried.
  enter(call) {
    this.core.x.coplay_socket_backlog(this.handle, this.socket?.bufferedAmount ?? 0);
    this.carry(call(this.core.x, this.handle));
  }
  /// Shares `url` with the group now, or adds it to the queue's end (`queue`): the page's forms.
  /// The URL goes as given (spaces and '=' are its own); a refusal comes back as a command-error
  /// event, as a line typed wrong does on an agent.
  share(url, { queue = false } = {}) {
    const bytes = enc.encode(url);
    this.enter((x, h) => this.core.withBytes(bytes, p => x.coplay_share(h, p, bytes.length, queue ? 1 : 0, monoNanos(), wallNanos())));
  }
  /// A message to everyone (the page's chat): the group's `msg`.
  message(text) {
    const bytes = enc.encode(text);
    this.enter((x, h) => this.core.withBytes(bytes, p => x.coplay_message(h, p, bytes.length, monoNanos(), wallNanos())));
  }
  /// A command line, as on an agent's standard input: only the test module has a console
  /// (Tools/wasm-core's coplay-fuzz.wasm); the page's module has none.
  console(line) {
    if (!this.core.x.coplay_console) throw new Error('this module has no console (the test module has)');
    const bytes = enc.encode(line);
    this.enter((x, h) => this.core.withBytes(bytes, p => x.coplay_console(h, p, bytes.length, monoNanos(), wallNanos())));
  }
  tick() { this.enter((x, h) => x.coplay_tick(h, monoNanos(), wallNanos())); }
  /// The wake timer: a timer set while the event loop was busy counts from the loop's older
  /// reading of the clock, and fires early by as much. Early, it is set again for the rest
  /// (among a thousand participants in one thread, half the ticks were early ones that found
  /// nothing due and came back at once).
  wake() {
    if (this.closed) return;
    const early = this.wakeAt === undefined ? 0 : Number(this.wakeAt - monoNanos()) / 1e6;
    if (early > 0) { this.wakeTimer = setTimeout(() => this.wake(), early); return; }
    this.wakeAt = undefined;
    this.tick();
  }
  /// What the player says: `kind` one of reportKinds' names; a loadFailed's `problem` names the
  /// kind of failure (PROTOCOL.md, PlaybackProblem). Returns false when the core refused a value
  /// as out of range.
  report(kind, { position = 0, rate = 0, at = 0n, text = '', problem = '' } = {}) {
    const bytes = enc.encode(kind === 'loadFailed' && problem ? `${problem}\n${text}` : text);
    let refused = false;
    this.enter((x, h) => {
      const length = this.core.withBytes(bytes, p => x.coplay_player_report(h, reportKinds[kind],
        position, rate, BigInt(at), p, bytes.length, monoNanos(), wallNanos()));
      refused = length < 0;
      return Math.max(length, 0);
    });
    return !refused;
  }
  /// The player follows through the core from now on (PlayerFollower): `onPlayer` gets actions
  /// (load, seek, pause, play, rate, read, reload, unload) instead of commands, and the player
  /// says what it did with `observe`. `steering`: 'rate' (an engine known to steer), 'skip'
  /// (skip-only), or 'check' (by rate until found not to follow it); `deadBand` is the band of
  /// rates around 1 the engine plays as 1; `readsInSteps`: the element's position readings move
  /// in steps (Firefox's currentTime), each up to a step old; `standsAfterStart`: its clock may
  /// stand still just after a start (Chromium's, while its audio output starts); `startLateness`:
  /// how late (seconds) its clock starts after a seek, before the core has learnt it.
  follow({ steering = 'check', deadBand = 0, readsInSteps = false, standsAfterStart = false, startLateness = 0 } = {}) {
    const mode = { skip: 0, rate: 1, check: 2 }[steering];
    const code = mode === undefined ? undefined : mode | (readsInSteps ? 4 : 0) | (standsAfterStart ? 8 : 0);
    if (code === undefined || this.core.x.coplay_follow(this.handle, code, deadBand, startLateness) < 0) throw new Error('the core refused the player\'s capabilities');
  }
  /// What the following player did: `kind` one of observationKinds' names; a position is read at
  /// wall instant `at` (ns). Returns false when the core refused a value as out of range.
  observe(kind, { position = 0, at = 0n } = {}) {
    let refused = false;
    this.enter((x, h) => {
      const length = x.coplay_player_observe(h, observationKinds[kind] ?? 0, position, BigInt(at), monoNanos(), wallNanos());
      refused = length < 0;
      return Math.max(length, 0);
    });
    return !refused;
  }
  view() {
    const [record] = this.core.records(this.core.x.coplay_view(this.handle, monoNanos(), wallNanos()));
    return record ? JSON.parse(dec.decode(record.data)) : null;
  }
  /// The relay's connection as the core counts it: connected, server, servers known,
  /// reconnections, frames published, received and dropped.
  relayState() {
    const [record] = this.core.records(this.core.x.coplay_relay_state(this.handle));
    return record ? JSON.parse(dec.decode(record.data)) : null;
  }
  get published() { return this.relayState()?.published ?? 0; }
  get received() { return this.relayState()?.received ?? 0; }
  get peerCount() { return this.core.x.coplay_peer_count(this.handle); }

  // MARK: Outputs

  carry(length) {
    // Each record is taken out where the core wrote it, as what it says (a string, an object, an
    // instant), before any is handled: a handler may call into the core, which writes over them.
    // Only bytes for the socket are copied (a send may keep them). Copied each, a pause's three
    // records were three ArrayBuffers for every tab, a share of what it cost a crowd's thread.
    const x = this.core.x, memory = x.memory.buffer, base = x.coplay_output();
    const view = new DataView(memory, base, length), taken = [];
    for (let i = 0; i + 5 <= length;) {
      const kind = view.getUint8(i), n = view.getUint32(i + 1, true), at = i + 5;
      const data = new Uint8Array(memory, base + at, Math.min(n, length - at));
      i = at + n;
      switch (kind) {
        case 4: case 14: taken.push(kind, JSON.parse(dec.decode(data))); break;
        case 5: case 11: taken.push(kind, dec.decode(data)); break;
        case 6: taken.push(kind, n === 8 && at + 8 <= length ? view.getBigInt64(at, true) : undefined); break;
        case 7: case 13: taken.push(kind, null); break;
        case 9: taken.push(kind, playerCommand(data)); break;
        case 15: taken.push(kind, playerAction(data)); break;
        case 12: taken.push(kind, data.slice()); break;
      }
    }
    for (let i = 0; i < taken.length; i += 2) {
      const value = taken[i + 1];
      switch (taken[i]) {
        case 4: this.on.event(value); break;
        case 5: this.on.diagnostic(value); break;
        case 6: {
          // The same instant as the timer already set: kept (the core names its next wake after
          // every input, and among a thousand participants in one thread resetting the timer
          // each time was a share of every command's cost).
          if (value === undefined || value === this.wakeAt || this.closed) break;
          clearTimeout(this.wakeTimer);
          this.wakeAt = value;
          this.wakeTimer = setTimeout(() => this.wake(), Math.max(0, Number(value - monoNanos()) / 1e6));
          break;
        }
        case 7: this.closed = true; clearTimeout(this.wakeTimer); this.on.exit(); break;
        case 9: case 15: this.on.player(value); break;
        case 11: this.open(value); break;
        case 12: try { this.socket?.send(value); } catch { /* closing: the core hears of it */ } break;
        case 13: this.drop(); break;
        case 14: {
          // A refusal of the credentials is said each time (the page says the link is out of date),
          // and so is the core's word that no server was reached for a while.
          if (value.connected !== this.connected || value.refused || value.unreachable) { this.connected = value.connected; this.on.connection(value.connected, value); }
          break;
        }
      }
    }
  }

  // MARK: The relay's WebSocket: open, bytes both ways, closed

  /// Joins: the core connects to the first relay (then to the others, and to what the cluster
  /// announces, as it decides).
  connect() {
    if (this.closed || this.relaying) return;
    this.relaying = true;
    const urls = enc.encode(this.relays.join('\n'));
    this.enter((x, h) => {
      const length = this.core.withBytes(urls, p => x.coplay_relay_connect(h, p, urls.length, this.relaySeed, monoNanos(), wallNanos()));
      if (length < 0) throw new Error(`the core refused the relay addresses (${length})`);
      return length;
    });
  }
  open(url) {
    this.drop();
    if (this.opens++ > 0) this.reconnects++;
    let socket;
    try { socket = new this.WebSocketImpl(url); } catch (e) {
      const why = enc.encode(`cannot open ${url}: ${e.message}`);
      return queueMicrotask(() => this.enter((x, h) => this.core.withBytes(why, p => x.coplay_socket_closed(h, p, why.length, monoNanos(), wallNanos()))));
    }
    this.socket = socket;
    socket.binaryType = 'arraybuffer';
    socket.onopen = () => { if (this.socket === socket) this.enter((x, h) => x.coplay_socket_opened(h, monoNanos(), wallNanos())); };
    socket.onmessage = (m) => {
      if (this.socket !== socket) return;
      // A browser's message is an ArrayBuffer; a view (the crowd's lean socket) is read as it is.
      const bytes = typeof m.data === 'string' ? enc.encode(m.data) : ArrayBuffer.isView(m.data) ? m.data : new Uint8Array(m.data);
      this.enter((x, h) => this.core.withBytes(bytes, p => x.coplay_socket_bytes(h, p, bytes.length, monoNanos(), wallNanos())));
    };
    socket.onclose = (e) => {
      if (this.socket !== socket) return;
      this.socket = null;
      const why = enc.encode(e?.code ? `the connection closed (${e.code})` : 'the connection closed');
      this.enter((x, h) => this.core.withBytes(why, p => x.coplay_socket_closed(h, p, why.length, monoNanos(), wallNanos())));
    };
    socket.onerror = () => {};
  }
  drop() {
    const socket = this.socket;
    this.socket = null;
    try { socket?.close(); } catch { /* already closed */ }
  }
  /// The page's path changed under its socket (restored from the back-forward cache, resumed
  /// after a freeze, back online): the core makes the connection again at once.
  reconnectNow() {
    if (this.closed) return;
    this.enter((x, h) => x.coplay_path_changed(h, monoNanos(), wallNanos()));
  }
  close() {
    this.closed = true;
    clearTimeout(this.wakeTimer);
    this.drop();
  }
  /// Leaves the group as the agent does on quit: the core says goodbye, then exits.
  leave() { this.enter((x, h) => x.coplay_quit(h, monoNanos(), wallNanos())); }
}

export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let i = 0;
  for (const p of parts) { out.set(p, i); i += p.length; }
  return out;
}

/// The key from an invitation or a key file: 64 hex digits or more (32 bytes or more).
export function parseKey(hex) {
  const clean = (hex || '').trim();
  if (!/^([0-9a-fA-F]{2}){32,256}$/.test(clean)) throw new Error('the group key must be 64 hex digits or more');
  return Uint8Array.from(clean.match(/../g).map(h => parseInt(h, 16)));
}

/// An invitation link's fragment: relay (one or more: the servers of a cluster), session and key
/// (a fragment is never sent to a server).
export function parseInvitation(href) {
  const u = new URL(href);
  const fields = new URLSearchParams(u.hash.replace(/^#/, ''));
  const relays = fields.getAll('relay').filter(Boolean), session = fields.get('session'), key = fields.get('key');
  if (!relays.length) throw new Error('the invitation names no relay (relay=ws://…)');
  if (!session) throw new Error('the invitation names no session');
  if (!key) throw new Error('the invitation carries no group key: ask for a new link (coplay invite)');
  relays.forEach(relayAddress);
  return { relay: relays.length === 1 ? relays[0] : relays, session, key: parseKey(key), viewer: fields.get('audience') === '1' };
}
