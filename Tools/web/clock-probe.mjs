// How an engine's <video> reports where it is. A 30-frame clip with sound, served on loopback
// inside the namespace Tools/web/clock-probe makes, played after a click; then:
//   - currentTime read every few milliseconds for 200 ms: each time it moved, how long since the
//     last move and where it then stood against the page's clock (position less time, ms);
//   - 8 times: one reading, the highest of 60 ms of readings carried forward, a reading at the
//     next frame's callback, and that frame's media time at its display instant, each as
//     position less time (ms). Where they agree, one reading is as good as any; Firefox's single
//     reading lagged the others by 20-28 ms (2026-11-28), its frame-callback reading agreed with
//     the 60 ms envelope within 1-4 ms and varied by ±0.9 ms;
//   - the same page served cross-origin isolated (COOP same-origin, COEP require-corp) beside it
//     served plainly: whether the engine isolates it, the page clock's smallest step, and how
//     much the frame-callback reading varies (does isolation give a finer clock, and does it
//     matter to what the follower reads).
//
//   node Tools/web/clock-probe.mjs COPLAY WORKDIR ENGINE
import { execFileSync } from 'node:child_process';
import { spawnOwned } from './owned.mjs';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { launch } from './drivers.mjs';

const [coplay, work, engine] = process.argv.slice(2);
execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
  '-t', '30', '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '300k', '-c:a', 'libopus', `${work}/probe.webm`]);
writeFileSync(`${work}/index.html`, '<video id=v src="probe.webm"></video><button id=b onclick="document.getElementById(\'v\').play()">play</button>');
const server = spawnOwned(coplay, ['web', '--listen', '127.0.0.1:18182', '--root', work], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 500));
const browser = await launch(engine, { work });
try {
  const page = await browser.newPage('http://127.0.0.1:18182/');
  await page.click('#b');
  await new Promise((r) => setTimeout(r, 2000));
  const moves = await page.evaluate(`new Promise((done) => {
    const v = document.getElementById('v'), out = [], began = performance.now();
    let last = null, lastAt = null;
    const read = () => {
      const p = v.currentTime, t = performance.now();
      if (p !== last) { out.push({ sinceLastMove: lastAt === null ? null : +(t - lastAt).toFixed(1), positionLessTime: +(p * 1000 - t).toFixed(2) }); last = p; lastAt = t; }
      if (t - began < 200) setTimeout(read, 0); else done(out);
    };
    read();
  })`);
  console.log(`${engine}: currentTime moved ${moves.length - 1} times in 200 ms`);
  for (const m of moves) console.log(`  moved after ${m.sinceLastMove ?? '-'} ms, position less time ${m.positionLessTime} ms`);
  console.log('one reading | highest of 60 ms | at a frame\'s callback | the frame at its display (position less time, ms)');
  for (let k = 0; k < 8; k++) {
    const r = await page.evaluate(`new Promise((done) => {
      const v = document.getElementById('v'), readings = [], began = performance.now();
      const read = () => {
        readings.push([v.currentTime, performance.now()]);
        if (performance.now() - began < 60) { setTimeout(read, 1); return; }
        const [single, last] = readings[readings.length - 1];
        const highest = Math.max(...readings.map(([p, t]) => p + (last - t) / 1000 * v.playbackRate));
        v.requestVideoFrameCallback((now, m) => done([single * 1000 - last, highest * 1000 - last,
          v.currentTime * 1000 - performance.now(), m.mediaTime * 1000 - m.expectedDisplayTime].map((x) => x.toFixed(2))));
      };
      read();
    })`);
    console.log('  ' + r.join(' | '));
  }
  // Isolated or not: node serves the same two files, with and without the headers.
  const clip = readFileSync(`${work}/probe.webm`);
  const isolated = (request, response, headers) => {
    if (request.url.startsWith('/probe.webm')) {
      const [, from, to] = /bytes=(\d+)-(\d*)/.exec(request.headers.range || '') || [];
      const start = from ? +from : 0, end = to ? +to : clip.length - 1;
      response.writeHead(from ? 206 : 200, { ...headers, 'Content-Type': 'video/webm', 'Accept-Ranges': 'bytes', 'Content-Length': end - start + 1,
        ...(from ? { 'Content-Range': `bytes ${start}-${end}/${clip.length}` } : {}) });
      response.end(clip.subarray(start, end + 1));
    } else {
      response.writeHead(200, { ...headers, 'Content-Type': 'text/html' });
      response.end(readFileSync(`${work}/index.html`));
    }
  };
  const coi = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
  const plainServer = createServer((q, r) => isolated(q, r, {})).listen(18183, '127.0.0.1');
  const coiServer = createServer((q, r) => isolated(q, r, coi)).listen(18184, '127.0.0.1');
  console.log('served plainly | cross-origin isolated: crossOriginIsolated, the clock\'s smallest step (ms), the frame-callback reading\'s spread over 8 frames (ms, max less min)');
  const row = [];
  for (const port of [18183, 18184]) {
    const tab = await browser.newPage(`http://127.0.0.1:${port}/`);
    await tab.click('#b');
    await new Promise((r) => setTimeout(r, 1500));
    row.push(await tab.evaluate(`new Promise(async (done) => {
      let step = Infinity, last = performance.now();
      for (let i = 0; i < 200000; i++) { const t = performance.now(); if (t !== last) { step = Math.min(step, t - last); last = t; } }
      const v = document.getElementById('v'), at = [];
      for (let k = 0; k < 8; k++) at.push(await new Promise((r) => v.requestVideoFrameCallback(() => r(v.currentTime * 1000 - performance.now()))));
      done([self.crossOriginIsolated === true, +step.toFixed(4), +(Math.max(...at) - Math.min(...at)).toFixed(2)]);
    })`));
    await tab.close?.();
  }
  console.log(`  ${row.map((r) => r.join(', ')).join(' | ')}`);
  plainServer.close();
  coiServer.close();
} finally {
  browser.close();
  server.kill();
}
process.exit(0);
