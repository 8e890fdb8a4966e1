/**
 * `harness`: the command line for Sessions. Runs the embedded stack or a worker, sends task input
 * with live progress, inspects, watches and lists Sessions, and delivers approvals and commands.
 *
 * Exit codes (see EXIT): 0 ok, 1 unexpected error, 2 usage or invalid input, 3 session not found,
 * 4 server unreachable, 5 timed out. Errors go to stderr as one line prefixed `harness: `.
 */
import { Command, CommanderError, Option } from 'commander';
import ora from 'ora';
import { DEFAULT_TASK_QUEUE } from '../workflows/api.js';
import { clip, formatDecision, formatDecisionLine, formatInspect, formatList, formatStage } from './format.js';
import { isEntryPoint } from '../worker/entry-point.js';
import { EXIT, SessionClientError } from '../client/errors.js';
import {
  COMMAND_NAMES,
  SessionClient,
  type CommandName,
  type ConnectOptions,
  type Progress,
  type StartOptions,
} from '../client/session-client.js';

/** Where the CLI writes; tests and embedders pass their own. */
export interface CliIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
  stdin?: NodeJS.ReadableStream;
}

interface GlobalOptions {
  address?: string;
  namespace?: string;
  taskQueue: string;
  tls?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsServerName?: string;
  apiKey?: string;
  profile?: string;
  connectTimeout: string;
}

/** An error whose message is for the user as is, with its exit code. */
class UsageError extends Error {
  readonly exitCode = EXIT.invalidInput;
}

/** Runs the CLI on `argv` (without `node` and the script) and resolves with the exit code. */
export async function main(
  argv: string[],
  io: CliIO = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
): Promise<number> {
  const line = (text: string) => io.stdout.write(`${text}\n`);
  // `harness list | head` closes the pipe early; that is not an error.
  if (io.stdout === process.stdout) process.stdout.on('error', quitOnBrokenPipe);
  // `eval` owns its arguments entirely; commander never sees them.
  const evalAt = firstCommandIndex(argv);
  if (evalAt >= 0 && argv[evalAt] === 'eval') {
    try {
      const { runEval } = await import('./eval.js');
      return await runEval(argv.slice(evalAt + 1), { stdout: io.stdout, stderr: io.stderr });
    } catch (err) {
      return fail(io, err);
    }
  }

  const program = buildProgram(io, line);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    return fail(io, err);
  }
}

