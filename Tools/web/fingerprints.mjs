// The page's fingerprint of a copy of one's own, inside the shipped module: the vectors
// FingerprintTests checks natively (Tests/Vectors/fingerprints.json, computed by Python's
// hashlib), through the page's own code (Core.fingerprint in participant.mjs: the windows the
// core names, read from a Blob, hashed by the core). The files are made as they are read (the
// 4 GiB one is never in memory). Then what a page may hand it: sizes out of range, a file that
// shrank while it was read. Then the page's comparison of two copies' names, for another
// encode (participant.mjs, normalisedName), against the vectors the agent's is checked with.
//
//   node Tools/web/fingerprints.mjs coplay.wasm Tests/Vectors/fingerprints.json [Tests/Vectors/names.json]
import { readFileSync } from 'node:fs';
import { Core, normalisedName, otherEncodeSlack } from '../../Sources/CoplayWeb/Page/participant.mjs';

const [wasmPath, vectorsPath, namesPath = vectorsPath.replace(/fingerprints\.json$/, 'names.json')] = process.argv.slice(2);
const core = await Core.load(readFileSync(wasmPath));
const vectors = JSON.parse(readFileSync(vectorsPath, 'utf8'));
const failures = [];
let read = 0;

/// A Blob's interface over made content: `byte(offset)` for each byte, `truncate` bytes fewer
/// returned by every slice (a file that shrank after it was picked).
function madeFile(size, byte, truncate = 0) {
  return {
    size,
    slice(start, end) {
      return {
        async arrayBuffer() {
          const count = Math.max(0, Math.min(end, size) - start - truncate);
          const bytes = new Uint8Array(count);
          for (let i = 0; i < count; i++) bytes[i] = byte(start + i);
          read += count;
          return bytes.buffer;
        },
      };
    },
  };
}
function content(vector) {
  if (vector.content === 'pattern') return (o) => Number((BigInt(o) >> 3n) ^ BigInt(o)) & 0xff;
  const marks = (vector.marks ?? []).map(([at, text]) => [at, Buffer.from(text)]);
  return (o) => {
    for (const [at, text] of marks) if (o >= at && o < at + text.length) return text[o - at];
    return 0;
  };
}

for (const vector of vectors.cases) {
  read = 0;
  const id = await core.fingerprint(madeFile(vector.size, content(vector)));
  if (id !== vector.fingerprint) failures.push(`${vector.name}: ${id} (expected ${vector.fingerprint})`);
  const most = vectors.windowLength * vectors.windowCount;
  if (read > most) failures.push(`${vector.name}: read ${read} bytes, more than the windows' ${most}`);
}
// Hostile or broken input: refused (null), never a trap.
const pattern = content({ content: 'pattern' });
for (const [what, file] of [
  ['a file that shrank while it was read', madeFile(3000001, pattern, 1)],
  ['a size past 2^50', madeFile(2 ** 51, pattern)],
  ['a negative size', madeFile(-1, pattern)],
  ['a size that is not whole', madeFile(1000.5, pattern)],
  ['a size that is not a number', madeFile(NaN, pattern)],
]) {
  const id = await core.fingerprint(file).catch((e) => `threw ${e.message}`);
  if (id !== null) failures.push(`${what}: ${id} (expected null)`);
}
if (core.x.coplay_fingerprint(1000, 0, 5) !== -1) failures.push('bytes that are not the windows were taken');

const names = JSON.parse(readFileSync(namesPath, 'utf8'));
if (otherEncodeSlack !== names.durationSlack) failures.push(`the page's slack is ${otherEncodeSlack} s, the agent's ${names.durationSlack} s`);
for (const [a, b] of names.same) if (normalisedName(a) !== normalisedName(b)) failures.push(`"${a}" and "${b}" are one name`);
for (const [a, b] of names.different) if (normalisedName(a) === normalisedName(b)) failures.push(`"${a}" and "${b}" are two names`);
for (const [a, n] of names.normalised) if (normalisedName(a) !== n) failures.push(`"${a}" is "${normalisedName(a)}", not "${n}"`);

for (const failure of failures) console.error(`fingerprints: ${failure}`);
if (failures.length) process.exit(1);
console.log(`fingerprints: ${vectors.cases.length} vectors as Python's hashlib computed them, inside the module; 6 hostile inputs refused; ${names.same.length + names.different.length + names.normalised.length} name vectors as the agent compares them`);
