// A participant's calls into the module, recorded and replayed: what one viewer's core costs per
// command, measured apart from the crowd it was recorded in (Tools/web/command-cost.mjs).
//
// Recording: `recordingCore(bytes, onCall)` gives a Core of its own module instance whose every
// call (its name, arguments, the bytes its pointers held, the randomness the module drew during
// it, and the events it wrote) is passed to `onCall` as a plain object. The participant made on
// it behaves as any other; its module instance is its own, so that its handle, its memory and
// its randomness are its alone.
//
// Replaying: `replay(module, calls, time)` instantiates the module afresh, makes every call again
// in order with the recorded bytes and randomness, and times each.
import { Core } from '../../Sources/CoplayWeb/Page/participant.mjs';

/// For each entry point that takes bytes, where its pointers are among its arguments and how many
/// bytes each points to (the length argument after it; coplay_create_relayed's entropy, 32).
const after = (at) => [at, (args) => args[at + 1]];
const pointers = {
  coplay_create_relayed: [after(2), after(4), after(6), [8, () => 32]],
  coplay_relay_connect: [after(1)],
  coplay_socket_bytes: [after(1)],
  coplay_socket_closed: [after(1)],
  coplay_share: [after(1)],
  coplay_player_report: [after(5)],
};
const encode = (v) => (typeof v === 'bigint' ? { n: v.toString() } : v);
const decode = (v) => (typeof v === 'object' && v !== null ? BigInt(v.n) : v);

export async function recordingCore(bytes, onCall) {
  let memory, current = null;
  const { instance } = await WebAssembly.instantiate(bytes, {
    env: {
      coplay_host_random: (ptr, n) => {
        const drawn = crypto.getRandomValues(new Uint8Array(memory.buffer, ptr, n));
        current?.random.push(Array.from(drawn));
      },
    },
  });
  memory = instance.exports.memory;
  const x = {};
  for (const [name, f] of Object.entries(instance.exports)) {
    if (typeof f !== 'function') { x[name] = f; continue; }
    if (['coplay_alloc', 'coplay_dealloc', 'coplay_output'].includes(name)) { x[name] = f; continue; }
    x[name] = (...args) => {
      const call = { name, args: args.map(encode), bytes: {}, random: [], events: [] };
      for (const [at, length] of pointers[name] ?? []) {
        call.bytes[at] = args[at] ? Array.from(new Uint8Array(memory.buffer, args[at], length(args))) : null;
      }
      current = call;
      try { return f(...args); } finally { current = null; onCall(call); }
    };
  }
  const core = new Core();
  core.x = x;
  return core;
}

/// The module instantiated afresh and every call made again; `time(index, call, us, exports,
/// length)` after each, the call's outputs still in the module's output buffer.
export async function replay(module, calls, time) {
  const random = [];
  const instance = await WebAssembly.instantiate(module, {
    env: {
      coplay_host_random: (ptr, n) => {
        const next = random.shift();
        const into = new Uint8Array(instance.exports.memory.buffer, ptr, n);
        if (next && next.length === n) into.set(next); else crypto.getRandomValues(into);
      },
    },
  });
  const x = instance.exports;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i];
    const args = call.args.map(decode);
    const held = [];
    for (const [at, bytes] of Object.entries(call.bytes)) {
      if (!bytes) continue;
      const p = x.coplay_alloc(bytes.length);
      new Uint8Array(x.memory.buffer, p, bytes.length).set(bytes);
      args[at] = p;
      held.push(p);
    }
    random.length = 0;
    random.push(...call.random);
    // Called through a function named for the call and its events, so that a profile
    // (`node --cpu-prof`) tells a pause's frame from the others.
    const label = `${call.name}__${call.events.join('_')}`.replace(/[^A-Za-z0-9_]/g, '_');
    const named = new Function('f', `return function ${label}(...a) { return f(...a); }`)(x[call.name]);
    const started = performance.now();
    const length = named(...args);
    time(i, call, (performance.now() - started) * 1000, x, typeof length === 'number' ? length : -1);
    for (const p of held) x.coplay_dealloc(p);
  }
}
