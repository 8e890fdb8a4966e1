/**
 * A tiny MCP server for the MCP catalog tests, built on the SDK's McpServer.
 *
 * Run as a program it serves stdio (`node --import tsx test/support/mcp-fixture-server.ts`):
 * - by default two tools, `echo` and `add`;
 * - `MCP_FIXTURE_CONTROL=<file>`: the tools come from that JSON file (`{ "tools": [{ name, description }],
 *   "exit"?: true }`), which is watched. Besides `echo` and `add`, tools named `sleep` (writes `started`
 *   to the file its `marker` argument names, answers only when cancelled, then writes `cancelled`), `repeat` (`text`
 *   repeated `times` times), `fail` (an `isError` result), `read_file` (`path`) and `fetch_url` (`url`),
 *   which only answer and journal, and `journal` (below) can be listed there.
 *   A change to the file re-registers the tools (the SDK then sends `tools/list_changed`), and
 *   `"exit": true` makes the server exit as if it crashed;
 * - `MCP_FIXTURE_JOURNAL=<file>`: a side effect that must happen once, kept the way a real server
 *   would, by the call's idempotency key (`_meta["session-harness/idempotencyKey"]`). `journal`
 *   answers a key that has a `done` line from that record (appending `replay\t<key>`) and does nothing
 *   else; otherwise it appends `start\t<key>\t<ms>`, works for JOURNAL_WORK_MS (so a kill can land
 *   inside), appends `done\t<key>\t<result>` and answers. `add`, `read_file` and `fetch_url` append `ran\t<tool>\t<key>` each time;
 * - `MCP_FIXTURE_MODE=crash`: writes to stderr and exits at once; `hang`: never answers;
 * - `MCP_FIXTURE_MODE=http`, started with an IPC channel (`fork`): serves streamable HTTP on
 *   127.0.0.1 instead (see `spawnHttpFixture` in mcp-fixture.ts), sends `{ url }` once listening,
 *   answers each `{ tools }` message with `{ tools: <count> }` once later requests see those tools,
 *   and exits when the parent disconnects.
 *
 * Imported, `startHttpFixture` serves the same tools over streamable HTTP on 127.0.0.1, in the
 * importing process.
 */
import { appendFileSync, existsSync, readFileSync, watchFile, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { MCP_IDEMPOTENCY_KEY_META } from '../../capabilities/mcp-catalog.js';

export interface FixtureTool {
  name: string;
  description: string;
}

export const DEFAULT_FIXTURE_TOOLS: FixtureTool[] = [
  { name: 'echo', description: 'Echo the given text back unchanged.' },
  { name: 'add', description: 'Add two numbers and return the sum.' },
];

/** How long `journal` works on a new key before it writes `done`. */
export const JOURNAL_WORK_MS = 2_000;

/**
 * One line of the journal file: `start` (with the time it was written), `done` (with the result),
 * `replay` (a repeat of a done key, answered from the record) or `ran`.
 */
export type JournalLine =
  | { kind: 'start'; key: string; at: number }
  | { kind: 'done'; key: string; result: string }
  | { kind: 'replay'; key: string }
  | { kind: 'ran'; tool: string; key: string };

/** The journal's lines in the order they were appended (none when the file does not exist yet). */
export function readJournal(file: string): JournalLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line): JournalLine => {
      const [kind, a = '', b = ''] = line.split('\t');
      if (kind === 'start') return { kind, key: a, at: Number(b) };
      if (kind === 'done') return { kind, key: a, result: b };
      if (kind === 'replay') return { kind, key: a };
      return { kind: 'ran', tool: a, key: b };
    });
}

const text = (value: string, isError = false) => ({ content: [{ type: 'text' as const, text: value }], isError });

function idempotencyKey(meta: Record<string, unknown> | undefined): string | undefined {
  const key = meta?.[MCP_IDEMPOTENCY_KEY_META];
  return typeof key === 'string' ? key : undefined;
}

function register(server: McpServer, tool: FixtureTool, journal: string | undefined): RegisteredTool {
  if (tool.name === 'journal') {
    return server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: { note: z.string() } },
      async ({ note }, extra) => {
        const key = idempotencyKey(extra._meta);
        if (!journal || !key) return text(`journal: needs MCP_FIXTURE_JOURNAL and an idempotency key`, true);
        const done = readJournal(journal).find((l) => l.kind === 'done' && l.key === key);
        if (done?.kind === 'done') {
          appendFileSync(journal, `replay\t${key}\n`);
          return text(done.result);
        }
        appendFileSync(journal, `start\t${key}\t${Date.now()}\n`);
        await new Promise((resolve) => setTimeout(resolve, JOURNAL_WORK_MS));
        const result = `journaled ${note}`;
        appendFileSync(journal, `done\t${key}\t${result}\n`);
        return text(result);
      },
    );
  }
  if (tool.name === 'sleep') {
    // Never answers on its own: it ends when the client cancels, and leaves a file saying so.
    return server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: { marker: z.string() } },
      ({ marker }, extra) =>
        new Promise((resolve) => {
          // `started` tells a test the request reached the server, so a cancel it sends next can only
          // abort a running call (cancelled before it is sent, the request never arrives at all).
          writeFileSync(marker, 'started');
          extra.signal.addEventListener('abort', () => {
            writeFileSync(marker, 'cancelled');
            resolve({ content: [{ type: 'text', text: 'cancelled' }] });
          });
        }),
    );
  }
  if (tool.name === 'repeat') {
    return server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: { text: z.string(), times: z.number().int().min(1) } },
      ({ text, times }) => ({ content: [{ type: 'text', text: text.repeat(times) }] }),
    );
  }
  if (tool.name === 'fail') {
    return server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: { reason: z.string() } },
      ({ reason }) => ({ content: [{ type: 'text', text: reason }], isError: true }),
    );
  }
  if (tool.name === 'read_file' || tool.name === 'fetch_url') {
    // A file reader and a URL fetcher that touch nothing: the journal shows whether a call reached them.
    const field = tool.name === 'read_file' ? 'path' : 'url';
    return server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: { [field]: z.string() } },
      (args: Record<string, string>, extra) => {
        if (journal) appendFileSync(journal, `ran\t${tool.name}\t${idempotencyKey(extra._meta) ?? ''}\n`);
        return text(`contents of ${args[field] ?? ''}`);
      },
    );
  }
  if (tool.name === 'add') {
    return server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: { a: z.number(), b: z.number() } },
      ({ a, b }, extra) => {
        if (journal) appendFileSync(journal, `ran\tadd\t${idempotencyKey(extra._meta) ?? ''}\n`);
        return { content: [{ type: 'text', text: String(a + b) }] };
      },
    );
  }
  return server.registerTool(
    tool.name,
    { description: tool.description, inputSchema: { text: z.string().describe('Text to echo.') } },
    ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
}

