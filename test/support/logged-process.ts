/**
 * A worker (or any program) as a real OS process whose stdout and stderr lines are kept, so a test
 * can wait for a line and read the log afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface LoggedProcess {
  child: ChildProcess;
  /** Every complete line printed so far, stdout and stderr interleaved. */
  lines: string[];
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** The first line matching `pattern`; rejects once the process has exited or `timeoutMs` passed. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

export function startLoggedProcess(args: string[], env: NodeJS.ProcessEnv): LoggedProcess {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let partial = '';
  const collect = (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter(Boolean));
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const waitForLine = (pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const deadline = Date.now() + timeoutMs;
      const check = () => {
        const hit = lines.find((l) => pattern.test(l));
        if (hit) return resolve(hit);
        if (Date.now() > deadline || child.exitCode !== null) {
          return reject(new Error(`no line ${String(pattern)}; got:\n${lines.join('\n')}`));
        }
        setTimeout(check, 100);
      };
      check();
    });
  return { child, lines, exited, waitForLine };
}
