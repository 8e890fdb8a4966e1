/**
 * The `harness` CLI as a subprocess (bin/harness.js, the installed entry point) against the real
 * dev server, with a worker in this process on its own task queue: `send --wait` output, inspect,
 * watch, list, approvals and commands, and the exit codes scripts rely on.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../client/index.js';
import { loadConfig } from '../worker/config.js';
import { MODEL, scriptedModels, startWorker, uniqueId, userJson, waitFor, type TestWorker } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { freePorts } from './support/ports.js';

let models: ScriptedModelServer;
let w: TestWorker;
let client: SessionClient;

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.92, sessionRelevance: 0.81 } });
  models.on(MODEL.extraction, { json: { terms: ['comfyui', 'markdown', 'guide'] } });
  models.on(MODEL.orchestration, (req) => {
    type Brief = Array<{ id: string }>;
    const { candidates } = userJson<{ candidates: { skills: Brief; toolsets: Brief } }>(req);
    return {
      json: {
        skills: candidates.skills.slice(0, 2).map((c) => c.id),
        toolsets: candidates.toolsets.slice(0, 1).map((c) => c.id),
        memories: [],
      },
    };
  });
  models.on(MODEL.compaction, { json: { summary: 'done' } });
  // Slow enough that `send --wait` sees the agent stage live.
  models.on(MODEL.agent, { delayMs: 700, then: { content: 'Here is the outline of the guide.' } });
  w = await startWorker({ models: scriptedModels(models) });
  client = new SessionClient(w.client, { taskQueue: w.taskQueue });
});

afterAll(async () => {
  await w?.stop();
  await models?.close();
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment without TEMPORAL_* and HARNESS_* from outside, plus `extra`. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('HARNESS_')),
  );
  return { ...env, ...extra };
}

/** Runs `bin/harness.js` with the test server's address and worker's task queue. */
function harness(args: string[], options: { address?: string } & SpawnOptions = {}) {
  const connection = ['--address', options.address ?? inject('temporalAddress'), '--task-queue', w.taskQueue];
  return spawnRun(process.execPath, ['bin/harness.js', ...connection, '--connect-timeout', '1500', ...args], options);
}

interface SpawnOptions {
  stdin?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Called with everything printed so far, on each chunk. */
  onStdout?: (stdout: string) => void;
}

