// How Chromium's <video> takes playbackRate changes: for each step from one rate to another, the
// jump of currentTime right after the change (against where the old rate would have put it) and
// the slope over 2 s at rates near 1. Media and page served on loopback inside the namespace
// Tools/web/rate-probe makes. Prints one line per step.
//
//   node Tools/web/rate-probe.mjs COPLAY WORKDIR
import { execFileSync } from 'node:child_process';
import { spawnOwned } from './owned.mjs';
import { writeFileSync } from 'node:fs';
import { Browser } from './cdp.mjs';

const [coplay, work] = process.argv.slice(2);
execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
  '-t', '60', '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '300k', '-c:a', 'libopus', `${work}/probe.webm`]);
writeFileSync(`${work}/index.html`, '<video id=v src="probe.webm"></video>');
const server = spawnOwned(coplay, ['web', '--listen', '127.0.0.1:18181', '--root', work], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 500));
const browser = await Browser.launch(['--headless=new', '--no-sandbox', `--user-data-dir=${work}/profile`, '--mute-audio', '--autoplay-policy=no-user-gesture-required']);
try {
  const page = await browser.newPage('http://127.0.0.1:18181/');
  await page.evaluate('document.getElementById("v").play()');
  await new Promise((r) => setTimeout(r, 1500));
  console.log(await page.evaluate(`(async () => {
    const v = document.getElementById('v'), sleep = (ms) => new Promise((r) => setTimeout(r, ms)), out = [];
    let rate = 1;
    for (const next of [1.002, 1.0, 0.998, 1.0, 1.01, 1.002, 1.005, 0.998, 1.001, 0.999, 1.01, 1.0]) {
      v.playbackRate = next;
      const tc = performance.now(), pc = v.currentTime;
      await sleep(400);
      const jump = (v.currentTime - (pc + next * (performance.now() - tc) / 1000)) * 1000;
      out.push('step ' + rate + ' -> ' + next + ': currentTime jumps ' + jump.toFixed(1) + ' ms');
      rate = next;
    }
    for (const r of [1.0005, 1.001, 1.002, 1.005, 0.9995, 0.998]) {
      v.playbackRate = r; await sleep(300);
      const t0 = performance.now(), p0 = v.currentTime;
      await sleep(2000);
      out.push('rate ' + r + ': media advances at ' + ((v.currentTime - p0) / ((performance.now() - t0) / 1000)).toFixed(5));
    }
    return out.join('\\n');
  })()`));
} finally {
  browser.close();
  server.kill();
}
process.exit(0);
