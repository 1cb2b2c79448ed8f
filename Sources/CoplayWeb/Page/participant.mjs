// A participant's shell: the core in WebAssembly (coplay.wasm) joined to its group through
// nats-server's WebSocket listener. The same module runs in the page's Worker, in Node (the
// tests' tabs and the crowd) and anywhere else with WebSocket, performance and crypto. It only
// carries out the core's outputs: the NATS text protocol (CONNECT, SUB for the subjects the
// core names, PUB for the frames it seals, MSG back into it), the one timer the core asks for,
// the clocks and randomness. It decides nothing about the protocol.
//
//   const core = await Core.load(bytes);
//   const p = new Participant(core, { relay: 'ws://TOKEN@HOST:PORT', session, key, name,
//     onEvent, onPlayer, onDiagnostic, onConnection, onExit });
//   p.connect(); p.console('pause'); p.report('ready', { position: 12.5 });

const enc = new TextEncoder(), dec = new TextDecoder();

// The clocks: monotonic nanoseconds from performance.now(); wall nanoseconds from the time
// origin plus it (a Worker's origin differs from its page's; the sum is the same clock).
export const monoNanos = () => BigInt(Math.round(performance.now() * 1e6));
export const wallNanos = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));

// Bounds on what the server may send, as the agent's own NATS client has: a protocol line of
// at most 16 KiB, a message of at most 64 KiB (the core refuses any frame over 1,231 bytes
// unopened anyway). Past them the server is broken or hostile: the connection is closed and
// made again.
export const lineBytesMax = 16384, messageBytesMax = 65536;
// Reconnection: without a limit, 0.25 s after the first loss, doubling to at most 5 s.
const reconnectFirstMs = 250, reconnectMaxMs = 5000;

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

/// A player command record (kind 9) as an object; see PlayerRecord in Exports.swift.
export function playerCommand(r) {
  const v = new DataView(r.buffer, r.byteOffset, r.byteLength);
  const f = (at) => v.getFloat64(at, true), i64 = (at) => v.getBigInt64(at, true);
  switch (r[0]) {
    case 1: {
      const n = v.getUint16(17, true);
      return { op: 'load', position: f(1), duration: Number.isNaN(f(9)) ? null : f(9),
        item: dec.decode(r.slice(19, 19 + n)), url: dec.decode(r.slice(19 + n)) };
    }
    case 2: return { op: 'prepare', position: f(1) };
    case 3: return { op: 'play', rate: f(1), position: f(9), at: i64(17) };
    case 4: return { op: 'rate', rate: f(1), at: i64(9) };
    case 5: return { op: 'pause', position: f(1) };
    case 6: return { op: 'unload' };
    case 7: {
      const n = v.getUint16(9, true);
      return { op: 'interstitial', duration: f(1), id: dec.decode(r.slice(11, 11 + n)), url: dec.decode(r.slice(11 + n)) };
    }
    case 8: return { op: 'interstitial-end' };
    default: return { op: 'none' };
  }
}