/** An McpServer offering `tools`, with instructions that say what the fixture is; `journal` is the journal file. */
export function createFixtureServer(
  tools: FixtureTool[],
  journal?: string,
): {
  server: McpServer;
  registered: Map<string, RegisteredTool>;
} {
  const server = new McpServer(
    { name: 'mcp-fixture', title: 'MCP Fixture', version: '1.0.0' },
    { instructions: 'Fixture server for tests: echoes text and adds numbers.' },
  );
  const registered = new Map(tools.map((tool) => [tool.name, register(server, tool, journal)]));
  return { server, registered };
}

interface Control {
  tools: FixtureTool[];
  exit?: boolean;
}

function readControl(file: string): Control {
  return JSON.parse(readFileSync(file, 'utf8')) as Control;
}

async function serveStdio(): Promise<void> {
  const mode = process.env.MCP_FIXTURE_MODE;
  if (mode === 'crash') {
    process.stderr.write('fixture: crashing on purpose\n');
    process.exit(3);
  }
  if (mode === 'http') return serveHttpChild();
  if (mode === 'hang') {
    // Keeps the process alive without ever reading stdin or answering `initialize`.
    setInterval(() => undefined, 60_000);
    return;
  }
  const controlFile = process.env.MCP_FIXTURE_CONTROL;
  const tools = controlFile ? readControl(controlFile).tools : DEFAULT_FIXTURE_TOOLS;
  const journal = process.env.MCP_FIXTURE_JOURNAL;
  const { server, registered } = createFixtureServer(tools, journal);
  if (controlFile) {
    watchFile(controlFile, { interval: 50 }, () => {
      // A poll can land between a writer's truncate and its write: wait for the next change then.
      let control: Control;
      try {
        control = readControl(controlFile);
      } catch {
        return;
      }
      if (control.exit) {
        process.stderr.write('fixture: exiting as the control file asks\n');
        process.exit(4);
      }
      const wanted = new Map(control.tools.map((t) => [t.name, t]));
      for (const [name, tool] of registered) {
        if (!wanted.has(name)) {
          tool.remove();
          registered.delete(name);
        }
      }
      for (const tool of wanted.values())
        if (!registered.has(tool.name)) registered.set(tool.name, register(server, tool, journal));
    });
  }
  await server.connect(new StdioServerTransport());
  // Like most stdio servers: the client closing stdin means "stop" (the file watcher would keep it up).
  process.stdin.on('end', () => process.exit(0));
}

export interface HttpFixture {
  url: string;
  /** The tools the next request sees; change it to change the server's tool list. */
  tools: FixtureTool[];
  close(): Promise<void>;
}

/**
 * The fixture over streamable HTTP (stateless: a fresh McpServer per request) on 127.0.0.1. It lives
 * in the caller's process, so a call keeps running when the client that sent it dies.
 */
export async function startHttpFixture(
  tools: FixtureTool[] = DEFAULT_FIXTURE_TOOLS,
  options: { journal?: string } = {},
): Promise<HttpFixture> {
  const fixture = { tools } as HttpFixture;
  const http = createServer((req, res) => {
    const { server } = createFixtureServer(fixture.tools, options.journal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(err));
      });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  fixture.url = `http://127.0.0.1:${port}/mcp`;
  fixture.close = () =>
    new Promise<void>((resolve) => {
      http.closeAllConnections();
      http.close(() => resolve());
    });
  return fixture;
}

/** The HTTP fixture in its own process, driven by its parent over IPC. */
async function serveHttpChild(): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) throw new Error('MCP_FIXTURE_MODE=http needs an IPC channel (start it with fork)');
  const fixture = await startHttpFixture();
  process.on('message', (message: { tools?: FixtureTool[] }) => {
    if (!message.tools) return;
    fixture.tools = message.tools;
    send({ tools: message.tools.length });
  });
  process.on('disconnect', () => process.exit(0));
  send({ url: fixture.url });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  serveStdio().catch((err: unknown) => {
    process.stderr.write(`fixture: ${String(err)}\n`);
    process.exit(1);
  });
}
