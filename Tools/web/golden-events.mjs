// The page's side of the event schema's golden file (Tests/Vectors/events.jsonl, PROTOCOL.md, "Events"): the
// scripted session of Tests/CoplayCoreTests/EventGoldenTests.swift run inside coplay.wasm, the
// same instance, clock and inputs; every event record the module hands the page must equal the
// file's line, byte for byte. The native tests check the same file, and the agent's --json line
// is the same record with `atUnixNanos` added.
//
//   node Tools/web/golden-events.mjs coplay.wasm Tests/Vectors/events.jsonl
import { readFileSync } from 'node:fs';
import { Core } from '../../Sources/CoplayWeb/Page/participant.mjs';

const [wasm, golden] = process.argv.slice(2);
const core = await Core.load(readFileSync(wasm));
const x = core.x, enc = new TextEncoder(), dec = new TextDecoder();
// The script: milliseconds from the start, then a console line or a player's report.
const script = JSON.parse(readFileSync(new URL('../../Tests/Vectors/events-script.json', import.meta.url), 'utf8'));
const mono0 = 1_000_000_000n, wall0 = 1_800_000_000_000_000_000n;
const events = [];
let wake = null;
function carry(length) {
  for (const r of core.records(length)) {
    if (r.kind === 4) events.push(dec.decode(r.data));
    if (r.kind === 6) wake = new DataView(r.data.buffer).getBigInt64(0, true);
  }
}
const name = enc.encode(script.name), session = enc.encode(script.session);
const h = x.coplay_create(BigInt(script.id), BigInt(script.seed), script.port, core.put(name), name.length, core.put(session), session.length, mono0, wall0);
if (h < 0) throw new Error(`coplay_create: ${h}`);
let now = mono0;
const at = (t) => [t, wall0 + (t - mono0)];
carry(x.coplay_start(h, ...at(now)));
const steps = script.steps.slice();
const end = mono0 + BigInt(script.endMillis) * 1_000_000n;
while (true) {
  const next = steps.length ? mono0 + BigInt(steps[0].at) * 1_000_000n : end;
  if (wake !== null && wake < next && wake > now) {
    now = wake;
    carry(x.coplay_tick(h, ...at(now)));
    continue;
  }
  if (!steps.length) break;
  now = next > now ? next : now;
  const step = steps.shift();
  if (step.console !== undefined) {
    const line = enc.encode(step.console);
    carry(core.withBytes(line, (p) => x.coplay_console(h, p, line.length, ...at(now))));
  } else {
    carry(x.coplay_player_report(h, step.report, step.position ?? 0, step.rate ?? 0, 0n, 0, 0, ...at(now)));
  }
}
const expected = readFileSync(golden, 'utf8').split('\n').filter(Boolean);
let differences = 0;
for (let i = 0; i < Math.max(expected.length, events.length); i++) {
  if (expected[i] !== events[i]) {
    if (differences++ < 5) console.error(`golden-events: line ${i + 1}\n  file: ${expected[i]}\n  wasm: ${events[i]}`);
  }
}
if (differences) { console.error(`golden-events: FAIL: ${differences} of ${expected.length} records differ`); process.exit(1); }
console.log(`golden-events: the module's ${events.length} records equal the golden file's, byte for byte`);
