/**
 * The Temporal dev server's guardian (dev/dev-server.ts starts it): runs `temporal server start-dev`
 * as its own child and makes sure the server never outlives the process that started the guardian.
 *
 * The guardian runs in its own process group, so a Ctrl-C in the terminal reaches only `npm start`,
 * which drains its worker and then sends the guardian SIGTERM. Its stdin is a pipe from that process:
 * however the process ends (exit, crash, SIGKILL, a closed terminal), the kernel closes the pipe's
 * other end and the guardian reads end-of-file. A second check polls the parent pid, in case the pipe
 * is held open elsewhere. Either way, and on SIGTERM, SIGINT or SIGHUP, it stops the server with
 * SIGTERM (SIGKILL 10 s later) and exits with the server's exit code.
 *
 * Usage: node server-guard.cjs <temporal-cli> <args...>
 */
/* global process, setTimeout, setInterval */
'use strict';
const { spawn } = require('node:child_process');

const [cli, ...args] = process.argv.slice(2);
if (!cli) {
  process.stderr.write('usage: server-guard.cjs <temporal-cli> <args...>\n');
  process.exit(2);
}

/** How long the server has to stop after SIGTERM before it is killed. */
const STOP_GRACE_MS = 10_000;
/** How often the parent pid is checked. */
const PARENT_POLL_MS = 500;

const parent = process.ppid;
// The server stays in the guardian's process group, so a SIGKILL of the group takes both.
const server = spawn(cli, args, { stdio: ['ignore', 'inherit', 'inherit'] });
let stopping = false;

function stop() {
  if (stopping) return;
  stopping = true;
  server.kill('SIGTERM');
  setTimeout(() => server.kill('SIGKILL'), STOP_GRACE_MS).unref();
}

server.on('error', (err) => {
  process.stderr.write(`server-guard: cannot run ${cli}: ${err.message}\n`);
  process.exit(127);
});
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.on('close', stop);
process.stdin.resume();
setInterval(() => {
  if (process.ppid !== parent) stop();
}, PARENT_POLL_MS).unref();
