/**
 * The `harness` CLI as a subprocess against a test's server, worker and gateway (and nothing of the
 * caller's TEMPORAL_* / HARNESS_* environment); `onStdout` sees each chunk and what was printed so far.
 */
import { spawn } from 'node:child_process';

export interface CliTarget {
  address: string;
  taskQueue: string;
  gatewayUrl: string;
  token: string;
}

export function harnessCli(target: CliTarget, args: string[], onStdout?: (chunk: string, soFar: string) => void) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('HARNESS_')),
  );
  const child = spawn(
    process.execPath,
    ['bin/harness.js', '--address', target.address, '--task-queue', target.taskQueue, ...args],
    {
      env: { ...env, HARNESS_GATEWAY_URL: target.gatewayUrl, HARNESS_GATEWAY_TOKEN: target.token },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const run = {
    child,
    out: '',
    err: '',
    exited: new Promise<number | null>((resolve) => child.once('close', resolve)),
  };
  child.stdout.on('data', (chunk: Buffer) => {
    run.out += chunk.toString();
    onStdout?.(chunk.toString(), run.out);
  });
  child.stderr.on('data', (chunk: Buffer) => (run.err += chunk.toString()));
  return run;
}
