/**
 * MCP servers as catalog toolsets, against real servers: the fixture over stdio (spawned with
 * `node --import tsx`) and over streamable HTTP on 127.0.0.1 (in this process, or in child processes
 * for the large-catalog refresh), plus servers that cannot start.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexedCatalog, type CatalogChanges, type ToolsetEntry } from '../capabilities/catalog.js';
import { loadCatalogDir } from '../capabilities/catalog-files.js';
import { McpCatalog } from '../capabilities/mcp-catalog.js';
import {
  loadMcpConfigFile,
  mcpToolsetId,
  parseMcpConfig,
  type McpServerDefinition,
} from '../capabilities/mcp-config.js';
import { connectMcpToolsets, withMcpToolsets } from '../capabilities/mcp-toolsets.js';
import { Draw, SEED, benchQueries, prng, syntheticEntries } from '../bench/recall.js';
import { spawnHttpFixture } from './support/mcp-fixture.js';
import { startHttpFixture, type FixtureTool, type HttpFixture } from './support/mcp-fixture-server.js';
import { freePorts } from './support/ports.js';

const FIXTURE = resolve('test/support/mcp-fixture-server.ts');
/**
 * A config entry that runs the fixture over stdio. Its start-up bound is generous: on a loaded
 * machine several `node --import tsx` processes starting at once take longer than the 10 s default.
 */
const fixtureEntry = (env: Record<string, string> = {}, extra: Record<string, unknown> = {}) => ({
  command: process.execPath,
  args: ['--import', 'tsx', FIXTURE],
  env,
  timeoutMs: 60_000,
  ...extra,
});

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-catalog-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function servers(mcpServers: Record<string, unknown>): McpServerDefinition[] {
  const parsed = parseMcpConfig({ mcpServers }, 'mcp.json');
  expect(parsed.problems).toEqual([]);
  return parsed.servers;
}

/** Replaces the fixture's control file whole (by rename), so its 50 ms poll never reads half a file. */
function writeControl(file: string, tools: FixtureTool[], exit = false): void {
  writeFileSync(`${file}.next`, JSON.stringify({ tools, exit }));
  renameSync(`${file}.next`, file);
}

const toolNames = (toolset: ToolsetEntry | undefined) => toolset?.tools.map((t) => t.name);

