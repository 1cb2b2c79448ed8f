// A browser tab's shell without the page: the core in WebAssembly (coplay.wasm) joined to a
// group through nats-server's WebSocket listener, as the page will be. It only carries out the
// core's outputs: the NATS text protocol over a WebSocket (CONNECT, SUB for the subjects the core
// names, PUB for the frames it seals, MSG back into it), the one timer it asks for, the clocks
// and randomness. Prints each event, and a summary as the last line (JSON).
//
//   node --experimental-websocket Tools/web/tab.mjs coplay.wasm ws://127.0.0.1:PORT TOKEN \
//        KEYFILE SESSION NAME SECONDS [COMMAND AT-SECONDS]...
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';

const [wasmPath, url, token, keyFile, session, name, seconds, ...script] = process.argv.slice(2);
let memory;
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {
  env: { coplay_host_random: (ptr, n) => webcrypto.getRandomValues(new Uint8Array(memory.buffer, ptr, n)) },
});
const x = instance.exports;
memory = x.memory;
const enc = new TextEncoder(), dec = new TextDecoder();

// The clocks: monotonic from performance.now(), wall from the time origin plus it (sub-ms).
const monoNanos = () => BigInt(Math.round(performance.now() * 1e6));
const wallNanos = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
function put(data) { const p = x.coplay_alloc(data.length); new Uint8Array(memory.buffer, p, data.length).set(data); return p; }
function records(length) {
  const out = []; const base = x.coplay_output(); const view = new DataView(memory.buffer, base, length);
  for (let i = 0; i < length;) {
    const kind = view.getUint8(i), n = view.getUint32(i + 1, true);
    out.push({ kind, data: new Uint8Array(memory.buffer, base + i + 5, n).slice() }); i += 5 + n;
  }
  return out;
}

// The key file: hex lines, the current key first (comments and blank lines skipped).
const keyHex = readFileSync(keyFile, 'utf8').split('\n').map(l => l.trim()).find(l => l && !l.startsWith('#'));
const key = Uint8Array.from(keyHex.match(/../g).map(h => parseInt(h, 16)));
const id = webcrypto.getRandomValues(new BigUint64Array(1))[0], seed = webcrypto.getRandomValues(new BigUint64Array(1))[0];
const nameBytes = enc.encode(name), sessionBytes = enc.encode(session), entropy = webcrypto.getRandomValues(new Uint8Array(32));
const h = x.coplay_create_relayed(id, seed, put(nameBytes), nameBytes.length, put(sessionBytes), sessionBytes.length,
  put(key), key.length, put(entropy), monoNanos(), wallNanos());
if (h < 0) { console.error('tab: the key file holds no key of 32 bytes or more'); process.exit(2); }
const subjects = records(x.coplay_relay_subjects(h)).map(r => dec.decode(r.data));

const events = [];
let socket, wakeTimer, published = 0, received = 0, connected = false;
function carry(length) {
  for (const r of records(length)) {
    switch (r.kind) {
      case 3: {
        const n = r.data[0] | (r.data[1] << 8);
        const subject = dec.decode(r.data.slice(2, 2 + n)), frame = r.data.slice(2 + n);
        if (!connected) break;  // dropped while not connected: the protocol's repair makes up for it
        socket.send(concat(enc.encode(`PUB ${subject} ${frame.length}\r\n`), frame, enc.encode('\r\n')));
        published++;
        break;
      }
      case 4: { const line = dec.decode(r.data); events.push(line); console.log(line); break; }
      case 5: console.error('tab: ' + dec.decode(r.data)); break;
      case 6: {
        const at = new DataView(r.data.buffer).getBigInt64(0, true);
        clearTimeout(wakeTimer);
        wakeTimer = setTimeout(tick, Math.max(0, Number(at - monoNanos()) / 1e6));
        break;
      }
      case 7: finish(); break;
    }
  }
}
function tick() { carry(x.coplay_tick(h, monoNanos(), wallNanos())); }
function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0)); let i = 0;
  for (const p of parts) { out.set(p, i); i += p.length; }
  return out;
}

// The NATS text protocol over the WebSocket: lines ending CRLF; a MSG's payload follows its line.
// Bounded as the agent's own client is: a protocol line of at most 16 KiB, a message of at most
// 64 KiB (the core refuses any frame longer than 1,231 bytes anyway); past them the server is
// broken or hostile and the connection is closed.
const lineBytesMax = 16384, messageBytesMax = 65536;
let pending = new Uint8Array(0);
function hostile(why) { console.error('tab: ' + why + ': closing the connection'); socket.close(); pending = new Uint8Array(0); }
function onBytes(bytes) {
  pending = concat(pending, bytes);
  for (;;) {
    const end = pending.findIndex((b, i) => b === 13 && pending[i + 1] === 10);
    if (end < 0) { if (pending.length > lineBytesMax) hostile('a line over 16 KiB'); return; }
    if (end > lineBytesMax) return hostile('a line over 16 KiB');
    const line = dec.decode(pending.slice(0, end));
    if (line.startsWith('MSG ')) {
      const words = line.split(' '), subject = words[1], size = words[words.length - 1];
      const n = Number(size);
      if (!/^[0-9]+$/.test(size) || n > messageBytesMax) return hostile(`a message of ${size} bytes`);
      if (pending.length < end + 2 + n + 2) return;  // the payload is still on its way
      const frame = pending.slice(end + 2, end + 2 + n);
      pending = pending.slice(end + 2 + n + 2);
      received++;
      const s = enc.encode(subject);
      carry(x.coplay_relay_frame(h, put(s), s.length, put(frame), frame.length, monoNanos(), wallNanos()));
      continue;
    }
    pending = pending.slice(end + 2);
    if (line.startsWith('INFO ')) {
      const connect = { verbose: false, pedantic: false, auth_token: token, name: 'coplay-tab', lang: 'js', protocol: 1 };
      let hello = `CONNECT ${JSON.stringify(connect)}\r\n`;
      subjects.forEach((subject, i) => { hello += `SUB ${subject} ${i + 1}\r\n`; });
      socket.send(enc.encode(hello + 'PING\r\n'));
    } else if (line === 'PONG' && !connected) {
      connected = true;
      carry(x.coplay_start(h, monoNanos(), wallNanos()));
    } else if (line === 'PING') {
      socket.send(enc.encode('PONG\r\n'));
    } else if (line.startsWith('-ERR')) {
      console.error('tab: the server said ' + line);
    }
  }
}

socket = new WebSocket(url);
socket.binaryType = 'arraybuffer';
socket.onmessage = (m) => onBytes(typeof m.data === 'string' ? enc.encode(m.data) : new Uint8Array(m.data));
socket.onerror = () => { console.error(`tab: cannot reach ${url}`); process.exit(1); };

// Commands typed at given seconds, as a person at the page would.
for (let i = 0; i + 1 < script.length; i += 2) {
  const line = enc.encode(script[i]);
  setTimeout(() => carry(x.coplay_console(h, put(line), line.length, monoNanos(), wallNanos())), Number(script[i + 1]) * 1000);
}
function finish() {
  console.log(JSON.stringify({ name, peers: x.coplay_peer_count(h), published, received, events }));
  socket.close();
  process.exit(0);
}
setTimeout(() => {
  const line = enc.encode('quit');
  carry(x.coplay_console(h, put(line), line.length, monoNanos(), wallNanos()));
  setTimeout(finish, 500);
}, Number(seconds) * 1000);
