// A WebSocket client (RFC 6455) over node:net, for the crowd's tabs: the browser's WebSocket
// interface as participant.mjs uses it (onopen, onmessage, onclose, onerror, send, close,
// bufferedAmount, binaryType), and nothing more. The crowd runs a thousand tabs on two cores;
// each browser runs its WebSocket in native code of its own, but Node's (undici's, in JavaScript)
// cost each message an event object, a Blob check and an ArrayBuffer copy, and in a profile of a
// crowd it was most of the JavaScript a pause cost (Tools/web/crowd.mjs says how to choose it).
// The bytes on the wire are the same: the HTTP upgrade, masked frames out, unmasked in.
import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';

const guid = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/// A message larger than this closes the socket (nats-server's max_payload is 4 KB in the crowd;
/// its INFO and a MSG's header are less).
const messageMax = 1 << 20;
const empty = Buffer.alloc(0);
/// Where a thread's sockets read (each read handled before the next): a chunk is at most this.
const readBuffer = Buffer.alloc(65536);

export class LeanWebSocket {
  constructor(url) {
    const u = new URL(url);
    if (u.protocol !== 'ws:') throw new Error(`only ws:// here, not ${u.protocol}`);
    this.url = url;
    this.binaryType = 'arraybuffer';
    this.onopen = this.onmessage = this.onclose = this.onerror = null;
    this.open = false;
    this.ended = false;
    this.input = Buffer.alloc(0);
    this.parts = [];
    this.partsLength = 0;
    this.key = randomBytes(16).toString('base64');
    this.accept = createHash('sha1').update(this.key + guid).digest('base64');
    // Read through `onread` into the thread's one buffer, not as a stream's 'data' events: a
    // Buffer and a stream's turn for every read, for every tab, were 8% of the crowd's CPU
    // (alternating runs of the 1,000). What is kept past the call (a partial frame, a fragment) is
    // copied out of it; a message's bytes are the handler's for the call only, as participant.mjs
    // takes them.
    const socket = (this.socket = connect({ host: u.hostname, port: Number(u.port) || 80,
      onread: { buffer: readBuffer, callback: (n, b) => { this.received(b.subarray(0, n)); } } }));
    socket.setNoDelay(true);
    socket.on('connect', () =>
      socket.write(`GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\n`
        + `Connection: Upgrade\r\nSec-WebSocket-Key: ${this.key}\r\nSec-WebSocket-Version: 13\r\n\r\n`));
    socket.on('error', () => this.onerror?.({}));
    socket.on('close', () => this.finish(this.open ? 1006 : 1002));
  }

  get bufferedAmount() { return this.socket.writableLength; }

  send(data) {
    if (!this.open) throw new Error('not open');
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    this.frame(0x2, bytes);
  }

  close() {
    if (this.ended) return;
    if (this.open) this.frame(0x8, new Uint8Array(0));
    this.socket.end();
    this.finish(1000);
  }

  // A masked frame (a client's frames are masked, each with a key of its own).
  frame(opcode, payload) {
    const n = payload.length, head = n < 126 ? 2 : n < 65536 ? 4 : 10;
    const out = Buffer.allocUnsafe(head + 4 + n);
    out[0] = 0x80 | opcode;
    if (n < 126) out[1] = 0x80 | n;
    else if (n < 65536) { out[1] = 0x80 | 126; out.writeUInt16BE(n, 2); }
    else { out[1] = 0x80 | 127; out.writeBigUInt64BE(BigInt(n), 2); }
    const mask = randomBytes(4);
    mask.copy(out, head);
    for (let i = 0; i < n; i++) out[head + 4 + i] = payload[i] ^ mask[i & 3];
    this.socket.write(out);
  }

  received(chunk) {
    this.input = this.input.length ? Buffer.concat([this.input, chunk]) : chunk;
    if (!this.open) {
      const end = this.input.indexOf('\r\n\r\n');
      // Not whole yet: kept, copied out of the read buffer (the next read, any socket's, reuses it).
      if (end < 0) { if (this.input.length > 8192) this.fail(); else this.input = Buffer.from(this.input); return; }
      const head = this.input.subarray(0, end).toString('latin1');
      this.input = this.input.subarray(end + 4);
      const accept = /\r\nsec-websocket-accept:\s*(\S+)/i.exec(head)?.[1];
      if (!/^HTTP\/1\.1 101/.test(head) || accept !== this.accept) return this.fail();
      this.open = true;
      this.onopen?.({});
    }
    let at = 0;
    const b = this.input;
    while (!this.ended && b.length - at >= 2) {
      const fin = b[at] & 0x80, opcode = b[at] & 0x0f, masked = b[at + 1] & 0x80;
      let n = b[at + 1] & 0x7f, head = 2;
      if (n === 126) { if (b.length - at < 4) break; n = b.readUInt16BE(at + 2); head = 4; }
      else if (n === 127) { if (b.length - at < 10) break; n = Number(b.readBigUInt64BE(at + 2)); head = 10; }
      if (masked || n > messageMax) return this.fail();
      if (b.length - at < head + n) break;
      const payload = b.subarray(at + head, at + head + n);
      at += head + n;
      if (opcode === 0x8) { this.close(); return; }
      if (opcode === 0x9) { this.frame(0xa, payload); continue; }
      if (opcode === 0xa) continue;
      if (opcode !== 0x0 && opcode !== 0x1 && opcode !== 0x2) return this.fail();
      // A fragmented message is held only up to messageMax in all, not for as long as it goes on.
      if (this.partsLength + payload.length > messageMax) return this.fail();
      if (!fin) { this.parts.push(Buffer.from(payload)); this.partsLength += payload.length; continue; }
      const whole = this.parts.length ? Buffer.concat([...this.parts, payload]) : payload;
      this.parts = [];
      this.partsLength = 0;
      this.onmessage?.({ data: whole });
    }
    this.input = at === b.length ? empty : Buffer.from(b.subarray(at));
  }

  fail() {
    this.socket.destroy();
    this.finish(1002);
  }

  finish(code) {
    if (this.ended) return;
    this.ended = true;
    this.open = false;
    this.onclose?.({ code });
  }
}
