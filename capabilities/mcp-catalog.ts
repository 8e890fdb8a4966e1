/**
 * Live MCP servers as catalog toolsets. A config file in the common `mcpServers` shape names stdio
 * and streamable-HTTP servers; each one that starts becomes the toolset `mcp-<name>` with the tools
 * it lists. Servers stay connected, so `refresh()` (or the interval, or the server's own
 * `tools/list_changed` notification) re-lists their tools without a worker restart. A server that
 * does not start within its timeout, or dies, is reported and left out until a refresh brings it back.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { CatalogEntry, IndexedCatalog, ToolDeclaration, ToolsetEntry } from './catalog.js';
import type { CatalogProblem } from './catalog-files.js';

export const DEFAULT_MCP_TIMEOUT_MS = 10_000;
/** The `_meta` key under which a tool call carries the Session's call id. */
export const MCP_CALL_ID_META = 'session-harness/callId';
/** Bound on one tool call when the server entry sets neither `toolTimeoutMs` nor `timeoutMs`. */
export const DEFAULT_MCP_TOOL_TIMEOUT_MS = 60_000;

const text = () => z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') });
const stringMap = () => z.record(z.string(), text(), { error: 'must be an object of string values' });
const Tags = z
  .union([z.string(), z.array(z.string())], { error: 'must be a comma-separated string or a list of strings' })
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((t) => t.trim()).filter(Boolean));

/** Keys every server entry may carry besides how to reach it. Unknown keys (other clients') are ignored. */
const CommonFields = {
  /** Every tool of this server needs the user's approval. */
  requiresApproval: z.boolean({ error: 'must be true or false' }).default(false),
  /** These tools need the user's approval. */
  approvalRequired: z.array(text(), { error: 'must be a list of tool names' }).default([]),
  /** The toolset's name, description and tags in the catalog; by default from the server itself. */
  title: text().trim().min(1, 'must not be empty').optional(),
  description: text().trim().min(1, 'must not be empty').optional(),
  tags: Tags.default([]),
  /** Bound on starting (or reaching) the server and listing its tools. */
  timeoutMs: z
    .number({ error: 'must be a number' })
    .int('must be a whole number of milliseconds')
    .min(100, 'must be at least 100')
    .max(300_000, 'must be at most 300000')
    .optional(),
  /** Bound on one tool call; `timeoutMs` when absent (starting a server can be quicker than its work). */
  toolTimeoutMs: z
    .number({ error: 'must be a number' })
    .int('must be a whole number of milliseconds')
    .min(100, 'must be at least 100')
    .max(3_600_000, 'must be at most 3600000')
    .optional(),
  disabled: z.boolean({ error: 'must be true or false' }).default(false),
};

export const McpStdioServer = z.object({
  type: z.literal('stdio', { error: 'must be "stdio" for a server with a command' }).optional(),
  command: text().trim().min(1, 'must not be empty'),
  args: z.array(text(), { error: 'must be a list of strings' }).default([]),
  env: stringMap().default({}),
  /** Relative to the config file's folder. */
  cwd: text().optional(),
  ...CommonFields,
});
export type McpStdioServer = z.infer<typeof McpStdioServer>;

export const McpHttpServer = z.object({
  type: z
    .enum(['http', 'streamable-http', 'streamableHttp'], { error: 'must be "http" for a server with a url' })
    .optional(),
  /** Checked as a URL after `${VAR}` references are expanded. */
  url: text().trim().min(1, 'must not be empty'),
  headers: stringMap().default({}),
  ...CommonFields,
});
export type McpHttpServer = z.infer<typeof McpHttpServer>;

export type McpServerConfig = McpStdioServer | McpHttpServer;

export interface McpServerDefinition {
  /** The key under `mcpServers`. */
  name: string;
  /** `mcp-<name>`, normalised to the catalog id rules. */
  id: string;
  config: McpServerConfig;
}

export interface ParsedMcpConfig {
  servers: McpServerDefinition[];
  problems: CatalogProblem[];
}

/** `mcp-<name>` under the catalog id rules: lowercase words joined by single hyphens, at most 64 characters. */
export function mcpToolsetId(name: string): string {
  const words = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  // A name with no ASCII letters or digits still needs a stable, distinct id.
  const base = words === '' ? createHash('sha256').update(name).digest('hex').slice(0, 12) : words;
  return `mcp-${base}`.slice(0, 64).replace(/-+$/, '');
}