/// What a player reports (coplay_player_report's kinds).
export const reportKinds = { ready: 1, stalled: 2, stallEnded: 3, ended: 4, sample: 5, play: 6, pause: 7, seek: 8,
  next: 9, previous: 10, failed: 11, loadFailed: 12, interstitialFailed: 13 };

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
  constructor(core, { relay, session, key, name, seed, onEvent, onPlayer, onDiagnostic, onConnection, onExit, WebSocketImpl }) {
    this.core = core;
    const { url, token } = relayAddress(relay);
    this.url = url; this.token = token;
    this.on = { event: onEvent || (() => {}), player: onPlayer || (() => {}), diagnostic: onDiagnostic || (() => {}),
      connection: onConnection || (() => {}), exit: onExit || (() => {}) };
    this.WebSocketImpl = WebSocketImpl || globalThis.WebSocket;
    this.published = 0; this.received = 0; this.refusedLines = 0; this.reconnects = 0;
    this.connected = false; this.started = false; this.closed = false; this.pending = new Uint8Array(0);
    const random = crypto.getRandomValues(new BigUint64Array(2));
    const entropy = crypto.getRandomValues(new Uint8Array(32));
    const x = core.x, nameBytes = enc.encode(name), sessionBytes = enc.encode(session);
    const np = core.put(nameBytes), sp = core.put(sessionBytes), kp = core.put(key), ep = core.put(entropy);
    this.handle = x.coplay_create_relayed(random[0], seed ?? random[1], np, nameBytes.length, sp, sessionBytes.length,
      kp, key.length, ep, monoNanos(), wallNanos());
    for (const p of [np, sp, kp, ep]) x.coplay_dealloc(p);
    if (this.handle === -1) throw new Error('the group key must be 32 bytes or more');
    if (this.handle === -2) throw new Error('the name must be at most 64 bytes and the session at most 64 bytes (UTF-8)');
    if (this.handle < 0) throw new Error('this page holds too many participants');
    this.subjects = core.records(x.coplay_relay_subjects(this.handle)).map(r => dec.decode(r.data));
  }

  // MARK: Inputs

  console(line) {
    const bytes = enc.encode(line);
    this.carry(this.core.withBytes(bytes, p => this.core.x.coplay_console(this.handle, p, bytes.length, monoNanos(), wallNanos())));
  }
  tick() { this.carry(this.core.x.coplay_tick(this.handle, monoNanos(), wallNanos())); }
  /// What the player says: `kind` one of reportKinds' names; a loadFailed's `problem` names the
  /// kind of failure (PROTOCOL.md, PlaybackProblem). Returns false when the core refused a value
  /// as out of range.
  report(kind, { position = 0, rate = 0, at = 0n, text = '', problem = '' } = {}) {
    const bytes = enc.encode(kind === 'loadFailed' && problem ? `${problem}\n${text}` : text);
    const length = this.core.withBytes(bytes, p => this.core.x.coplay_player_report(this.handle, reportKinds[kind],
      position, rate, BigInt(at), p, bytes.length, monoNanos(), wallNanos()));
    if (length < 0) return false;
    this.carry(length);
    return true;
  }
  view() {
    const [record] = this.core.records(this.core.x.coplay_view(this.handle, monoNanos(), wallNanos()));
    return record ? JSON.parse(dec.decode(record.data)) : null;
  }
  get peerCount() { return this.core.x.coplay_peer_count(this.handle); }

  // MARK: Outputs

  carry(length) {
    for (const r of this.core.records(length)) {
      switch (r.kind) {
        case 3: {
          const n = r.data[0] | (r.data[1] << 8);
          const subject = dec.decode(r.data.slice(2, 2 + n)), frame = r.data.slice(2 + n);
          // While not connected a frame is dropped: the protocol's repair makes up for it.
          if (!this.connected) break;
          this.socket.send(concat(enc.encode(`PUB ${subject} ${frame.length}\r\n`), frame, enc.encode('\r\n')));
          this.published++;
          break;
        }
        case 4: this.on.event(JSON.parse(dec.decode(r.data))); break;
        case 5: this.on.diagnostic(dec.decode(r.data)); break;
        case 6: {
          const at = new DataView(r.data.buffer).getBigInt64(0, true);
          clearTimeout(this.wakeTimer);
          if (!this.closed) this.wakeTimer = setTimeout(() => this.tick(), Math.max(0, Number(at - monoNanos()) / 1e6));
          break;
        }
        case 7: this.close(); this.on.exit(); break;
        case 9: this.on.player(playerCommand(r.data)); break;
      }
    }
  }

  // MARK: The connection

  connect() {
    if (this.closed) return;
    let socket;
    try { socket = new this.WebSocketImpl(this.url); } catch (e) { this.on.diagnostic(`cannot open ${this.url}: ${e.message}`); return this.retry(); }
    this.socket = socket;
    socket.binaryType = 'arraybuffer';
    socket.onmessage = (m) => { if (this.socket === socket) this.onBytes(typeof m.data === 'string' ? enc.encode(m.data) : new Uint8Array(m.data)); };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      const was = this.connected;
      this.connected = false; this.pending = new Uint8Array(0);
      if (was) this.on.connection(false);
      this.retry();
    };
    socket.onerror = () => {};
  }
  retry() {
    if (this.closed) return;
    this.backoff = Math.min(this.backoff ? this.backoff * 2 : reconnectFirstMs, reconnectMaxMs);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => { this.reconnects++; this.connect(); }, this.backoff);
  }
  /// Drops the connection and makes it again at once (a page restored from the back-forward
  /// cache, or resumed after a freeze, cannot trust a socket that slept).
  reconnectNow() {
    if (this.closed) return;
    const old = this.socket; this.socket = null; this.connected = false;
    try { old?.close(); } catch { /* already closed */ }
    this.backoff = 0; this.connect();
  }
  close() {
    this.closed = true;
    clearTimeout(this.wakeTimer); clearTimeout(this.retryTimer);
    try { this.socket?.close(); } catch { /* already closed */ }
  }
  /// Leaves the group as the agent does on quit: the core says goodbye, then exits.
  leave() { this.console('quit'); }

  hostile(why) {
    this.refusedLines++;
    this.on.diagnostic(`the relay sent ${why}: closing the connection`);
    this.pending = new Uint8Array(0);
    try { this.socket.close(); } catch { /* closing */ }
  }
  onBytes(bytes) {
    this.pending = this.pending.length ? concat(this.pending, bytes) : bytes;
    for (;;) {
      const pending = this.pending;
      let end = -1;
      for (let i = 0; i + 1 < pending.length && i <= lineBytesMax; i++) if (pending[i] === 13 && pending[i + 1] === 10) { end = i; break; }
      if (end < 0) { if (pending.length > lineBytesMax) this.hostile('a line over 16 KiB'); return; }
      const line = dec.decode(pending.subarray(0, end));
      if (line.startsWith('MSG ')) {
        // MSG <subject> <sid> [reply-to] <#bytes>
        const words = line.split(' '), subject = words[1], size = words[words.length - 1];
        if (words.length < 4 || words.length > 5 || !/^[0-9]{1,9}$/.test(size) || Number(size) > messageBytesMax) {
          return this.hostile(`a message line "${line.slice(0, 80)}"`);
        }
        const n = Number(size);
        if (pending.length < end + 2 + n + 2) return;  // the payload is still on its way
        const frame = pending.slice(end + 2, end + 2 + n);
        this.pending = pending.subarray(end + 2 + n + 2);
        this.received++;
        const s = enc.encode(subject), x = this.core.x;
        const sp = this.core.put(s), fp = this.core.put(frame);
        const length = x.coplay_relay_frame(this.handle, sp, s.length, fp, frame.length, monoNanos(), wallNanos());
        x.coplay_dealloc(sp); x.coplay_dealloc(fp);
        this.carry(length);
        continue;
      }
      this.pending = pending.subarray(end + 2);
      if (line.startsWith('INFO ')) {
        const connect = { verbose: false, pedantic: false, name: 'coplay-web', lang: 'js', protocol: 1 };
        if (this.token) connect.auth_token = this.token;
        let hello = `CONNECT ${JSON.stringify(connect)}\r\n`;
        this.subjects.forEach((subject, i) => { hello += `SUB ${subject} ${i + 1}\r\n`; });
        this.socket.send(enc.encode(hello + 'PING\r\n'));
      } else if (line === 'PONG' && !this.connected) {
        this.connected = true; this.backoff = 0;
        this.on.connection(true);
        if (!this.started) { this.started = true; this.carry(this.core.x.coplay_start(this.handle, monoNanos(), wallNanos())); }
        else this.tick();
      } else if (line === 'PING') {
        this.socket.send(enc.encode('PONG\r\n'));
      } else if (line.startsWith('-ERR')) {
        this.on.diagnostic('the relay said ' + line);
      }
    }
  }
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

/// An invitation link's fragment: relay, session and key (a fragment is never sent to a server).
export function parseInvitation(href) {
  const u = new URL(href);
  const fields = new URLSearchParams(u.hash.replace(/^#/, ''));
  const relay = fields.get('relay'), session = fields.get('session'), key = fields.get('key');
  if (!relay) throw new Error('the invitation names no relay (relay=ws://…)');
  if (!session) throw new Error('the invitation names no session');
  if (!key) throw new Error('the invitation carries no group key: ask for a new link (coplay invite)');
  relayAddress(relay);
  return { relay, session, key: parseKey(key) };
}