function buildProgram(io: CliIO, line: (text: string) => void): Command {
  const program = new Command('harness')
    .description('AI agent Sessions as durable Temporal workflows')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      // Errors are printed once, by `fail`, in the one-line `harness: ` form.
      outputError: () => {},
    })
    .showSuggestionAfterError(true)
    .addOption(
      // No commander defaults or env for the connection: client/connection.ts resolves flags, then
      // TEMPORAL_* and the temporal.toml profile, then localhost:7233 / default.
      new Option(
        '--address <host:port>',
        'Temporal frontend address (default: TEMPORAL_ADDRESS, profile, localhost:7233)',
      ),
    )
    .addOption(new Option('--namespace <name>', 'Temporal namespace (default: TEMPORAL_NAMESPACE, profile, default)'))
    .addOption(new Option('--profile <name>', 'temporal.toml profile (default: TEMPORAL_PROFILE, default)'))
    .addOption(
      new Option('--task-queue <name>', 'task queue new Sessions start on')
        .env('HARNESS_TASK_QUEUE')
        .default(DEFAULT_TASK_QUEUE),
    )
    .addOption(new Option('--tls', 'connect with TLS (implied by --tls-cert, --tls-ca and --api-key; or TEMPORAL_TLS)'))
    .addOption(new Option('--tls-cert <file>', 'client certificate (PEM) for mTLS (or TEMPORAL_TLS_CLIENT_CERT_PATH)'))
    .addOption(new Option('--tls-key <file>', 'client private key (PEM) for mTLS (or TEMPORAL_TLS_CLIENT_KEY_PATH)'))
    .addOption(
      new Option('--tls-ca <file>', 'CA certificate (PEM) of the server (or TEMPORAL_TLS_SERVER_CA_CERT_PATH)'),
    )
    .addOption(new Option('--tls-server-name <name>', 'TLS server name override (or TEMPORAL_TLS_SERVER_NAME)'))
    .addOption(new Option('--api-key <key>', 'Temporal Cloud API key (or TEMPORAL_API_KEY)'))
    .addOption(
      new Option('--connect-timeout <ms>', 'how long to wait for the server')
        .env('HARNESS_CONNECT_TIMEOUT_MS')
        .default('5000'),
    )
    .addHelpText(
      'after',
      '\nExit codes: 0 ok, 1 unexpected error, 2 usage or invalid input, 3 session not found,\n' +
        '4 server unreachable, 5 timed out (no worker answered, or --wait ran out).\n',
    );

  const globals = (cmd: Command) => cmd.optsWithGlobals<GlobalOptions>();
  /** Runs `fn` with a connected client and closes it afterwards. */
  const withClient = async <T>(cmd: Command, fn: (client: SessionClient) => Promise<T>): Promise<T> => {
    const client = await SessionClient.create(connectOptions(globals(cmd)));
    try {
      return await fn(client);
    } finally {
      await client.close();
    }
  };

  program
    .command('dev')
    .description('run `temporal server start-dev` (SQLite, Web UI) and one worker; what `npm start` runs')
    .action(async (_opts: unknown, cmd: Command) => {
      const g = globals(cmd);
      const { runDev } = await import('../dev/dev.js');
      await runDev({
        env: {
          ...process.env,
          ...(g.namespace ? { TEMPORAL_NAMESPACE: g.namespace } : {}),
          HARNESS_TASK_QUEUE: g.taskQueue,
        },
      });
    });

  program
    .command('worker')
    .description('run a Session worker against --address on --task-queue')
    .action(async (_opts: unknown, cmd: Command) => {
      const g = globals(cmd);
      if (g.tls || g.tlsCert || g.tlsCa || g.apiKey) {
        throw new UsageError('harness worker does not support TLS or API keys yet; run it next to the cluster');
      }
      const { loadConfig } = await import('../worker/config.js');
      const { runWorker } = await import('../worker/run-worker.js');
      const config = loadConfig({
        ...process.env,
        ...(g.address ? { TEMPORAL_ADDRESS: g.address } : {}),
        ...(g.namespace ? { TEMPORAL_NAMESPACE: g.namespace } : {}),
        ...(g.profile ? { TEMPORAL_PROFILE: g.profile } : {}),
        HARNESS_TASK_QUEUE: g.taskQueue,
      });
      await runWorker(config, (text) => line(`[worker] ${text}`));
    });

  program
    .command('send')
    .description('send a task input to a Session (created if new); --wait shows its stages and ends with the decision')
    .argument('<session>', 'session id')
    .argument('<text>', 'message text, or - to read it from stdin')
    .option('--resource <uri>', 'resource reference (repeatable)', collect, [])
    .option('--message-id <id>', 'message id (default: generated); reuse it when retrying, it de-duplicates')
    .option('--wait', 'wait until the input is aligned and print its decision')
    .option('--timeout <seconds>', 'with --wait: give up after this long', '300')
    .option('--session-goal <text>', 'session goal, if this creates the Session')
    .option('--phase-goal <text>', 'phase goal, if this creates the Session')
    .option('--parent <session>', 'parent session, if this creates the Session')
    .option('--profile <name>', 'profile, if this creates the Session')
    .option('--json', 'print the result as JSON')
    .action(async (sessionId: string, textArg: string, opts: SendOptions, cmd: Command) => {
      const text = textArg === '-' ? await readAll(io.stdin ?? process.stdin) : textArg;
      const draft = {
        text,
        ...(opts.messageId !== undefined ? { messageId: opts.messageId } : {}),
        ...(opts.resource.length > 0 ? { resources: opts.resource.map((uri) => ({ uri })) } : {}),
      };
      const start = startOptions(opts);
      await withClient(cmd, async (client) => {
        if (!opts.wait) {
          const sent = await client.send(sessionId, draft, start);
          if (opts.json) line(JSON.stringify(sent));
          else line(`sent message ${sent.messageId} to session ${sessionId}`);
          return;
        }
        const timeoutMs = seconds(opts.timeout, '--timeout') * 1000;
        const recorded = await client.submit(sessionId, draft, { start, timeoutMs });
        if (!opts.json) {
          line(
            `session ${sessionId}: input #${recorded.seq} ${recorded.duplicate ? 'was already recorded (duplicate messageId)' : 'recorded'} ` +
              `(message ${recorded.messageId})`,
          );
        }
        const progress = opts.json ? null : progressReporter(io, recorded.seq);
        const stop = new AbortController();
        const onSigint = () => stop.abort();
        process.once('SIGINT', onSigint);
        try {
          const decision = await client.waitForDecision(sessionId, recorded.seq, {
            timeoutMs,
            signal: stop.signal,
            ...(progress ? { onProgress: progress.update } : {}),
          });
          progress?.done();
          const [view, history] = await Promise.all([client.snapshot(sessionId), client.history(sessionId)]);
          const input = history.find((h) => h.seq === recorded.seq) ?? null;
          if (opts.json) {
            line(JSON.stringify({ ...recorded, decision, reply: input?.reply ?? null }));
          } else if (decision) {
            line(formatDecision(decision, view, input));
          } else {
            line(`decision #${recorded.seq}: no longer kept by the session (older than its decision window)`);
          }
        } finally {
          progress?.done();
          process.off('SIGINT', onSigint);
        }
      });
    });

  program
    .command('inspect')
    .description('goals, capabilities and recent decisions of a Session')
    .argument('<session>', 'session id')
    .option('--limit <n>', 'how many recent decisions', '10')
    .option('--json', 'print { snapshot, decisions } as JSON')
    .action(async (sessionId: string, opts: { limit: string; json?: boolean }, cmd: Command) => {
      const limit = positiveInt(opts.limit, '--limit');
      await withClient(cmd, async (client) => {
        const [view, decisions] = await Promise.all([
          client.snapshot(sessionId),
          client.decisions(sessionId, { limit }),
        ]);
        line(opts.json ? JSON.stringify({ snapshot: view, decisions }, null, 2) : formatInspect(view, decisions));
      });
    });

  program
    .command('watch')
    .description('follow stage and decision changes of a Session until it closes (Ctrl-C to stop)')
    .argument('<session>', 'session id')
    .option('--since <seq>', 'also print decisions after this seq')
    .option('--json', 'one JSON object per event')
    .action(async (sessionId: string, opts: { since?: string; json?: boolean }, cmd: Command) => {
      const stop = new AbortController();
      const onSigint = () => stop.abort();
      process.once('SIGINT', onSigint);
      try {
        await withClient(cmd, async (client) => {
          const events = client.watch(sessionId, {
            signal: stop.signal,
            ...(opts.since !== undefined ? { sinceSeq: nonNegativeInt(opts.since, '--since') } : {}),
          });
          for await (const event of events) {
            if (opts.json) {
              line(
                JSON.stringify(event.type === 'stage' ? { type: 'stage', stage: event.stage, seq: event.seq } : event),
              );
            } else {
              line(
                event.type === 'stage'
                  ? formatStage(event.stage, event.seq, event.view)
                  : formatDecisionLine(event.record),
              );
            }
          }
        });
      } finally {
        process.off('SIGINT', onSigint);
      }
    });

  program
    .command('list')
    .description('Sessions from Temporal visibility, newest first')
    .option('--stage <stage>', 'only this SessionStage, e.g. Idle')
    .option('--status <status>', 'only this SessionStatus: active, paused, closed')
    .option('--parent <session>', 'only sub-sessions of this session')
    .option('--query <clause>', 'extra visibility clause, ANDed')
    .option('--limit <n>', 'most rows', '50')
    .option('--json', 'print the rows as JSON')
    .action(async (opts: ListOptions, cmd: Command) => {
      const limit = positiveInt(opts.limit, '--limit');
      await withClient(cmd, async (client) => {
        const rows = await client.list({
          limit,
          ...(opts.stage !== undefined ? { stage: opts.stage } : {}),
          ...(opts.status !== undefined ? { status: opts.status } : {}),
          ...(opts.parent !== undefined ? { parent: opts.parent } : {}),
          ...(opts.query !== undefined ? { query: opts.query } : {}),
        });
        line(opts.json ? JSON.stringify(rows, null, 2) : formatList(rows));
      });
    });

  for (const approved of [true, false]) {
    program
      .command(approved ? 'approve' : 'reject')
      .description(`${approved ? 'approve' : 'reject'} a pending approval (approval signal; never a task input)`)
      .argument('<session>', 'session id')
      .argument('<approvalId>', 'approval id')
      .option('--note <text>', 'note for the agent')
      .action(async (sessionId: string, approvalId: string, opts: { note?: string }, cmd: Command) => {
        await withClient(cmd, async (client) => {
          if (approved) await client.approve(sessionId, approvalId, opts.note);
          else await client.reject(sessionId, approvalId, opts.note);
          line(`approval ${approvalId} ${approved ? 'approved' : 'rejected'} in session ${sessionId}`);
        });
      });
  }

  program
    .command('command')
    .description(`send a deterministic command: ${COMMAND_NAMES.join(', ')}`)
    .argument('<session>', 'session id')
    .argument('<name>', COMMAND_NAMES.join(' | '))
    .option('--session-goal <text>', 'set-goals: new session goal')
    .option('--phase-goal <text>', 'set-goals: new phase goal (opens a new phase)')
    .option('--command-id <id>', 'command id (default: generated); reuse it when retrying')
    .action(async (sessionId: string, name: string, opts: CommandOptions, cmd: Command) => {
      if (!(COMMAND_NAMES as readonly string[]).includes(name)) {
        throw new UsageError(`unknown command ${JSON.stringify(name)} (one of: ${COMMAND_NAMES.join(', ')})`);
      }
      const goals = {
        ...(opts.sessionGoal !== undefined ? { session: opts.sessionGoal } : {}),
        ...(opts.phaseGoal !== undefined ? { phase: opts.phaseGoal } : {}),
      };
      if (name !== 'set-goals' && Object.keys(goals).length > 0) {
        throw new UsageError('--session-goal and --phase-goal only go with set-goals');
      }
      await withClient(cmd, async (client) => {
        const commandId = await client.command(sessionId, {
          name: name as CommandName,
          ...(name === 'set-goals' ? { args: goals } : {}),
          ...(opts.commandId !== undefined ? { commandId: opts.commandId } : {}),
        });
        line(`command ${name} (${commandId}) sent to session ${sessionId}`);
      });
    });

  program
    .command('notify')
    .description('deliver a system notification (never a task input)')
    .argument('<session>', 'session id')
    .argument('<kind>', 'notification kind, e.g. deploy')
    .argument('<text>', 'notification text')
    .option('--notification-id <id>', 'notification id (default: generated)')
    .action(async (sessionId: string, kind: string, text: string, opts: { notificationId?: string }, cmd: Command) => {
      await withClient(cmd, async (client) => {
        const id = await client.notify(sessionId, {
          kind,
          text,
          ...(opts.notificationId !== undefined ? { notificationId: opts.notificationId } : {}),
        });
        line(`notification ${id} delivered to session ${sessionId}`);
      });
    });

  addMemoryCommands(program, line);

  program
    .command('eval')
    .description('run the relevance evaluation (arguments are passed through; `harness eval --help`)')
    .helpOption(false);

  return program;
}