const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${VAR}` and `${VAR:-default}` in command, args, env, cwd, url and headers with values from
 * `env`, so secrets (API tokens in headers) stay out of the file. Names each field that refers to an unset
 * variable without a default.
 */
function expandEnv(config: McpServerConfig, env: NodeJS.ProcessEnv, field: string): string[] {
  const missing: string[] = [];
  const expand = (value: string, where: string) =>
    value.replace(ENV_REFERENCE, (whole, name: string, fallback: string | undefined) => {
      const found = env[name] ?? fallback;
      if (found === undefined) missing.push(`${field}.${where}: refers to \${${name}}, which is not set`);
      return found ?? whole;
    });
  const expandMap = (map: Record<string, string>, where: string) => {
    for (const key of Object.keys(map)) map[key] = expand(map[key] ?? '', `${where}.${key}`);
  };
  if ('command' in config) {
    config.command = expand(config.command, 'command');
    config.args = config.args.map((arg, i) => expand(arg, `args.${i}`));
    expandMap(config.env, 'env');
    if (config.cwd !== undefined) config.cwd = expand(config.cwd, 'cwd');
  } else {
    config.url = expand(config.url, 'url');
    expandMap(config.headers, 'headers');
  }
  return missing;
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Parses a config object. Each bad server entry is reported (`file`, field path and reason) and
 * skipped; the others are kept. `baseDir` resolves relative `cwd` values.
 */
export function parseMcpConfig(
  raw: unknown,
  file: string,
  options: { baseDir?: string; env?: NodeJS.ProcessEnv } = {},
): ParsedMcpConfig {
  const servers: McpServerDefinition[] = [];
  const problems: CatalogProblem[] = [];
  const problem = (message: string) => problems.push({ file, message });
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problem('must be a JSON object with an "mcpServers" object');
    return { servers, problems };
  }
  const entries = (raw as { mcpServers?: unknown }).mcpServers;
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) {
    problem(`mcpServers: ${entries === undefined ? 'is required' : 'must be an object of named servers'}`);
    return { servers, problems };
  }
  const byId = new Map<string, string>();
  for (const [name, entry] of Object.entries(entries as Record<string, unknown>)) {
    const field = `mcpServers.${name}`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      problem(`${field}: must be an object`);
      continue;
    }
    const type = (entry as { type?: unknown }).type;
    if (type === 'sse') {
      problem(`${field}.type: "sse" (the deprecated HTTP+SSE transport) is not supported; use a streamable HTTP url`);
      continue;
    }
    const schema = 'command' in entry ? McpStdioServer : 'url' in entry ? McpHttpServer : undefined;
    if (!schema) {
      problem(`${field}: needs "command" (a stdio server) or "url" (a streamable HTTP server)`);
      continue;
    }
    const parsed = schema.safeParse(entry);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problem(`${[field, ...issue.path.map(String)].join('.')}: ${issue.message}`);
      continue;
    }
    const config = parsed.data;
    if (config.disabled) continue;
    const missing = expandEnv(config, options.env ?? process.env, field);
    if (missing.length > 0) {
      for (const message of missing) problem(message);
      continue;
    }
    if ('url' in config && !isHttpUrl(config.url)) {
      problem(`${field}.url: must be an http:// or https:// URL`);
      continue;
    }
    if ('command' in config && config.cwd !== undefined) config.cwd = resolve(options.baseDir ?? '.', config.cwd);
    const id = mcpToolsetId(name);
    const taken = byId.get(id);
    if (taken !== undefined) {
      problem(`${field}: its toolset id "${id}" is already used by mcpServers.${taken}; rename one of them`);
      continue;
    }
    byId.set(id, name);
    servers.push({ name, id, config });
  }
  return { servers, problems };
}

/** Reads and parses a config file; an unreadable or non-JSON file is one problem and no servers. */
export function loadMcpConfigFile(path: string, options: { env?: NodeJS.ProcessEnv } = {}): ParsedMcpConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8').replace(/^\uFEFF/, ''));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const message = code ? `cannot be read: ${code}` : `not valid JSON: ${(err as Error).message}`;
    return { servers: [], problems: [{ file: path, message }] };
  }
  return parseMcpConfig(raw, path, { baseDir: dirname(resolve(path)), ...options });
}

export interface McpServerStatus {
  name: string;
  id: string;
  transport: 'stdio' | 'http';
  state: 'connecting' | 'ready' | 'failed';
  tools: number;
  /** Why the server is left out, while it is. */
  error?: string;
  /** ISO 8601 time of the last successful tool listing. */
  listedAt?: string;
}

