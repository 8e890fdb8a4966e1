/**
 * The MCP fixture server (mcp-fixture-server.ts) run as its own process: as a stdio entry of an MCP
 * config (its tools listed in a control file the test writes, `add` needing approval), shared by the
 * tests that drive the agent loop through it; or as a streamable HTTP server whose tools its parent
 * sets over IPC, so the parent's event loop carries only the client's side of each request.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FixtureTool } from './mcp-fixture-server.js';
import { loadCatalogDir } from '../../capabilities/catalog-files.js';
import { IndexedCatalog } from '../../capabilities/catalog.js';
import { McpCatalog } from '../../capabilities/mcp-catalog.js';
import { parseMcpConfig } from '../../capabilities/mcp-config.js';
import { withMcpToolsets } from '../../capabilities/mcp-toolsets.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURE = join(ROOT, 'test', 'support', 'mcp-fixture-server.ts');

/**
 * Writes the control file into `dir` and returns the `mcpServers.fixture` entry that runs the server,
 * with `env` added to its environment (e.g. MCP_FIXTURE_JOURNAL).
 */
export function fixtureMcpEntry(
  dir: string,
  tools: string[] = ['echo', 'add', 'sleep', 'fail'],
  env: Record<string, string> = {},
) {
  const control = join(dir, 'tools.json');
  writeFileSync(
    control,
    JSON.stringify({ tools: tools.map((name) => ({ name, description: `The fixture's ${name} tool.` })) }),
  );
  return {
    command: process.execPath,
    args: ['--import', 'tsx', FIXTURE],
    env: { MCP_FIXTURE_CONTROL: control, ...env },
    description: 'Fixture tools: echo text, add numbers (needs approval), sleep, fail.',
    tags: ['fixture', 'echo', 'add', 'sleep', 'fail'],
    approvalRequired: ['add'],
    timeoutMs: 60_000,
  };
}

export interface ChildHttpFixture {
  /** The `url` of an `mcpServers` entry. */
  url: string;
  /** Resolves once every later request to the server sees `tools`. */
  setTools(tools: FixtureTool[]): Promise<void>;
  close(): Promise<void>;
}

function reply<T>(child: ChildProcess, field: keyof T & string): Promise<T> {
  return new Promise((resolveReply, reject) => {
    const onMessage = (message: T) => {
      if (typeof message !== 'object' || message === null || !(field in message)) return;
      child.off('exit', onExit);
      child.off('message', onMessage);
      resolveReply(message);
    };
    const onExit = (code: number | null) => {
      child.off('message', onMessage);
      reject(new Error(`the MCP fixture exited (code ${code}) before it answered`));
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** The fixture over streamable HTTP in a child process, serving `tools`. */
export async function spawnHttpFixture(tools: FixtureTool[]): Promise<ChildHttpFixture> {
  const child = fork(FIXTURE, [], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, MCP_FIXTURE_MODE: 'http' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const setTools = async (next: FixtureTool[]) => {
    const answer = reply<{ tools: number }>(child, 'tools');
    child.send({ tools: next });
    await answer;
  };
  try {
    const { url } = await reply<{ url: string }>(child, 'url');
    await setTools(tools);
    return {
      url,
      setTools,
      close: async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.disconnect();
        await exited;
      },
    };
  } catch (err) {
    child.kill();
    throw err;
  }
}

/**
 * The demo catalog with these MCP servers connected (the `mcpServers` object of an MCP config): the
 * catalog follows their tool lists as they change, as the worker's does. Throws when the config or a
 * server has a problem, so no test runs against a partial catalog. Close `mcp` after the test.
 */
export async function connectedCatalog(
  mcpServers: Record<string, unknown>,
): Promise<{ catalog: IndexedCatalog; mcp: McpCatalog }> {
  const { servers, problems } = parseMcpConfig({ mcpServers }, 'mcp.json');
  if (problems.length > 0) throw new Error(`MCP config problems: ${JSON.stringify(problems)}`);
  const base = loadCatalogDir('catalog').entries;
  const catalog = new IndexedCatalog(base);
  const mcp = new McpCatalog(servers, {
    onChange: (toolsets) => catalog.replace(withMcpToolsets(base, toolsets).entries),
  });
  const started = await mcp.start();
  if (started.problems.length > 0) {
    await mcp.close();
    throw new Error(`MCP servers did not start: ${JSON.stringify(started.problems)}`);
  }
  return { catalog, mcp };
}
