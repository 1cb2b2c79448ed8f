// The player follower's cases inside the module: the same file FollowerTests runs natively
// (Tests/Vectors/follower-cases.json), through coplay_follower_cases, with the same expectations.
//
//   node Tools/web/follower-cases.mjs coplay.wasm Tests/Vectors/follower-cases.json
import { readFileSync } from 'node:fs';
import { Core } from '../../Sources/CoplayWeb/Page/participant.mjs';

const [wasmPath, casesPath] = process.argv.slice(2);
const core = await Core.load(readFileSync(wasmPath));
const cases = readFileSync(casesPath);
const [record] = core.records(core.withBytes(cases, (p) => core.x.coplay_follower_cases(p, cases.length)));
const result = JSON.parse(new TextDecoder().decode(record.data));
if (result.failures.length || result.cases < 12) {
  for (const failure of result.failures) console.error(`follower-cases: ${failure}`);
  console.error(`follower-cases: ${result.failures.length} of ${result.steps} steps failed in the module`);
  process.exit(1);
}
console.log(`follower-cases: ${result.cases} cases, ${result.steps} steps, all as expected inside the module`);