export interface McpRefreshReport {
  toolsets: ToolsetEntry[];
  /** Servers left out by this refresh and why, and approval entries naming tools a server does not list. */
  problems: CatalogProblem[];
}

export interface McpCatalogOptions {
  /** Default bound on starting a server and listing its tools; an entry's `timeoutMs` wins. */
  timeoutMs?: number;
  /** Re-list every server's tools this often (and retry failed servers); off when absent or 0. */
  refreshIntervalMs?: number;
  /** Called with every toolset whenever the set of toolsets or their tools changed. */
  onChange?: (toolsets: ToolsetEntry[]) => void;
  /** Where failures after start (a server that dies, a failed background refresh) are reported. */
  log?: (line: string) => void;
  /** What problems name as their file: the config path when built by `fromFile`. */
  file?: string;
}

interface Live {
  client: Client;
  closed: boolean;
}

interface ServerSlot {
  definition: McpServerDefinition;
  status: McpServerStatus;
  live?: Live;
  toolset?: ToolsetEntry;
  /** JSON of `toolset`, computed once per listing, so a refresh compares strings instead of re-serialising. */
  fingerprint?: string;
  /** The last lines the stdio server wrote to stderr, for failure messages. */
  stderr: string[];
}

const STDERR_LINES = 5;

class TimeoutError extends Error {}

/** No configured MCP server has the toolset a call names. */
export class McpToolsetUnknown extends Error {
  override name = 'McpToolsetUnknown';
}

/** The server is configured but not connected, so the call was never sent. */
export class McpServerUnavailable extends Error {
  override name = 'McpServerUnavailable';
}

function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/** The first line of an error, with its cause when it has one (`fetch failed` says nothing alone). */
function describeError(err: unknown): string {
  const firstLine = (text: string) => text.split('\n')[0] ?? text;
  if (!(err instanceof Error)) return firstLine(String(err));
  const cause = err.cause instanceof Error ? ` (${firstLine(err.cause.message)})` : '';
  return `${firstLine(err.message)}${cause}`;
}

/** MCP toolsets from the servers of one config. Call `start()` once, `close()` at shutdown. */
export class McpCatalog {
  private readonly slots: ServerSlot[];
  private readonly file: string;
  private readonly options: McpCatalogOptions;
  private interval: NodeJS.Timeout | undefined;
  private inFlight: Promise<McpRefreshReport> | undefined;
  private readonly serverRefreshes = new Map<string, Promise<CatalogProblem | undefined>>();
  private lastFingerprint = '';
  private readonly closings = new Set<Promise<void>>();
  private closing = false;

  constructor(servers: McpServerDefinition[], options: McpCatalogOptions = {}) {
    this.options = options;
    this.file = options.file ?? 'mcp config';
    this.slots = servers.map((definition) => ({
      definition,
      status: {
        name: definition.name,
        id: definition.id,
        transport: 'command' in definition.config ? 'stdio' : 'http',
        state: 'connecting',
        tools: 0,
      },
      stderr: [],
    }));
  }

  /** A catalog over the servers of a config file, with the file's problems (bad entries, skipped). */
  static fromFile(path: string, options: McpCatalogOptions = {}): { mcp: McpCatalog; problems: CatalogProblem[] } {
    const parsed = loadMcpConfigFile(path);
    return { mcp: new McpCatalog(parsed.servers, { file: path, ...options }), problems: parsed.problems };
  }

  /** Connects every server, lists their tools and starts the refresh interval if one is set. */
  async start(): Promise<McpRefreshReport> {
    const report = await this.refresh();
    const every = this.options.refreshIntervalMs ?? 0;
    if (every > 0 && !this.interval && !this.closing) {
      // A server that stays down is reported when it goes down, not on every tick.
      let reported = new Set(report.problems.map((p) => p.message));
      this.interval = setInterval(() => {
        void this.refresh().then(({ problems }) => {
          const now = new Set(problems.map((p) => p.message));
          for (const message of now) if (!reported.has(message)) this.options.log?.(`mcp: ${message}`);
          reported = now;
        });
      }, every);
      // The interval alone must not keep a worker process alive.
      this.interval.unref();
    }
    return report;
  }