/** `memory add|list|rm` over the worker's memory store (SQLite). */
function addMemoryCommands(program: Command, line: (text: string) => void): void {
  const memory = program
    .command('memory')
    .description('manage memory items the Sessions can recall')
    .addOption(new Option('--db <file>', 'memory database').env('HARNESS_MEMORY_DB').default('.data/memory.db'));
  const open = async (cmd: Command) => {
    const store = await import('../capabilities/memory-store.js');
    return { store, memories: store.MemoryStore.open(cmd.optsWithGlobals<{ db: string }>().db) };
  };
  memory
    .command('add')
    .description('add a memory item')
    .argument('<text>', 'memory text')
    .option('--tag <tag>', 'tag (repeatable)', collect, [])
    .option('--scope <scope>', 'global, session:<id> or user:<id>', 'global')
    .action(async (text: string, opts: { tag: string[]; scope: string }, cmd: Command) => {
      const { store, memories } = await open(cmd);
      try {
        const item = memories.add({ text, tags: opts.tag, scope: store.parseMemoryScope(opts.scope) });
        line(`added memory ${item.id} (${store.formatMemoryScope(item.scope)})`);
      } finally {
        memories.close();
      }
    });
  memory
    .command('list')
    .description('list memory items')
    .option('--scope <scope>', 'only this scope: global, session:<id> or user:<id>')
    .option('--tag <tag>', 'only items with this tag')
    .option('--limit <n>', 'most items', '100')
    .option('--json', 'print as JSON')
    .action(async (opts: { scope?: string; tag?: string; limit: string; json?: boolean }, cmd: Command) => {
      const { store, memories } = await open(cmd);
      try {
        const items = memories.list({
          limit: positiveInt(opts.limit, '--limit'),
          ...(opts.scope !== undefined ? { scope: store.parseMemoryScope(opts.scope) } : {}),
          ...(opts.tag !== undefined ? { tag: opts.tag } : {}),
        });
        if (opts.json) line(JSON.stringify(items, null, 2));
        else if (items.length === 0) line('no memory items');
        else {
          for (const item of items) {
            const tags = item.tags.length > 0 ? ` [${item.tags.join(', ')}]` : '';
            line(`${item.id}\t${store.formatMemoryScope(item.scope)}\t${clip(item.text, 100)}${tags}`);
          }
        }
      } finally {
        memories.close();
      }
    });
  memory
    .command('rm')
    .description('remove a memory item')
    .argument('<id>', 'memory id')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { memories } = await open(cmd);
      try {
        if (!memories.remove(id)) throw new UsageError(`no memory item ${id}`);
        line(`removed memory ${id}`);
      } finally {
        memories.close();
      }
    });
}

