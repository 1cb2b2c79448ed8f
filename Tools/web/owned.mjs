// A child process that dies with this one. A test script that is killed outright (SIGKILL: a CI
// job's timeout, a person's kill -9) runs no cleanup, and a nats-server, a `coplay web` or a
// browser it started would live on holding its ports, failing the next run. Linux's parent-death
// signal (prctl PR_SET_PDEATHSIG, set by util-linux's setpriv, which then execs the command in the
// same process) kills the child when this process goes. Elsewhere it is a plain spawn.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

export function spawnOwned(command, args = [], options = {}) {
  return setpriv
    ? spawn(setpriv, ['--pdeathsig', 'KILL', '--', command, ...args], options)
    : spawn(command, args, options);
}