  /**
   * Re-lists every server's tools, reconnecting servers that failed or died. Concurrent calls share
   * one refresh. Resolves once every server has answered or timed out; never rejects.
   */
  refresh(): Promise<McpRefreshReport> {
    this.inFlight ??= this.refreshAll().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** The toolsets of the servers that are up, in config order. */
  toolsets(): ToolsetEntry[] {
    return this.slots.flatMap((slot) => (slot.toolset ? [slot.toolset] : []));
  }

  status(): McpServerStatus[] {
    return this.slots.map((slot) => ({ ...slot.status }));
  }

  /**
   * Calls `tool` on the server behind toolset `toolsetId`, bounded by the entry's `toolTimeoutMs`
   * (else `timeoutMs`, else one minute) and by `maxTimeoutMs`. A server that is down is reconnected first. Throws McpToolsetUnknown when no
   * configured server has this toolset id, and McpServerUnavailable when the request could not be
   * sent: both before anything ran, so the caller may retry the second. Anything thrown after the
   * request went out (timeout, lost connection, `signal` aborted) propagates as the SDK raised it.
   */
  async callTool(
    toolsetId: string,
    tool: string,
    args: Record<string, unknown>,
    options: { signal?: AbortSignal; maxTimeoutMs?: number; onProgress?: () => void; callId?: string } = {},
  ): Promise<CallToolResult> {
    const slot = this.slots.find((s) => s.definition.id === toolsetId);
    if (!slot) throw new McpToolsetUnknown(`no MCP server is configured for toolset "${toolsetId}"`);
    if (!slot.live || slot.live.closed) await this.refreshServer(slot).then(() => this.emitIfChanged());
    const live = slot.live;
    if (this.closing || !live || live.closed || slot.status.state !== 'ready') {
      throw new McpServerUnavailable(
        `MCP server "${slot.definition.name}" is not connected: ${slot.status.error ?? 'shutting down'}`,
      );
    }
    const { config } = slot.definition;
    // Not the catalog-wide start-up bound: listing tools is quick, a tool's work often is not.
    const configured = config.toolTimeoutMs ?? config.timeoutMs ?? DEFAULT_MCP_TOOL_TIMEOUT_MS;
    const timeout = Math.min(configured, options.maxTimeoutMs ?? configured);
    // The call id travels in `_meta`, so a server whose side effects must happen once can recognise
    // a call that a retried activity sends again.
    const meta = options.callId ? { _meta: { [MCP_CALL_ID_META]: options.callId } } : {};
    const result = await live.client.callTool({ name: tool, arguments: args, ...meta }, undefined, {
      timeout,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onProgress ? { onprogress: options.onProgress } : {}),
    });
    return result as CallToolResult;
  }

