/**
 * README.md's agent demo ("See the agent act"), run as the README writes it: the commands are read
 * from its sh blocks and run by `sh -c` in a directory that stands for a fresh clone (the repository's
 * entries linked in, its own `.data`), the ones marked `# terminal N` in the background. The only
 * changes are the ports, so test files can run side by side: the demo model's `PORT` (and the
 * `127.0.0.1:8799` the README sends the worker to), `npm start`'s dev-server and gateway ports, and
 * `TEMPORAL_ADDRESS` for the `harness` commands.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from './support/ports.js';
import { readmeBlock } from './support/readme.js';

const ROOT = join(import.meta.dirname, '..');
const DEMO_HEADING = 'See the agent act: a tool call that waits for approval';
const A2A_HEADING = 'Call a Session from another agent (A2A)';

interface Background {
  child: ChildProcess;
  lines: string[];
}

let clone: string;
let env: NodeJS.ProcessEnv;
let modelPort: number;
const background: Background[] = [];

/** A directory like a fresh clone: every top-level entry of the repository linked in, but no `.data`. */
function freshClone(): string {
  const dir = mkdtempSync(join(tmpdir(), 'readme-demo-'));
  for (const entry of readdirSync(ROOT)) {
    if (entry === '.data' || entry === '.git') continue;
    symlinkSync(join(ROOT, entry), join(dir, entry));
  }
  return dir;
}

/** The command as it runs here: the README's demo-model address with this test's port. */
const local = (command: string) => command.replaceAll('127.0.0.1:8799', `127.0.0.1:${modelPort}`);

function startBackground(command: string): Background {
  // Its own process group, so the end of the test stops npm, tsx, the worker and the dev server together.
  const child = spawn('sh', ['-c', command], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc: Background = { child, lines: [] };
  let partial = '';
  const collect = (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    proc.lines.push(...parts);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  background.push(proc);
  return proc;
}

async function waitForLine(proc: Background, pattern: RegExp, timeoutMs = 150_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!proc.lines.some((l) => pattern.test(l))) {
    if (proc.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`no line ${String(pattern)}; got:\n${proc.lines.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function run(command: string, timeoutMs = 120_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd: clone, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} did not finish in ${timeoutMs} ms; printed:\n${out}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** What a background command prints once it is ready for the next command. */
function readyLine(command: string): RegExp {
  if (command.includes('examples/scripted-model/server.ts')) return /scripted OpenAI-compatible model on/;
  if (/\bnpm start\b/.test(command)) return /\[harness\] (gateway|worker polling)/;
  throw new Error(`no known ready line for background command ${command}`);
}

beforeAll(async () => {
  clone = freshClone();
  const [model, dev, ui, http, gateway] = await freePorts(5);
  modelPort = model!;
  env = {
    ...process.env,
    PORT: String(model),
    HARNESS_DEV_PORT: String(dev),
    HARNESS_DEV_UI_PORT: String(ui),
    HARNESS_DEV_HTTP_PORT: String(http),
    HARNESS_GATEWAY_PORT: String(gateway),
    TEMPORAL_ADDRESS: `127.0.0.1:${dev}`,
  };
  // Settings of the machine running the tests must not reach the demo: it runs on its defaults.
  for (const name of Object.keys(env)) {
    if (/^(OPENAI_|HARNESS_(?!DEV_|GATEWAY_PORT))/.test(name)) delete env[name];
  }
});

afterAll(async () => {
  for (const proc of background.reverse()) {
    if (proc.child.exitCode !== null || proc.child.pid === undefined) continue;
    const exited = new Promise((r) => proc.child.once('exit', r));
    process.kill(-proc.child.pid, 'SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (proc.child.exitCode === null) process.kill(-proc.child.pid, 'SIGKILL');
  }
  if (clone) rmSync(clone, { recursive: true, force: true });
});

describe("README's agent demo", () => {
  it('runs as written: the tool call waits for approval, runs once when approved, and the reply says so', async () => {
    const setup = readmeBlock(DEMO_HEADING, 'npx tsx examples/scripted-model/server.ts');
    const use = readmeBlock(DEMO_HEADING, 'npm run -s harness -- send demo');
    expect(setup.commands.filter((c) => /# terminal \d/.test(c.text))).toHaveLength(2);

    for (const command of setup.commands) {
      const text = local(command.text);
      if (/# terminal \d/.test(text)) {
        await waitForLine(startBackground(text), readyLine(text));
      } else {
        const { code, out } = await run(text);
        expect(code, out).toBe(0);
      }
    }

    const printed: string[] = [];
    for (const command of use.commands) {
      const { code, out } = await run(local(command.text));
      expect(code, `${command.text}\n${out}`).toBe(0);
      // Every output line the README shows under the command is printed by it.
      for (const shown of command.shows) expect(out, command.text).toContain(shown);
      printed.push(out);
    }
    expect(use.commands.map((c) => c.shows.length)).toContain(3);

    const [sent, approved, inspected, listed] = printed;
    expect(sent).toContain('waiting-approval');
    expect(approved).toMatch(/approv/i);
    expect(inspected).toContain('Last reply (input #1):');
    expect(inspected).toContain('Done. The conversion tool answered: Wrote guide.docx');
    expect(listed?.split(/\s+/)).toContain('guide.docx');
    // Written once: the demo MCP server logs each conversion it runs.
    const log = readFileSync(join(clone, '.data', 'workspace', '.conversions.log'), 'utf8');
    expect(log.split('\n').filter((l) => l.includes('guide.docx'))).toHaveLength(1);

    // The A2A block, on the same stack: the SDK's client sends a task, it waits, is approved by A2A input, completes.
    const a2a = readmeBlock(A2A_HEADING, "printf '# Notes");
    for (const command of a2a.commands) {
      const { code, out } = await run(command.text);
      expect(code, `${command.text}\n${out}`).toBe(0);
      for (const shown of command.shows) expect(out, command.text).toContain(shown);
    }
    expect(a2a.commands.at(-1)?.shows).toHaveLength(3);
    const after = readFileSync(join(clone, '.data', 'workspace', '.conversions.log'), 'utf8');
    expect(after.split('\n').filter((l) => l.includes('notes.docx'))).toHaveLength(1);
    // The A2A block adds an SDK client run (a tsx start-up) to the demo: more than the default 120 s under load.
  }, 240_000);
});