function spawnRun(command: string, args: string[], options: SpawnOptions = {}): Promise<Run> {
  const child = spawn(command, args, {
    env: cleanEnv(options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    options.onStdout?.(stdout);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('harness send', () => {
  it('--wait returns when the turn ends, with the decision, stages, goals, capability changes and reply', async () => {
    const sessionId = uniqueId('guide');
    const run = await harness([
      'send',
      sessionId,
      'Research ComfyUI and deliver a Markdown guide',
      '--resource',
      'https://docs.comfy.org',
      '--message-id',
      'guide-1',
      '--wait',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe(`session ${sessionId}: input #1 recorded (message guide-1)`);
    expect(run.stdout).toContain('decision #1: initialize');
    for (const stage of [
      'Understanding the task meaning',
      'Extracting task terms',
      'Discovering task capabilities',
      'Orchestrating the task',
      'Applying the task environment',
    ]) {
      expect(run.stdout).toMatch(new RegExp(`✓ ${stage}\\s+\\d+ ms  ok`));
    }
    expect(run.stdout).toContain('  agent: replied (1 step)');
    expect(run.stdout).toContain('session goal: Research ComfyUI and deliver a Markdown guide');
    expect(run.stdout).toMatch(
      /capabilities: 2 skills, 1 toolsets, 0 memories \(revision 1\); changes: \+skill:\S+ \+skill:\S+ \+toolset:\S+/,
    );
    expect(run.stdout).toContain('reply:\n  Here is the outline of the guide.');

    const second = await harness(['send', sessionId, 'Add a section on custom nodes', '--wait']);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('decision #2: continue (phase 0.92, session 0.81)');

    const again = await harness([
      'send',
      sessionId,
      'Research ComfyUI and deliver a Markdown guide',
      '--message-id',
      'guide-1',
      '--wait',
      '--json',
    ]);
    expect(again.code).toBe(0);
    const result = JSON.parse(again.stdout) as {
      seq: number;
      duplicate: boolean;
      decision: { seq: number };
      reply: string;
    };
    expect(result).toMatchObject({
      seq: 1,
      duplicate: true,
      decision: { seq: 1 },
      reply: 'Here is the outline of the guide.',
    });
  });

  it('without --wait sends by signal-with-start and returns at once; text may come from stdin', async () => {
    const sessionId = uniqueId('quick');
    const run = await harness(['send', sessionId, '-', '--message-id', 'from-stdin'], {
      stdin: 'Summarise the meeting notes\n',
    });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toBe(`sent message from-stdin to session ${sessionId}\n`);
    const view = await waitFor(
      () => client.snapshot(sessionId),
      (v) => v.lastDecision?.seq === 1,
    );
    // The goal is the message's task statement; the message as sent stays its source.
    expect(view.goals.session).toMatchObject({
      text: 'Summarise the meeting notes',
      source: 'Summarise the meeting notes\n',
    });
  });

  it('exits 2 on invalid input, with one line on stderr naming the field', async () => {
    const blank = await harness(['send', uniqueId('bad'), '   ']);
    expect(blank).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'harness: invalid message: text: text must not be empty\n',
    });
    const badId = await harness(['send', 'not a session id', 'hello']);
    expect(badId.code).toBe(2);
    expect(badId.stderr).toMatch(/^harness: invalid start argument: sessionId: .*\n$/);
    const usage = await harness(['send', 'only-a-session']);
    expect(usage).toMatchObject({ code: 2, stderr: "harness: missing required argument 'text'\n" });
    const unknown = await harness(['sned', 'x', 'y']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^harness: unknown command 'sned'/);
  });

  it('exits 5 when --wait runs out, saying where the Session is', async () => {
    const sessionId = uniqueId('paused');
    await client.submit(sessionId, { text: 'Draft the budget' }, { wait: true });
    await client.command(sessionId, { name: 'pause' });
    const run = await harness(['send', sessionId, 'Add travel costs', '--wait', '--timeout', '1500ms']);
    expect(run.code).toBe(5);
    expect(run.stdout).toContain('… input #2 is queued or its turn is running');
    expect(run.stderr).toMatch(
      /^harness: no decision for input #2 of session \S+ within 1\.5 s \(the session is paused\)\n$/,
    );
  });
});

describe('harness inspect, watch, list', () => {
  it('inspect prints goals, capabilities and recent decisions as tables, or JSON', async () => {
    const sessionId = uniqueId('inspect');
    await client.submit(sessionId, { text: 'Research ComfyUI and deliver a Markdown guide' }, { wait: true });
    await client.submit(sessionId, { text: 'Add a section on custom nodes' }, { wait: true });

    const run = await harness(['inspect', sessionId]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain(`Session ${sessionId} — stage Idle · status active · run 1 · seq 2/2 · queue 0`);
    expect(run.stdout).toContain('decisions: initialize 1, continue 1');
    expect(run.stdout).toMatch(/│ session +│ Research ComfyUI and deliver a Markdown guide +│ 1 +│/);
    // Each goal change is a line under the goals.
    expect(run.stdout).toContain(
      '  session goal by initialize at input #1: — → "Research ComfyUI and deliver a Markdown guide"',
    );
    expect(run.stdout).toContain(
      '  phase goal by initialize at input #1: — → "Research ComfyUI and deliver a Markdown guide"',
    );
    expect(run.stdout).toContain('Capabilities (revision 1)');
    expect(run.stdout).toMatch(/│ skill +│ \S+ +│/);
    expect(run.stdout).toMatch(/│ toolset +│ \S+ +│/);
    expect(run.stdout).toContain('Recent decisions (2)');
    expect(run.stdout).toMatch(/│ 1 +│ initialize +│ — +│ \+skill:/);
    expect(run.stdout).toMatch(/│ 2 +│ continue +│ phase 0\.92, session 0\.81 +│ — +│ agent replied/);

    const json = await harness(['inspect', sessionId, '--json', '--limit', '1']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { snapshot: { sessionId: string }; decisions: Array<{ seq: number }> };
    expect(parsed.snapshot.sessionId).toBe(sessionId);
    expect(parsed.decisions.map((d) => d.seq)).toEqual([2]);
  });

  it('exits 3 for an unknown session and 4 for an unreachable server', async () => {
    const nobody = uniqueId('nobody');
    const notFound = await harness(['inspect', nobody]);
    expect(notFound).toMatchObject({
      code: 3,
      stdout: '',
      stderr: `harness: session ${nobody} not found (no workflow session:${nobody})\n`,
    });
    expect((await harness(['approve', nobody, 'a-1'])).code).toBe(3);
    expect((await harness(['command', nobody, 'pause'])).code).toBe(3);

    const address = `127.0.0.1:${await closedPort()}`;
    const unreachable = await harness(['inspect', 'anything'], { address });
    expect(unreachable).toMatchObject({ code: 4, stdout: '' });
    expect(unreachable.stderr).toBe(
      `harness: Temporal server at ${address} is unreachable: no connection within the connect timeout\n`,
    );
  });

  it('watch prints stage and decision lines until the Session closes', async () => {
    const sessionId = uniqueId('watched');
    await client.submit(sessionId, { text: 'Collect vendor quotes' }, { wait: true });
    // The second input goes in only once the watch has shown the first state: a loaded machine may take
    // seconds to start the process.
    let started: () => void = () => {};
    const firstLine = new Promise<void>((resolve) => (started = resolve));
    const watching = harness(['watch', sessionId], { onStdout: (text) => text.includes('\n') && started() });
    await firstLine;
    await client.submit(sessionId, { text: 'Compare the cheapest two' }, { wait: true });
    await client.command(sessionId, { name: 'close' });
    const run = await watching;
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toBe('stage: Idle (input #1)');
    expect(lines).toContain('decision #2: continue (phase 0.92, session 0.81) · agent replied');
    expect(lines.at(-1)).toBe('stage: Closed (input #2)');
  });

  it('list filters by stage and status; a bad filter exits 2', async () => {
    const sessionId = uniqueId('listed');
    await client.submit(sessionId, { text: 'Plan the launch event' }, { wait: true });
    await waitFor(
      () => client.list({ stage: 'Idle' }),
      (rows) => rows.some((r) => r.sessionId === sessionId),
    );
    const run = await harness(['list', '--stage', 'Idle', '--status', 'active', '--limit', '1000']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(
      new RegExp(`│ ${sessionId} +│ Idle +│ active +│ RUNNING +│ Plan the launch event +│ — +│ \\d{4}-`),
    );
    const json = await harness(['list', '--status', 'active', '--json', '--limit', '1000']);
    expect((JSON.parse(json.stdout) as Array<{ sessionId: string }>).some((r) => r.sessionId === sessionId)).toBe(true);

    const bad = await harness(['list', '--stage', 'Sleeping']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^harness: invalid stage: Sleeping \(one of: Understanding the task meaning, .*Idle, Paused, Closed\)\n$/,
    );
  });
});

describe('harness approve, reject, command', () => {
  it('delivers approvals and commands and reports them', async () => {
    const sessionId = uniqueId('ops');
    await client.submit(sessionId, { text: 'Prepare the quarterly report' }, { wait: true });

    // No call waits for approval: the CLI says so and sends nothing.
    const approve = await harness(['approve', sessionId, 'a-1', '--note', 'ship it']);
    expect(approve).toMatchObject({
      code: 3,
      stdout: '',
      stderr: `harness: no call waits for approval a-1 in session ${sessionId} (waiting: none)\n`,
    });
    expect((await harness(['reject', sessionId, 'a-2'])).code).toBe(3);
    const goals = await harness([
      'command',
      sessionId,
      'set-goals',
      '--phase-goal',
      'Draft the summary',
      '--command-id',
      'c-9',
    ]);
    expect(goals).toMatchObject({ code: 0, stdout: `command set-goals (c-9) sent to session ${sessionId}\n` });
    expect((await harness(['command', sessionId, 'pause'])).code).toBe(0);

    const view = await waitFor(
      () => client.snapshot(sessionId),
      (v) => v.counts.controlEvents === 2,
    );
    expect(view.status).toBe('paused');
    expect(view.recentControlEvents.map((e) => e.kind)).toEqual(['command', 'command']);
    expect(view.goals.phase?.text).toBe('Draft the summary');

    const unknown = await harness(['command', sessionId, 'reboot']);
    expect(unknown).toMatchObject({
      code: 2,
      stderr: 'harness: unknown command "reboot" (one of: set-goals, pause, resume, close, interrupt, set-budget)\n',
    });
    const emptyGoals = await harness(['command', sessionId, 'set-goals']);
    expect(emptyGoals.code).toBe(2);
    expect(emptyGoals.stderr).toContain('give at least one of session, phase');
  });
});

describe('harness help and usage', () => {
  it('documents the exit codes in --help and exits 0', async () => {
    const run = await harness(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      'Exit codes: 0 ok, 1 unexpected error, 2 usage or invalid input (also: the Session is closed), ' +
        '3 not found (a Session, or a memory item), 4 server unreachable, 5 timed out',
    );
    for (const command of [
      'dev',
      'worker',
      'send',
      'inspect',
      'watch',
      'list',
      'approve',
      'reject',
      'command',
      'memory',
      'eval',
    ]) {
      expect(run.stdout).toMatch(new RegExp(`\\n  ${command}\\b`));
    }
  });

  it('shows the help on stderr and exits 2 when no command is given', async () => {
    const run = await harness([]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('Usage: harness [options] [command]');
    const memory = await harness(['memory']);
    expect(memory).toMatchObject({ code: 2, stdout: '' });
    expect(memory.stderr).toContain('Usage: harness memory [options] [command]');
  });

  it('prints the version from package.json', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(await harness(['--version'])).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('parses numbers and durations while parsing, naming the option', async () => {
    const limit = await harness(['inspect', 'anything', '--limit', 'ten']);
    expect(limit).toMatchObject({
      code: 2,
      stderr: "harness: option '--limit <n>' argument 'ten' is invalid. must be a positive integer\n",
    });
    const timeout = await harness(['send', 'anything', 'hello', '--wait', '--timeout', 'soon']);
    expect(timeout.code).toBe(2);
    expect(timeout.stderr).toContain("option '--timeout <duration>' argument 'soon' is invalid");
  });

  it('runs as the README says: `npm run harness -- <command>` in a fresh checkout', async () => {
    const run = await spawnRun('npm', ['run', '--silent', 'harness', '--', '--version']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('is on the PATH after `npm link`, as the README says, and runs from any folder', async () => {
    // A prefix of the test's own, so the machine's global folder is left alone.
    const prefix = mkdtempSync(join(tmpdir(), 'npm-prefix-'));
    const link = await spawnRun('npm', ['link', '--offline', '--no-audit', '--no-fund'], {
      env: { npm_config_prefix: prefix },
    });
    expect(link.code).toBe(0);
    const elsewhere = mkdtempSync(join(tmpdir(), 'elsewhere-'));
    const run = await spawnRun('harness', ['memory', 'list', '--db', join(elsewhere, 'memory.db')], {
      env: { PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}` },
      cwd: elsewhere,
    });
    expect(run).toMatchObject({ code: 0, stdout: 'no memory items\n', stderr: '' });
  });

  it('refuses TLS options for `worker`, which cannot use them yet', async () => {
    const run = await harness(['worker', '--api-key', 'secret']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'harness: harness worker does not support TLS or API keys yet; run it next to the cluster\n',
    );
  });
});

describe('harness memory', () => {
  it('adds, lists and removes memory items in the SQLite store, which outlives each process', async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'cli-memory-')), 'memory.db');
    const added = await harness([
      'memory',
      'add',
      'The user prefers tables over prose',
      '--tag',
      'style',
      '--scope',
      'global',
      '--db',
      db,
    ]);
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const id = /added memory (\S+)/.exec(added.stdout)?.[1];
    expect(id).toBeDefined();
    await harness(['memory', 'add', 'Reports go to the ops channel', '--scope', 'session:weekly', '--db', db]);

    const listed = await harness(['memory', 'list', '--db', db]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('The user prefers tables over prose');
    expect(listed.stdout).toContain('Reports go to the ops channel');

    expect(await harness(['memory', 'rm', id!, '--db', db])).toMatchObject({
      code: 0,
      stdout: `removed memory ${id}\n`,
    });
    const after = await harness(['memory', 'list', '--db', db]);
    expect(after.stdout).not.toContain('prefers tables');
    const again = await harness(['memory', 'rm', id!, '--db', db]);
    expect(again).toMatchObject({ code: 3, stderr: `harness: no memory item ${id}\n` });
  });

  it('opens the database the worker opens: HARNESS_MEMORY_DB, else HARNESS_DATA_DIR/memory.db', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cli-data-'));
    const added = await harness(['memory', 'add', 'Deploys happen on Tuesdays'], {
      env: { HARNESS_DATA_DIR: dataDir },
    });
    expect(added).toMatchObject({ code: 0, stderr: '' });
    expect(loadConfig({ HARNESS_DATA_DIR: dataDir }).memoryDb).toBe(join(dataDir, 'memory.db'));
    expect(existsSync(join(dataDir, 'memory.db'))).toBe(true);
    const listed = await harness(['memory', 'list', '--json'], {
      env: { HARNESS_MEMORY_DB: join(dataDir, 'memory.db'), HARNESS_DATA_DIR: '/nonexistent' },
    });
    expect((JSON.parse(listed.stdout) as Array<{ text: string }>).map((m) => m.text)).toEqual([
      'Deploys happen on Tuesdays',
    ]);
  });
});

/** A 127.0.0.1 port that nothing listens on. */
async function closedPort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}
