/**
 * Live MCP servers as catalog toolsets. A config file in the common `mcpServers` shape names stdio
 * and streamable-HTTP servers; each one that starts becomes the toolset `mcp-<name>` with the tools
 * it lists. Servers stay connected, so `refresh()` (or the interval, or the server's own
 * `tools/list_changed` notification) re-lists their tools without a worker restart. A server that
 * does not start within its timeout, or dies, is reported and left out until a refresh brings it back.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolDeclaration, ToolsetEntry } from './catalog.js';
import type { CatalogProblem } from './catalog-files.js';
import { loadMcpConfigFile, type McpServerDefinition } from './mcp-config.js';

export const DEFAULT_MCP_TIMEOUT_MS = 10_000;
/** The `_meta` key under which a tool call carries the Session's call id. */
export const MCP_CALL_ID_META = 'session-harness/callId';
/**
 * The `_meta` key of a call's idempotency key, `<sessionId>:<seq>:<callId>`: the same for every
 * attempt of one call (a retry after a lost worker sends it again), different for every other call
 * (models reuse call ids such as `call_1` across turns, so the call id alone is not).
 */
export const MCP_IDEMPOTENCY_KEY_META = 'session-harness/idempotencyKey';
/** Bound on one tool call when the server entry sets neither `toolTimeoutMs` nor `timeoutMs`. */
export const DEFAULT_MCP_TOOL_TIMEOUT_MS = 60_000;

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
  /** JSON of `toolset`, computed once per listing, to tell a changed listing from the same one again. */
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
  /** Each slot's toolset when `onChange` was last called (none yet: nothing listed). */
  private lastEmitted: Array<ToolsetEntry | undefined> = [];
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
    options: {
      signal?: AbortSignal;
      maxTimeoutMs?: number;
      onProgress?: () => void;
      callId?: string;
      idempotencyKey?: string;
    } = {},
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
    // The call id and idempotency key travel in `_meta`, so a server whose side effects must happen
    // once can recognise a call that a retried activity sends again.
    const ids = {
      ...(options.callId ? { [MCP_CALL_ID_META]: options.callId } : {}),
      ...(options.idempotencyKey ? { [MCP_IDEMPOTENCY_KEY_META]: options.idempotencyKey } : {}),
    };
    const meta = Object.keys(ids).length > 0 ? { _meta: ids } : {};
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
        riskTags: [...new Set([...config.riskTags, ...(config.toolRiskTags[tool.name] ?? [])])],
      });
    }
    if (declarations.length === 0) return this.fail(slot, `mcpServers.${name}: skipped: the server lists no tools`);
    const info = slot.live?.client.getServerVersion();
    const instructions = slot.live?.client.getInstructions()?.trim();
    const toolset: ToolsetEntry = {
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
    const fingerprint = JSON.stringify(toolset);
    // An unchanged listing keeps the object it produced before: whoever indexed it can tell by identity.
    if (fingerprint !== slot.fingerprint || !slot.toolset) {
      slot.toolset = toolset;
      slot.fingerprint = fingerprint;
    }
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

  /**
   * Tells `onChange` when what the catalog should hold differs from what it was last told: a slot's
   * toolset object changes only when its listing did (`accept`), so comparing objects is enough.
   */
  private emitIfChanged(): void {
    const current = this.slots.map((slot) => slot.toolset);
    if (current.every((toolset, i) => toolset === this.lastEmitted[i])) return;
    this.lastEmitted = current;
    this.options.onChange?.(this.toolsets());
  }
}