  /** Stops the interval and disconnects every server (stdio servers are terminated). */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.interval);
    this.interval = undefined;
    await Promise.allSettled(this.slots.map((slot) => this.disconnect(slot)));
    await Promise.allSettled([...this.closings]);
  }

  private async refreshAll(): Promise<McpRefreshReport> {
    const results = await Promise.all(this.slots.map((slot) => this.refreshServer(slot)));
    this.emitIfChanged();
    return { toolsets: this.toolsets(), problems: results.filter((p): p is CatalogProblem => p !== undefined) };
  }

  /** One server at a time: a notification arriving during a refresh joins it. */
  private refreshServer(slot: ServerSlot): Promise<CatalogProblem | undefined> {
    const running = this.serverRefreshes.get(slot.definition.name);
    if (running) return running;
    const work = this.listServer(slot).finally(() => this.serverRefreshes.delete(slot.definition.name));
    this.serverRefreshes.set(slot.definition.name, work);
    return work;
  }

  private async listServer(slot: ServerSlot): Promise<CatalogProblem | undefined> {
    if (this.closing) return undefined;
    const { name, config } = slot.definition;
    const timeoutMs = config.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
    const connected = slot.live && !slot.live.closed ? slot.live : undefined;
    try {
      const tools = await withDeadline(
        (async () => {
          const live = connected ?? (await this.connect(slot, timeoutMs));
          return this.listTools(live.client, timeoutMs);
        })(),
        timeoutMs,
        connected ? 'listing tools' : 'starting the server and listing its tools',
      );
      if (this.closing) return undefined;
      return this.accept(slot, tools);
    } catch (err) {
      const reason = err instanceof TimeoutError ? err.message : describeError(err);
      const tail = slot.stderr.length > 0 ? ` (stderr: ${slot.stderr.join(' | ')})` : '';
      // Not awaited: stopping a stuck stdio server can take seconds (stdin closed, then SIGTERM, then
      // SIGKILL), and the report should not wait on it. `close()` waits for these.
      void this.disconnect(slot);
      return this.fail(slot, `mcpServers.${name}: skipped: ${reason}${tail}`);
    }
  }

  private async connect(slot: ServerSlot, timeoutMs: number): Promise<Live> {
    await this.disconnect(slot);
    slot.stderr = [];
    slot.status.state = 'connecting';
    const { config } = slot.definition;
    const live: Live = {
      closed: false,
      client: new Client(
        { name: 'session-harness', version: '0.1.0' },
        {
          capabilities: {},
          listChanged: {
            tools: {
              autoRefresh: false,
              onChanged: () => {
                if (live !== slot.live || live.closed) return;
                // A listing already under way may have been answered before the change: list again after it.
                const running = this.serverRefreshes.get(slot.definition.name) ?? Promise.resolve(undefined);
                void running.then(() => this.refreshServer(slot)).then(() => this.emitIfChanged());
              },
            },
          },
        },
      ),
    };
    live.client.onclose = () => {
      live.closed = true;
      // A server that exits on its own: its tools can no longer be called, so its toolset goes.
      if (live === slot.live && !this.closing && slot.status.state === 'ready') {
        const tail = slot.stderr.length > 0 ? ` (stderr: ${slot.stderr.join(' | ')})` : '';
        const problem = this.fail(slot, `mcpServers.${slot.definition.name}: connection closed${tail}`);
        this.options.log?.(`mcp: ${problem.message}; the next refresh reconnects`);
        this.emitIfChanged();
      }
    };
    slot.live = live;
    if ('command' in config) {
      const transport = new StdioClientTransport({
        command: config.command,
        args: config.args,
        env: config.env,
        ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
        stderr: 'pipe',
      });
      let partial = '';
      // Read stderr even when nobody looks at it: a full pipe would block the server.
      transport.stderr?.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line.trim() !== '') slot.stderr.push(line.trim().slice(0, 300));
        slot.stderr.splice(0, Math.max(0, slot.stderr.length - STDERR_LINES));
      });
      await live.client.connect(transport, { timeout: timeoutMs });
    } else {
      const transport = new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
      });
      await live.client.connect(transport, { timeout: timeoutMs });
    }
    return live;
  }

  private async listTools(client: Client, timeoutMs: number): Promise<Tool[]> {
    if (!client.getServerCapabilities()?.tools) return [];
    const tools: Tool[] = [];
    let cursor: string | undefined;
    // Bounded: a server that keeps returning cursors must not hold the refresh forever.
    for (let page = 0; page < 100; page++) {
      const result = await client.listTools(cursor ? { cursor } : {}, { timeout: timeoutMs });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  private accept(slot: ServerSlot, tools: Tool[]): CatalogProblem | undefined {
    const { name, id, config } = slot.definition;
    const approval = new Set(config.approvalRequired);
    const declarations: ToolDeclaration[] = [];
    const seen = new Set<string>();
    for (const tool of tools) {
      if (seen.has(tool.name)) continue;
      seen.add(tool.name);
      declarations.push({
        name: tool.name,
        description: tool.description ?? tool.title ?? tool.annotations?.title ?? '',
        inputSchema: tool.inputSchema,
        requiresApproval: config.requiresApproval || approval.has(tool.name),
      });
    }
    if (declarations.length === 0) return this.fail(slot, `mcpServers.${name}: skipped: the server lists no tools`);
    const info = slot.live?.client.getServerVersion();
    const instructions = slot.live?.client.getInstructions()?.trim();
    slot.toolset = {
      kind: 'toolset',
      id,
      name: config.title ?? info?.title ?? name,
      description:
        config.description ??
        (instructions ? instructions.slice(0, 1024) : `Tools of the MCP server "${name}": ${[...seen].join(', ')}.`),
      tags: config.tags,
      source: `mcp:${name}`,
      tools: declarations,
      execution: 'mcp',
    };
    slot.fingerprint = JSON.stringify(slot.toolset);
    slot.status = { ...slot.status, state: 'ready', tools: declarations.length, listedAt: new Date().toISOString() };
    delete slot.status.error;
    const unknown = config.approvalRequired.filter((tool) => !seen.has(tool));
    if (unknown.length > 0) {
      // Not fatal, but a renamed tool would otherwise lose its approval requirement silently.
      return {
        file: this.file,
        message: `mcpServers.${name}.approvalRequired: the server lists no tool named ${unknown.map((t) => `"${t}"`).join(', ')}`,
      };
    }
    return undefined;
  }

  private fail(slot: ServerSlot, message: string): CatalogProblem {
    delete slot.toolset;
    delete slot.fingerprint;
    slot.status = { ...slot.status, state: 'failed', tools: 0, error: message };
    return { file: this.file, message };
  }

  private disconnect(slot: ServerSlot): Promise<void> {
    const live = slot.live;
    if (!live) return Promise.resolve();
    slot.live = undefined;
    live.closed = true;
    const closing = live.client.close().catch(() => undefined);
    this.closings.add(closing);
    return closing.finally(() => this.closings.delete(closing));
  }

  /** Tells `onChange` when what the catalog should hold differs from what it was last told. */
  private emitIfChanged(): void {
    const fingerprint = this.slots.map((slot) => slot.fingerprint ?? '').join('\n');
    if (fingerprint === this.lastFingerprint) return;
    this.lastFingerprint = fingerprint;
    this.options.onChange?.(this.toolsets());
  }
}

/**
 * The catalog's entries with the MCP toolsets added; an MCP toolset whose id a catalog file already
 * uses is left out and reported (the file wins, as it did before the server was configured).
 */
export function withMcpToolsets(
  base: CatalogEntry[],
  toolsets: ToolsetEntry[],
): { entries: CatalogEntry[]; problems: CatalogProblem[] } {
  const taken = new Map(base.filter((e) => e.kind === 'toolset').map((e) => [e.id, e.source]));
  const problems: CatalogProblem[] = [];
  const added = toolsets.filter((toolset) => {
    const other = taken.get(toolset.id);
    if (other !== undefined) {
      problems.push({
        file: toolset.source,
        message: `toolset id "${toolset.id}" is already used by ${other}; skipped`,
      });
    }
    return other === undefined;
  });
  return { entries: [...base, ...added], problems };
}

export interface McpToolsetsOptions extends Omit<McpCatalogOptions, 'onChange' | 'file'> {
  /** The `mcpServers` config file. */
  configPath: string;
  /** The catalog to keep up to date: on every change the MCP toolsets that changed are re-indexed. */
  catalog: IndexedCatalog;
  /** The entries loaded from the catalog folder (they win over an MCP toolset with the same id). */
  baseEntries: CatalogEntry[];
}

/**
 * Starts the MCP servers of `configPath` and keeps `catalog` in step with their tools. Resolves once
 * every server has been listed or has failed (each bounded by its timeout) and the catalog holds their
 * toolsets; `problems` holds the config file's bad entries and the servers that were skipped. Close
 * the returned catalog at shutdown.
 *
 * A refresh is incremental: only toolsets whose listing changed are removed and re-indexed, in short
 * slices between which the worker's event loop runs (the whole index used to be rebuilt, blocking the
 * worker for seconds at 10,000 entries). `applied()` resolves once the catalog reflects every change
 * seen so far.
 */
export async function connectMcpToolsets(
  options: McpToolsetsOptions,
): Promise<{ mcp: McpCatalog; problems: CatalogProblem[]; applied: () => Promise<void> }> {
  const { configPath, catalog, baseEntries, ...rest } = options;
  const indexed = new Map<string, string>();
  let applying = Promise.resolve();
  const apply = (toolsets: ToolsetEntry[]) => {
    const merged = withMcpToolsets(baseEntries, toolsets);
    const next = new Map<string, string>();
    const put: ToolsetEntry[] = [];
    for (const toolset of merged.entries.slice(baseEntries.length) as ToolsetEntry[]) {
      const fingerprint = JSON.stringify(toolset);
      next.set(toolset.id, fingerprint);
      if (indexed.get(toolset.id) !== fingerprint) put.push(toolset);
    }
    const remove = [...indexed.keys()].filter((id) => !next.has(id)).map((id) => ({ kind: 'toolset' as const, id }));
    indexed.clear();
    for (const [id, fingerprint] of next) indexed.set(id, fingerprint);
    // In order: a later change must not be overtaken by an earlier one still being applied.
    applying = applying.then(() => catalog.updateGradually({ put, remove }));
    return merged.problems;
  };
  let started = false;
  const { mcp, problems } = McpCatalog.fromFile(configPath, {
    ...rest,
    onChange: (toolsets) => {
      const collisions = apply(toolsets);
      if (started) for (const p of collisions) rest.log?.(`mcp: ${p.file}: ${p.message}`);
    },
  });
  const report = await mcp.start();
  started = true;
  const applied = () => applying;
  await applied();
  return {
    mcp,
    problems: [...problems, ...report.problems, ...withMcpToolsets(baseEntries, report.toolsets).problems],
    applied,
  };
}