interface SendOptions {
  resource: string[];
  messageId?: string;
  wait?: boolean;
  timeout: string;
  sessionGoal?: string;
  phaseGoal?: string;
  parent?: string;
  profile?: string;
  json?: boolean;
}

interface ListOptions {
  stage?: string;
  status?: string;
  parent?: string;
  query?: string;
  limit: string;
  json?: boolean;
}

interface CommandOptions {
  sessionGoal?: string;
  phaseGoal?: string;
  commandId?: string;
}

function connectOptions(g: GlobalOptions): ConnectOptions {
  const files = {
    ...(g.tlsCert ? { certFile: g.tlsCert } : {}),
    ...(g.tlsKey ? { keyFile: g.tlsKey } : {}),
    ...(g.tlsCa ? { caFile: g.tlsCa } : {}),
    ...(g.tlsServerName ? { serverName: g.tlsServerName } : {}),
  };
  const tls = Object.keys(files).length > 0 ? files : g.tls ? true : undefined;
  return {
    ...(g.address ? { address: g.address } : {}),
    ...(g.namespace ? { namespace: g.namespace } : {}),
    ...(g.profile ? { profile: g.profile } : {}),
    taskQueue: g.taskQueue,
    connectTimeoutMs: positiveInt(g.connectTimeout, '--connect-timeout'),
    ...(tls !== undefined ? { tls } : {}),
    ...(g.apiKey ? { apiKey: g.apiKey } : {}),
  };
}

