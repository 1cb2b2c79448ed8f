// What the scripts that measure a party read with (party.mjs, homes.mjs): node's wall instant,
// polling until a test passes, quantiles, and a client of mpv's JSON IPC that stamps each reply
// with node's instant.
import net from 'node:net';

export const wallMs = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// The first truthy value of `test`, polled every `step` ms for up to `ms`; null if none came.
export async function until(test, ms, step = 10) {
  const end = wallMs() + ms;
  for (;;) { const value = await test(); if (value) return value; if (wallMs() > end) return null; await sleep(step); }
}

export function quantile(values, q) { const s = [...values].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN; }

/// mpv's IPC at `path` (waiting up to 10 s for it): `command(...)` resolves with the reply and
/// node's instants around it (`mid`: the middle of its round trip); null if it never answers.
export async function mpvClient(path) {
  const socket = await until(() => new Promise((resolve) => {
    const connection = net.connect(path, () => resolve(connection));
    connection.on('error', () => resolve(null));
  }), 10000, 100);
  if (!socket) return null;
  const waiting = new Map();
  let nextID = 1, partial = '';
  socket.on('data', (d) => {
    const at = wallMs();
    partial += d;
    const lines = partial.split('\n'); partial = lines.pop();
    for (const line of lines) { const m = JSON.parse(line); if (m.request_id && waiting.has(m.request_id)) { waiting.get(m.request_id)({ ...m, at }); waiting.delete(m.request_id); } }
  });
  return (...command) => {
    const id = nextID++, sent = wallMs();
    socket.write(JSON.stringify({ command, request_id: id }) + '\n');
    return new Promise((resolve) => waiting.set(id, (m) => resolve({ ...m, sent, mid: (sent + m.at) / 2 })));
  };
}

/// A tab's media clock read once, with the page's instant (evaluated in the page).
export const tabNow = `(() => { const v = document.getElementById("video"); return { p: v.currentTime, at: performance.timeOrigin + performance.now(), r: v.playbackRate, paused: v.paused }; })()`;

/// A tab's media clock read over 60 ms and carried to the last reading's instant: the mean of the
/// readings, or where the element's clock steps (Firefox's and WebKit's move a frame at a time)
/// the highest of them; `single` is the last reading alone.
export const freshPosition = `new Promise((done) => {
  const v = document.getElementById('video'), readings = [], began = performance.now();
  const read = () => {
    readings.push([v.currentTime, performance.now()]);
    if (performance.now() - began < 60) { setTimeout(read, 1); return; }
    const [, last] = readings[readings.length - 1];
    const carried = readings.map(([p, t]) => p + (last - t) / 1000 * v.playbackRate);
    const stepped = readings.filter(([p], i) => i > 0 && p === readings[i - 1][0]).length * 2 > readings.length;
    const p = stepped ? Math.max(...carried) : carried.reduce((a, b) => a + b, 0) / carried.length;
    done({ p, at: performance.timeOrigin + last, r: v.playbackRate, paused: v.paused, single: readings[readings.length - 1][0], stepped, top: Math.max(...carried) });
  };
  read();
})`;

/// The tab's media clock less mpv's audio-pts at one instant, ms (null while either is paused):
/// by one reading, or by `freshPosition`'s where the engine's clock steps (`fresh`).
export async function tabAgainstMpv(page, mpvCommand, fresh = false) {
  const tab = await page.evaluate(fresh ? freshPosition : tabNow);
  const m = await mpvCommand('get_property', 'audio-pts');
  return !tab.paused && typeof m.data === 'number' ? (tab.p + (m.mid - tab.at) / 1000 * tab.r - m.data) * 1000 : null;
}
