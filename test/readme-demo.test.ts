/**
 * README.md's walk-through, run as the README writes it: the commands are read from its sh blocks and
 * run by `sh -c` in a directory that stands for a fresh clone (the repository's entries linked in, its
 * own `.data`, kept from one test to the next as a user's clone keeps it), `npm start` and the ones
 * marked `# terminal N` in the background. Each test is one stack as the README starts it (dev server,
 * worker and gateway from `npm start`), stopped when the test ends: the Quick start on the local
 * provider, then the agent demo with the A2A and AG-UI clients on the demo model. The only changes are
 * the ports, so test files can run side by side: the demo model's `PORT` (and the `127.0.0.1:8799` the
 * README sends the worker to), `npm start`'s dev-server and gateway ports, and `TEMPORAL_ADDRESS` for
 * the `harness` commands.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { freePorts } from './support/ports.js';
import { readmeBlock, type ReadmeCommand } from './support/readme.js';

const ROOT = join(import.meta.dirname, '..');
const QUICK_START_HEADING = 'Quick start';
const DEMO_HEADING = 'See the agent act: a tool call that waits for approval';
const A2A_HEADING = 'Call a Session from another agent (A2A)';
const AG_UI_HEADING = 'A chat front end on a Session (AG-UI)';

interface Background {
  child: ChildProcess;
  lines: string[];
}

let clone: string;
/** The environment of this test's stack: its own ports. */
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

/** A command that keeps running (a server): started in the background, then waited for until ready. */
const inBackground = (command: string) => /# terminal \d/.test(command) || /^\s*npm start\b/.test(command);

/** What a background command prints once it is ready for the next command. */
function readyLine(command: string): RegExp {
  if (command.includes('examples/scripted-model/server.ts')) return /scripted OpenAI-compatible model on/;
  // The gateway starts after the worker: `harness send --wait` streams through it.
  if (/\bnpm start\b/.test(command)) return /\[harness\] gateway: http/;
  throw new Error(`no known ready line for background command ${command}`);
}

/** Runs a block's commands in order, the servers in the background; each other one must exit 0. */
async function runSetup(commands: ReadmeCommand[]): Promise<void> {
  for (const command of commands) {
    const text = local(command.text);
    if (inBackground(text)) {
      await waitForLine(startBackground(text), readyLine(text));
    } else {
      const { code, out } = await run(text);
      expect(code, `${text}\n${out}`).toBe(0);
    }
  }
}

/** Runs a block's commands in order: each exits 0 and prints every line the README shows under it. */
async function runShown(commands: ReadmeCommand[]): Promise<string[]> {
  const printed: string[] = [];
  for (const command of commands) {
    const { code, out } = await run(local(command.text));
    expect(code, `${command.text}\n${out}`).toBe(0);
    for (const shown of command.shows) expect(out, command.text).toContain(shown);
    printed.push(out);
  }
  return printed;
}

/** Stops the background processes of the test (npm, tsx, the worker, the dev server: each group). */
async function stopBackground(): Promise<void> {
  for (const proc of background.splice(0).reverse()) {
    if (proc.child.exitCode !== null || proc.child.pid === undefined) continue;
    const exited = new Promise((r) => proc.child.once('exit', r));
    process.kill(-proc.child.pid, 'SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (proc.child.exitCode === null) process.kill(-proc.child.pid, 'SIGKILL');
  }
}

beforeAll(() => {
  clone = freshClone();
});

// Each test is one stack on ports of its own.
beforeEach(async () => {
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

afterEach(stopBackground);

afterAll(async () => {
  await stopBackground();
  if (clone) rmSync(clone, { recursive: true, force: true });
});

describe("README's walk-through", () => {
  it('Quick start runs as written: npm start, two inputs to a new Session with --wait, inspect', async () => {
    const start = readmeBlock(QUICK_START_HEADING, 'npm install');
    const use = readmeBlock(QUICK_START_HEADING, 'npm run -s harness -- send demo');
    // `npm install` is what CI did before the suite (and it would write the linked node_modules).
    expect(start.commands.map((c) => c.text)).toEqual(['npm install', 'npm start']);
    await runSetup(start.commands.slice(1));

    const [first, second, inspected] = await runShown(use.commands);
    // On the local provider: a new Session's first input initializes it, and each turn ends with the decision.
    expect(first).toContain('decision #1: initialize');
    expect(first).toMatch(/session goal: Research ComfyUI/);
    expect(second).toMatch(/decision #2: \S+/);
    expect(inspected).toContain('demo');
    expect(inspected).toContain('Research ComfyUI');
  }, 240_000);

  it('the agent demo runs as written: the tool call waits for approval, runs once when approved; then A2A and AG-UI', async () => {
    const setup = readmeBlock(DEMO_HEADING, 'npx tsx examples/scripted-model/server.ts');
    const use = readmeBlock(DEMO_HEADING, 'npm run -s harness -- send convert');
    expect(setup.commands.filter((c) => /# terminal \d/.test(c.text))).toHaveLength(2);
    await runSetup(setup.commands);

    const printed = await runShown(use.commands);
    expect(use.commands.map((c) => c.shows.length)).toContain(3);
    const [sent, approved, inspected, listed] = printed;
    expect(sent).toContain('waiting-approval');
    expect(approved).toMatch(/approv/i);
    expect(inspected).toContain('Last reply (input #1):');
    expect(inspected).toContain('Done. The conversion tool answered: Wrote guide.docx');
    expect(listed?.split(/\s+/)).toContain('guide.docx');
    // Written once: the demo MCP server logs each conversion it runs.
    const log = () => readFileSync(join(clone, '.data', 'workspace', '.conversions.log'), 'utf8').split('\n');
    expect(log().filter((l) => l.includes('guide.docx'))).toHaveLength(1);

    // The A2A block, on the same stack: the SDK's client sends a task, it waits, is approved by A2A input, completes.
    const a2a = readmeBlock(A2A_HEADING, "printf '# Notes");
    await runShown(a2a.commands);
    expect(a2a.commands.at(-1)?.shows).toHaveLength(3);
    expect(log().filter((l) => l.includes('notes.docx'))).toHaveLength(1);

    // The AG-UI block: HttpAgent runs a turn, its call interrupts the run, a resumed run approves it.
    const agUi = readmeBlock(AG_UI_HEADING, "printf '# To do");
    await runShown(agUi.commands);
    expect(agUi.commands.at(-1)?.shows).toHaveLength(3);
    expect(log().filter((l) => l.includes('todo.docx'))).toHaveLength(1);
    // Three SDK or CLI start-ups (tsx) besides the stack's: more than the default under load.
  }, 360_000);
});