function startOptions(opts: SendOptions): StartOptions {
  const goals = {
    ...(opts.sessionGoal !== undefined ? { session: opts.sessionGoal } : {}),
    ...(opts.phaseGoal !== undefined ? { phase: opts.phaseGoal } : {}),
  };
  return {
    ...(Object.keys(goals).length > 0 ? { goals } : {}),
    ...(opts.parent !== undefined ? { parentSessionId: opts.parent } : {}),
    ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
  };
}

/**
 * Live stage notices for `send --wait`: an ora spinner on a TTY, one plain line per change otherwise.
 */
function progressReporter(io: CliIO, seq: number): { update: (p: Progress) => void; done: () => void } {
  // A pseudo-terminal without a size (columns 0) would make the spinner's line arithmetic useless.
  const tty = Boolean(io.stdout.isTTY) && ((io.stdout as { columns?: number }).columns ?? 0) > 0;
  const spinner = tty ? ora({ stream: io.stdout, discardStdin: false }).start(`waiting for input #${seq}`) : null;
  let last = '';
  let finished = false;
  return {
    update(p) {
      const notice = describeProgress(p, seq);
      if (notice === null || notice === last || finished) return;
      if (spinner) {
        if (last) spinner.stopAndPersist({ symbol: '·', text: last });
        spinner.start(notice);
      } else {
        io.stdout.write(`… ${notice}\n`);
      }
      last = notice;
    },
    done() {
      if (finished) return;
      finished = true;
      if (spinner && last) spinner.stopAndPersist({ symbol: '·', text: last });
      else spinner?.stop();
    },
  };
}

