// How an engine's <video> reports where it is. A 30-frame clip with sound, served on loopback
// inside the namespace Tools/web/clock-probe makes, played after a click; then:
//   - currentTime read every few milliseconds for 200 ms: each time it moved, how long since the
//     last move and where it then stood against the page's clock (position less time, ms);
//   - 8 times: one reading, the highest of 60 ms of readings carried forward, a reading at the
//     next frame's callback, and that frame's media time at its display instant, each as
//     position less time (ms). Where they agree, one reading is as good as any; Firefox's single
//     reading lagged the others by 20-28 ms (2026-11-28), its frame-callback reading agreed with
//     the 60 ms envelope within 1-4 ms and varied by ±0.9 ms.
//
//   node Tools/web/clock-probe.mjs COPLAY WORKDIR ENGINE
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { launch } from './drivers.mjs';

const [coplay, work, engine] = process.argv.slice(2);
execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
  '-t', '30', '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '300k', '-c:a', 'libopus', `${work}/probe.webm`]);
writeFileSync(`${work}/index.html`, '<video id=v src="probe.webm"></video><button id=b onclick="document.getElementById(\'v\').play()">play</button>');
const server = spawn(coplay, ['web', '--listen', '127.0.0.1:18182', '--root', work], { stdio: 'ignore' });
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
} finally {
  browser.close();
  server.kill();
}
process.exit(0);
