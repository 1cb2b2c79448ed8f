// The page's participant runs here, in a dedicated Worker: a hidden page's own timers run once a
// second, then once a minute, but a Worker's are not throttled, so a tab in the background stays
// a live member (heartbeats, clock probes, repairs). The page sends what the person and the
// video element do; this sends back the core's events, the player's commands and the view.
//
// Messages in:  {type:'join', relay, session, key (hex), name, wasm (URL), player: {steering,
//               deadBand, readsInSteps}}, {type:'share', url, queue}, {type:'report', kind, position, rate, text},
//               {type:'observe', kind, position, at}, {type:'resume'}, {type:'leave'}, {type:'message', text},
//               {type:'fingerprint', file, token, wanted} (a copy of one's own: its item id, and
//               whether its name is `wanted`'s as another encode's is: sameName)
// Messages out: {type:'event', event}, {type:'player', action}, {type:'view', view},
//               {type:'fingerprint', token, id (null: unreadable), sameName, slack (seconds)},
//               {type:'connection', up, refused, unreachable, server}, {type:'diagnostic', text}, {type:'trap', text}, {type:'left'}
import { Core, Participant, parseKey, normalisedName, otherEncodeSlack } from './participant.mjs';

let core, participant, joined, bytes, viewTimer, traps = 0, lastTrapAt = 0;
const post = (message) => postMessage(message);

async function start() {
  // A trap leaves the module's memory in an unknown state: a new module, a new participant (a
  // new id), and the group's state again from its members (state transfer).
  core = await Core.load(bytes);
  participant = new Participant(core, {
    relay: joined.relay, session: joined.session, key: parseKey(joined.key), name: joined.name, viewer: !!joined.viewer,
    onEvent: (event) => post({ type: 'event', event }),
    onPlayer: (action) => post({ type: 'player', action }),
    onDiagnostic: (text) => post({ type: 'diagnostic', text }),
    onConnection: (up, state) => post({ type: 'connection', up, refused: !!state?.refused, unreachable: state?.unreachable, server: state?.server }),
    onExit: () => { clearInterval(viewTimer); post({ type: 'left' }); },
  });
  // The page's <video> follows through the core: the page only performs actions and observes.
  guarded(() => { participant.follow(joined.player); participant.connect(); });
  clearInterval(viewTimer);
  viewTimer = setInterval(() => guarded(() => post({ type: 'view', view: participant.view() })), 250);
}

function guarded(body) {
  try {
    return body();
  } catch (error) {
    if (!(error instanceof WebAssembly.RuntimeError)) throw error;
    post({ type: 'trap', text: String(error.message || error) });
    try { participant.close(); } catch { /* the module is gone */ }
    // Again after 1 s, doubling to 30 s while it keeps trapping: a trap that comes back at once
    // must not spin the tab. A trap after ten quiet minutes starts the count again: one trap an
    // hour must not cost 30 s each.
    if (Date.now() - lastTrapAt > 600000) traps = 0;
    lastTrapAt = Date.now();
    traps++;
    setTimeout(() => start().catch((e) => post({ type: 'diagnostic', text: `cannot restart: ${e.message}` })),
      Math.min(30000, 1000 * 2 ** Math.min(traps - 1, 5)));
  }
}

onmessage = async ({ data }) => {
  switch (data.type) {
    case 'join':
      joined = data;
      try {
        bytes = await (await fetch(data.wasm)).arrayBuffer();
        await start();
      } catch (error) {
        post({ type: 'diagnostic', text: `cannot start: ${error.message}` });
      }
      break;
    case 'share': guarded(() => participant?.share(data.url, { queue: data.queue === true })); break;
    case 'message': guarded(() => participant?.message(String(data.text))); break;
    case 'report':
      guarded(() => {
        if (participant && !participant.report(data.kind, data)) post({ type: 'diagnostic', text: `the core refused a ${data.kind} report` });
      });
      break;
    case 'observe':
      guarded(() => {
        if (participant && !participant.observe(data.kind, data)) post({ type: 'diagnostic', text: `the core refused a ${data.kind} observation` });
      });
      break;
    case 'fingerprint': {
      // The windows are read here, off the page's thread: a phone's page stays responsive.
      let id = null;
      try { id = core ? await core.fingerprint(data.file) : null; } catch (error) {
        if (error instanceof WebAssembly.RuntimeError) guarded(() => { throw error; });
      }
      const sameName = !!data.wanted && normalisedName(data.file.name) === normalisedName(data.wanted);
      post({ type: 'fingerprint', token: data.token, id, sameName, slack: otherEncodeSlack });
      break;
    }
    case 'resume': guarded(() => participant?.reconnectNow()); break;
    case 'leave': guarded(() => participant?.leave()); break;
  }
};