/** What the Session is doing, from the point of view of input `seq`; null when there is nothing to say. */
export function describeProgress(p: Progress, seq: number): string | null {
  if (p.status === 'paused') return `session is paused; input #${seq} waits until it is resumed`;
  if (p.boundSeq < seq) {
    const ahead = seq - p.boundSeq - (p.stage === 'Idle' ? 0 : 1);
    return ahead > 0 ? `waiting: ${ahead} earlier input(s) ahead of #${seq}` : `waiting for the worker to take #${seq}`;
  }
  if (p.boundSeq > seq || p.stage === 'Idle' || p.stage === 'Closed') return null;
  return p.stage;
}

function fail(io: CliIO, err: unknown): number {
  const { code, message } = describeError(err);
  if (message) io.stderr.write(`harness: ${message}\n`);
  if (code === EXIT.unexpected && process.env.HARNESS_DEBUG && err instanceof Error && err.stack) {
    io.stderr.write(`${err.stack}\n`);
  }
  return code;
}

/** Exit code and one-line message for any error the CLI can meet. */
export function describeError(err: unknown): { code: number; message: string } {
  const oneLine = (text: string) => text.replace(/\s*\n\s*/g, '; ').trim();
  if (err instanceof CommanderError) {
    if (['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(err.code)) {
      return { code: EXIT.ok, message: '' };
    }
    return { code: EXIT.invalidInput, message: oneLine(err.message.replace(/^error: /, '')) };
  }
  if (err instanceof SessionClientError || err instanceof UsageError) {
    return { code: err.exitCode, message: oneLine(err.message) };
  }
  if (err instanceof Error && ['ConfigError', 'MemoryInputError'].includes(err.name)) {
    return { code: EXIT.invalidInput, message: oneLine(err.message) };
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return { code: EXIT.unexpected, message: oneLine(message) };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function positiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer (got ${value})`);
  return n;
}

function nonNegativeInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} must be a non-negative integer (got ${value})`);
  return n;
}

function seconds(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new UsageError(`${flag} must be a positive number of seconds (got ${value})`);
  return n;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** Index of the first argument that is not a global option or its value, or -1. */
function firstCommandIndex(argv: string[]): number {
  const takesValue = new Set([
    '--address',
    '--namespace',
    '--task-queue',
    '--tls-cert',
    '--tls-key',
    '--tls-ca',
    '--tls-server-name',
    '--api-key',
    '--profile',
    '--connect-timeout',
  ]);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('-')) return i;
    if (takesValue.has(arg)) i++;
  }
  return -1;
}

function quitOnBrokenPipe(err: NodeJS.ErrnoException): void {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.ok);
  throw err;
}

if (isEntryPoint(import.meta.url)) process.exitCode = await main(process.argv.slice(2));
