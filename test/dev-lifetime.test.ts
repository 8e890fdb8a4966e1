/**
 * The Temporal dev server that `npm start` runs never outlives it (dev/server-guard.cjs, dev/dev.ts):
 * `npm start` and its dev entry run as real processes on free ports with their own data folder, are
 * SIGKILLed once up, and the server's port must be free soon after.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, inject, it } from 'vitest';
import { freePorts } from './support/ports.js';

/** How long the server may take to go after its starter died: the worker drains first, on a loaded machine. */
const GONE_WITHIN_MS = 30_000;
/** A whole stack starts in 20 s alone, and in up to two minutes on a machine loaded by other work. */
const TEST_TIMEOUT_MS = 400_000;

const started: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(() => {
  for (const child of started.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Whether something accepts connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Milliseconds until nothing listens on `port`, or null if something still does after `timeoutMs`. */
async function freedWithin(port: number, timeoutMs: number): Promise<number | null> {
  const since = Date.now();
  while (Date.now() - since < timeoutMs) {
    if (!(await listening(port))) return Date.now() - since;
    await new Promise((r) => setTimeout(r, 200));
  }
  return null;
}

/** Starts `command` as the dev stack on free ports; resolves with its process and ports once its worker runs. */
async function startStack(command: string, args: string[]): Promise<{ child: ChildProcess; port: number }> {
  const [port, uiPort, httpPort, gatewayPort] = (await freePorts(4)) as [number, number, number, number];
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-dev-lifetime-'));
  dirs.push(dataDir);
  const child = spawn(command, args, {
    env: {
      ...process.env,
      HARNESS_DATA_DIR: dataDir,
      HARNESS_DEV_PORT: String(port),
      HARNESS_DEV_UI_PORT: String(uiPort),
      HARNESS_DEV_HTTP_PORT: String(httpPort),
      HARNESS_GATEWAY_PORT: String(gatewayPort),
      HARNESS_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      HARNESS_MODEL_PROVIDER: 'local',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      // The gateway starts once the worker is built, right before it polls.
      if (/worker polling task queue/.test(output)) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}) before it was up:\n${output}`)));
  });
  expect(await listening(port)).toBe(true);
  return { child, port };
}

it(
  'npm start SIGKILLed: its dev server stops and frees the port',
  async () => {
    const { child, port } = await startStack('npm', ['start', '--silent']);
    child.kill('SIGKILL');
    const freed = await freedWithin(port, GONE_WITHIN_MS);
    console.log(`npm start SIGKILLed: port ${port} free after ${freed} ms`);
    expect(freed).not.toBeNull();
  },
  TEST_TIMEOUT_MS,
);

it(
  'the dev process SIGKILLed (no exit handler runs): its guardian stops the server and frees the port',
  async () => {
    const { child, port } = await startStack(process.execPath, ['--import', 'tsx', 'dev/dev.ts']);
    child.kill('SIGKILL');
    const freed = await freedWithin(port, GONE_WITHIN_MS);
    console.log(`dev process SIGKILLed: port ${port} free after ${freed} ms`);
    expect(freed).not.toBeNull();
  },
  TEST_TIMEOUT_MS,
);