describe('the mcpServers config', () => {
  it('normalises server names to catalog ids', () => {
    expect(mcpToolsetId('github')).toBe('mcp-github');
    expect(mcpToolsetId('My Server_2.0')).toBe('mcp-my-server-2-0');
    expect(mcpToolsetId('--Café--')).toBe('mcp-cafe');
    expect(mcpToolsetId('天气')).toMatch(/^mcp-[0-9a-f]{12}$/);
    expect(mcpToolsetId('x'.repeat(100))).toHaveLength(64);
  });

  it('reports each bad entry by file and field and keeps the good ones', () => {
    const parsed = parseMcpConfig(
      {
        mcpServers: {
          good: { command: 'node', args: ['server.js'], cwd: 'servers', approvalRequired: ['delete'] },
          remote: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
          numeric: { command: 42 },
          badArgs: { command: 'node', args: 'server.js' },
          nothing: { env: {} },
          ftp: { url: 'ftp://example.com' },
          legacy: { type: 'sse', url: 'http://127.0.0.1:1/sse' },
          'Good!': { command: 'node' },
          unset: { url: 'http://127.0.0.1/${NOT_SET_ANYWHERE}/mcp' },
          off: { command: 'node', disabled: true },
          slow: { command: 'node', timeoutMs: 5 },
        },
      },
      'config/mcp.json',
      { baseDir: '/srv/harness', env: { TOKEN: 'secret' } },
    );
    expect(parsed.servers.map((s) => s.id)).toEqual(['mcp-good', 'mcp-remote']);
    expect(parsed.servers[0]?.config).toMatchObject({ cwd: '/srv/harness/servers', approvalRequired: ['delete'] });
    expect(parsed.servers[1]?.config).toMatchObject({ headers: { Authorization: 'Bearer secret' } });
    expect(parsed.problems.map((p) => p.file)).toEqual(Array(8).fill('config/mcp.json'));
    expect(parsed.problems.map((p) => p.message)).toEqual([
      'mcpServers.numeric.command: must be a string',
      'mcpServers.badArgs.args: must be a list of strings',
      'mcpServers.nothing: needs "command" (a stdio server) or "url" (a streamable HTTP server)',
      'mcpServers.ftp.url: must be an http:// or https:// URL',
      'mcpServers.legacy.type: "sse" (the deprecated HTTP+SSE transport) is not supported; use a streamable HTTP url',
      'mcpServers.Good!: its toolset id "mcp-good" is already used by mcpServers.good; rename one of them',
      'mcpServers.unset.url: refers to ${NOT_SET_ANYWHERE}, which is not set',
      'mcpServers.slow.timeoutMs: must be at least 100',
    ]);
  });

  it('reports a file that is missing, not JSON, or has no mcpServers', () => {
    const missing = join(dir, 'missing.json');
    expect(loadMcpConfigFile(missing).problems).toEqual([{ file: missing, message: 'cannot be read: ENOENT' }]);
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{ "mcpServers": ');
    expect(loadMcpConfigFile(broken).problems[0]?.message).toMatch(/^not valid JSON/);
    const empty = join(dir, 'empty.json');
    writeFileSync(empty, '{}');
    expect(loadMcpConfigFile(empty).problems).toEqual([{ file: empty, message: 'mcpServers: is required' }]);
  });

  it('parses the sample config at the repository root', () => {
    const parsed = loadMcpConfigFile('mcp.example.json', { env: {} });
    expect(parsed.problems).toEqual([]);
    expect(parsed.servers.length).toBeGreaterThan(0);
  });
});

describe('McpCatalog against real servers', () => {
  let http: HttpFixture;
  let mcp: McpCatalog;
  let control: string;
  const changes: ToolsetEntry[][] = [];
  const logged: string[] = [];
  let started: Awaited<ReturnType<McpCatalog['start']>>;

  beforeAll(async () => {
    http = await startHttpFixture();
    control = join(dir, 'control.json');
    writeControl(control, [{ name: 'first', description: 'The first tool.' }]);
    mcp = new McpCatalog(
      servers({
        fixture: fixtureEntry(
          {},
          {
            approvalRequired: ['add', 'no_such_tool'],
            tags: ['fixture'],
            riskTags: ['local'],
            toolRiskTags: { add: ['arithmetic', 'local'] },
          },
        ),
        controlled: fixtureEntry({ MCP_FIXTURE_CONTROL: control }),
        'Remote HTTP': { url: http.url, requiresApproval: true, description: 'Remote fixture tools.' },
        missing: { command: 'definitely-not-a-command-6d1f' },
        unreachable: { url: `http://127.0.0.1:${await closedPort()}/mcp` },
        crash: fixtureEntry({ MCP_FIXTURE_MODE: 'crash' }),
        hang: fixtureEntry({ MCP_FIXTURE_MODE: 'hang' }, { timeoutMs: 1_500 }),
      }),
      { file: 'mcp.json', onChange: (toolsets) => changes.push(toolsets), log: (line) => logged.push(line) },
    );
    // Returns although `hang` never answers: its own timeout ends the wait for it (its problem,
    // checked below, says so). A wall-clock bound here failed under load, so none is asserted.
    started = await mcp.start();
  });
  afterAll(async () => {
    await mcp?.close();
    await http?.close();
  });

  it('lists the tools of a stdio server with name, description and input schema', () => {
    const toolset = mcp.toolsets().find((t) => t.id === 'mcp-fixture');
    expect(toolset).toMatchObject({
      kind: 'toolset',
      name: 'MCP Fixture',
      description: 'Fixture server for tests: echoes text and adds numbers.',
      tags: ['fixture'],
      source: 'mcp:fixture',
    });
    expect(toolset?.tools).toEqual([
      {
        name: 'echo',
        description: 'Echo the given text back unchanged.',
        inputSchema: expect.objectContaining({ type: 'object', required: ['text'] }) as object,
        requiresApproval: false,
        riskTags: ['local'],
      },
      {
        name: 'add',
        description: 'Add two numbers and return the sum.',
        inputSchema: expect.objectContaining({ type: 'object', required: ['a', 'b'] }) as object,
        requiresApproval: true,
        // The server's risk tags and the tool's own, for the approval policy.
        riskTags: ['local', 'arithmetic'],
      },
    ]);
  });

  it('lists the tools of a streamable HTTP server, all requiring approval when the entry says so', () => {
    const toolset = mcp.toolsets().find((t) => t.id === 'mcp-remote-http');
    expect(toolset).toMatchObject({ source: 'mcp:Remote HTTP', description: 'Remote fixture tools.' });
    expect(toolset?.tools.map((t) => [t.name, t.requiresApproval])).toEqual([
      ['echo', true],
      ['add', true],
    ]);
  });

  it('reports and skips servers that do not start, crash or time out', () => {
    expect(started.toolsets.map((t) => t.id)).toEqual(['mcp-fixture', 'mcp-controlled', 'mcp-remote-http']);
    const messages = started.problems.map((p) => p.message);
    expect(started.problems.every((p) => p.file === 'mcp.json')).toBe(true);
    expect(messages).toEqual([
      'mcpServers.fixture.approvalRequired: the server lists no tool named "no_such_tool"',
      expect.stringMatching(/^mcpServers\.missing: skipped: spawn definitely-not-a-command-6d1f ENOENT/),
      expect.stringMatching(/^mcpServers\.unreachable: skipped: fetch failed \(connect ECONNREFUSED/),
      expect.stringMatching(/^mcpServers\.crash: skipped: .*Connection closed.*stderr: fixture: crashing on purpose/),
      'mcpServers.hang: skipped: starting the server and listing its tools took longer than 1500 ms',
    ]);
    expect(mcp.status().map((s) => [s.name, s.state, s.tools])).toEqual([
      ['fixture', 'ready', 2],
      ['controlled', 'ready', 1],
      ['Remote HTTP', 'ready', 2],
      ['missing', 'failed', 0],
      ['unreachable', 'failed', 0],
      ['crash', 'failed', 0],
      ['hang', 'failed', 0],
    ]);
    expect(changes).toHaveLength(1);
  });

  it('picks up a changed tool list on refresh, over stdio and over HTTP', async () => {
    http.tools = [{ name: 'echo', description: 'Echo, now alone.' }];
    writeControl(control, [
      { name: 'first', description: 'The first tool.' },
      { name: 'second', description: 'A tool added while the worker runs.' },
    ]);
    // The fixture notices its control file within ~50 ms; refresh until it has.
    await expect
      .poll(async () => toolNames((await mcp.refresh()).toolsets.find((t) => t.id === 'mcp-controlled')), {
        timeout: 10_000,
        interval: 200,
      })
      .toEqual(['first', 'second']);
    expect(toolNames(mcp.toolsets().find((t) => t.id === 'mcp-remote-http'))).toEqual(['echo']);
    expect(changes.at(-1)?.find((t) => t.id === 'mcp-controlled')?.tools).toHaveLength(2);
  });

  it('follows tools/list_changed notifications without a refresh call', async () => {
    const before = changes.length;
    writeControl(control, [{ name: 'third', description: 'Announced by the server itself.' }]);
    await expect
      .poll(() => toolNames(mcp.toolsets().find((t) => t.id === 'mcp-controlled')), { timeout: 30_000 })
      .toEqual(['third']);
    expect(changes.length).toBeGreaterThan(before);
  });

  it('drops the toolset of a server that dies, and brings it back on the next refresh', async () => {
    writeControl(control, [], true);
    await expect.poll(() => mcp.toolsets().map((t) => t.id), { timeout: 30_000 }).not.toContain('mcp-controlled');
    expect(logged.some((line) => line.includes('mcpServers.controlled: connection closed'))).toBe(true);
    expect(mcp.status().find((s) => s.name === 'controlled')?.state).toBe('failed');

    writeControl(control, [{ name: 'reborn', description: 'Back after a restart.' }]);
    const report = await mcp.refresh();
    expect(toolNames(report.toolsets.find((t) => t.id === 'mcp-controlled'))).toEqual(['reborn']);
  });

  it('shares one refresh between concurrent callers', async () => {
    const [a, b] = [mcp.refresh(), mcp.refresh()];
    expect(a).toBe(b);
    await a;
  });
});

describe('a refresh of a large catalog', () => {
  const SERVERS = 3;
  const TOOLS = 200;
  const before = (server: number): FixtureTool[] =>
    Array.from({ length: TOOLS }, (_, i) => ({
      name: `convert_${server}_${i}`,
      description: `Convert spreadsheet ${i} of server ${server} into a quarterly report.`,
    }));
  const after = (server: number): FixtureTool[] =>
    Array.from({ length: TOOLS }, (_, i) => ({
      name: `archive_${server}_${i}`,
      description: `Archive mailbox folder ${i} of server ${server} as zebra parcels.`,
    }));

  /** Yields after every piece of every staged entry, so a probe certainly runs while an update is staged. */
  class ObservedCatalog extends IndexedCatalog {
    staging = false;
    override async updateGradually(changes: CatalogChanges): Promise<void> {
      this.staging = true;
      try {
        await super.updateGradually(changes, 0);
      } finally {
        this.staging = false;
      }
    }
  }

  it('recalls either the old or the new catalog while it runs, and what a full rebuild does after', async () => {
    const { vocabulary, queries: benchQueryList } = benchQueries();
    const base = syntheticEntries(10_000, vocabulary, new Draw(prng(SEED)));
    const queries = [
      'archive the mailbox as zebra parcels',
      'convert a spreadsheet into a quarterly report',
      'fixture server tools',
      ...benchQueryList.slice(0, 5),
    ];
    const snapshot = (catalog: IndexedCatalog) => JSON.stringify(queries.map((q) => catalog.recall(q)));
    const fixtures = await Promise.all(Array.from({ length: SERVERS }, (_, s) => spawnHttpFixture(before(s))));
    const configPath = join(dir, 'large.json');
    writeFileSync(
      configPath,
      JSON.stringify({ mcpServers: Object.fromEntries(fixtures.map((f, s) => [`large-${s}`, { url: f.url }])) }),
    );
    const catalog = new ObservedCatalog(base);
    const { mcp, applied } = await connectMcpToolsets({ configPath, catalog, baseEntries: base });
    try {
      const old = snapshot(new IndexedCatalog([...base, ...mcp.toolsets()]));
      expect(snapshot(catalog)).toBe(old);

      await Promise.all(fixtures.map((f, s) => f.setTools(after(s))));
      const seen: Array<{ during: boolean; recalled: string }> = [];
      const probe = setInterval(() => seen.push({ during: catalog.staging, recalled: snapshot(catalog) }), 1);
      try {
        await mcp.refresh();
        await applied();
      } finally {
        clearInterval(probe);
      }

      expect(mcp.toolsets().map((t) => t.tools[0]?.name)).toEqual(fixtures.map((_, s) => `archive_${s}_0`));
      const fresh = snapshot(new IndexedCatalog([...base, ...mcp.toolsets()]));
      // Identical to a full rebuild: the same candidates in the same order, with the same scores.
      expect(snapshot(catalog)).toBe(fresh);
      expect(fresh).not.toBe(old);
      // Every server's toolset changed in one update: a recall in the middle of it saw all or none.
      expect(seen.filter((s) => s.during).length).toBeGreaterThan(0);
      for (const { recalled } of seen) expect([old, fresh]).toContain(recalled);
      expect(catalog.recall(queries[0] as string).toolsets.map((c) => c.id)).toEqual(
        expect.arrayContaining(fixtures.map((_, s) => `mcp-large-${s}`)),
      );
    } finally {
      await mcp.close();
      await Promise.all(fixtures.map((f) => f.close()));
    }
  });
});

describe('connectMcpToolsets', () => {
  it('adds MCP toolsets to the catalog that recall searches, and refreshes on an interval', async () => {
    const http = await startHttpFixture([{ name: 'find_book', description: 'Find a book by its ISBN.' }]);
    const configPath = join(dir, 'mcp.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        mcpServers: {
          library: { url: http.url, description: 'Library catalogue.' },
          tools: fixtureEntry(),
          broken: { command: 'definitely-not-a-command-6d1f' },
          bad: { url: 42 },
        },
      }),
    );
    const base = loadCatalogDir('catalog').entries;
    const catalog = new IndexedCatalog(base);
    const { mcp, problems } = await connectMcpToolsets({
      configPath,
      catalog,
      baseEntries: base,
      refreshIntervalMs: 300,
    });
    try {
      expect(problems.map((p) => p.message)).toEqual([
        'mcpServers.bad.url: must be a string',
        expect.stringMatching(/^mcpServers\.broken: skipped: spawn/),
      ]);
      expect(catalog.size()).toEqual({ skills: 30, toolsets: 20 });
      expect(catalog.recall('look up the book with this ISBN').toolsets[0]).toMatchObject({
        id: 'mcp-library',
        source: 'mcp:library',
      });
      expect(catalog.recall('echo text back').toolsets[0]).toMatchObject({ id: 'mcp-tools', source: 'mcp:tools' });

      // A stateless HTTP server cannot announce changes: the interval is what notices them.
      http.tools = [{ name: 'find_isbn', description: 'Find the ISBN of a book title.' }];
      await expect.poll(() => toolNames(catalog.toolset('mcp-library')), { timeout: 10_000 }).toEqual(['find_isbn']);
    } finally {
      await mcp.close();
      await http.close();
    }
  });

  it('leaves out an MCP toolset whose id a catalog file already uses', () => {
    const file: ToolsetEntry = {
      kind: 'toolset',
      id: 'mcp-x',
      name: 'File',
      description: 'd',
      tags: [],
      source: 'catalog/toolsets/mcp-x.json',
      tools: [],
    };
    const live: ToolsetEntry = { ...file, name: 'Live', source: 'mcp:x' };
    const merged = withMcpToolsets([file], [live]);
    expect(merged.entries).toEqual([file]);
    expect(merged.problems).toEqual([
      { file: 'mcp:x', message: 'toolset id "mcp-x" is already used by catalog/toolsets/mcp-x.json; skipped' },
    ]);
  });
});

/** A 127.0.0.1 port that nothing listens on. */
async function closedPort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}
