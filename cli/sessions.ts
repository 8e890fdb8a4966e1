/**
 * `harness send | inspect | watch | list`: task input with live progress, and what a Session (or
 * all of them) looks like now.
 */
import { text as readText } from 'node:stream/consumers';
import { Option, type Command } from 'commander';
import ora from 'ora';
import type { Progress, StartOptions } from '../client/index.js';
import type { CliIO, CommandContext } from './context.js';
import { formatDecision, formatDecisionLine, formatEvent, formatInspect, formatList, formatStage } from './format.js';
import { GatewayEventFeed } from '../client/sse-feed.js';
import { reachableGateway } from './gateway-env.js';
import { earlySubscription, followTurn, replyBackstop, type TurnEnd } from './turn-stream.js';
import { collect, duration, nonNegativeInt, positiveInt } from './options.js';

interface SendOptions {
  resource: string[];
  messageId?: string;
  wait?: boolean;
  timeout: number;
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
  limit: number;
  json?: boolean;
}

export function addSessionCommands(program: Command, { io, line, withClient }: CommandContext): void {
  program
    .command('send')
    .description('send a task input to a Session (created if new); --wait shows its stages and ends with the decision')
    .argument('<session>', 'session id')
    .argument('<text>', 'message text, or - to read it from stdin')
    .option('--resource <uri>', 'resource reference (repeatable)', collect, [])
    .option('--message-id <id>', 'message id (default: generated); reuse it when retrying, it de-duplicates')
    .option(
      '--wait',
      "wait until the input's turn ends and print its decision; with a gateway (HARNESS_GATEWAY_URL, or the one `npm start` runs) the agent's text prints live as it streams",
    )
    .addOption(
      new Option('--timeout <duration>', 'with --wait: give up after this long (90s, 5m; a bare number is seconds)')
        .argParser(duration('s'))
        .default(300_000, '5m'),
    )
    .option('--session-goal <text>', 'session goal, if this creates the Session')
    .option('--phase-goal <text>', 'phase goal, if this creates the Session')
    .option('--parent <session>', 'parent session, if this creates the Session')
    .option('--profile <name>', 'profile, if this creates the Session')
    .option('--json', 'print the result as JSON')
    .action(async (sessionId: string, textArg: string, opts: SendOptions, cmd: Command) => {
      const text = textArg === '-' ? await readText(io.stdin ?? process.stdin) : textArg;
      const draft = {
        text,
        ...(opts.messageId !== undefined ? { messageId: opts.messageId } : {}),
        ...(opts.resource.length > 0 ? { resources: opts.resource.map((uri) => ({ uri })) } : {}),
      };
      const start = startOptions(opts);
      await withClient(cmd, async (client) => {
        if (!opts.wait) {
          const sent = await client.send(sessionId, draft, start);
          line(opts.json ? JSON.stringify(sent) : `sent message ${sent.messageId} to session ${sessionId}`);
          return;
        }
        // Live from the gateway's event stream, opened before the input goes in; else the result update.
        const gateway = await reachableGateway(process.env);
        const early = gateway ? earlySubscription(new GatewayEventFeed(gateway.url, gateway.token), sessionId) : null;
        const recorded = await client
          .submit(sessionId, draft, { start, timeoutMs: opts.timeout })
          .catch((err: unknown) => {
            early?.close();
            throw err;
          });
        if (!opts.json) {
          const what = recorded.duplicate ? 'was already recorded (duplicate messageId)' : 'recorded';
          line(`session ${sessionId}: input #${recorded.seq} ${what} (message ${recorded.messageId})`);
        }
        const progress = opts.json ? null : progressReporter(io, recorded.seq);
        const stop = new AbortController();
        const onSigint = () => stop.abort();
        process.once('SIGINT', onSigint);
        try {
          // The agent's text as the stream printed it; null when nothing streams (no gateway, --json).
          let text: string | null = null;
          let end: TurnEnd | null = null;
          if (early && !recorded.duplicate) {
            progress?.update({ seq: recorded.seq, status: 'pending', outcome: null });
            text = opts.json ? null : '';
            const show = (piece: string) => {
              if (text === null) return;
              if (text === '') progress?.done();
              text += piece;
              io.stdout.write(piece);
            };
            end = await followTurn(client, sessionId, recorded.seq, {
              feed: early,
              timeoutMs: opts.timeout,
              signal: stop.signal,
              onText: show,
              onRestart: (step) => show(`\n[step ${step} was retried; its text again:]\n`),
            });
          }
          // After the stream said the turn is over (or without a gateway), the update answers at once.
          const decision = await client.waitForDecision(sessionId, recorded.seq, {
            timeoutMs: opts.timeout,
            signal: stop.signal,
            ...(progress ? { onProgress: progress.update } : {}),
          });
          progress?.done();
          const [view, history] = await Promise.all([client.snapshot(sessionId), client.history(sessionId)]);
          const input = history.find((h) => h.seq === recorded.seq) ?? null;
          let replyPrinted = false;
          if (text !== null) {
            // The stream is best effort: the end of the reply it did not print comes from the record.
            const reply = end === 'finished' ? (decision?.agent?.reply ?? input?.reply ?? '') : '';
            const { rest, whole } = replyBackstop(text, reply);
            if (rest !== '') {
              const upTo = reply.length - rest.length;
              const where = upTo === 0 ? 'none of the reply' : `the reply up to character ${upTo}`;
              io.stderr.write(`harness: the live stream printed ${where}; the rest is from the decision record\n`);
              // A whole reply starts on its own line; an end goes on where the stream stopped.
              const apart = rest.length === reply.length && text !== '' && !text.endsWith('\n');
              const piece = `${apart ? '\n' : ''}${rest}`;
              io.stdout.write(piece);
              text += piece;
            }
            if (text !== '' && !text.endsWith('\n')) io.stdout.write('\n');
            replyPrinted = whole;
          }
          if (opts.json) line(JSON.stringify({ ...recorded, decision, reply: input?.reply ?? null }));
          else if (decision) line(formatDecision(decision, view, input, { replyPrinted }));
          else line(`decision #${recorded.seq}: no longer kept by the session (older than its decision window)`);
        } finally {
          early?.close();
          progress?.done();
          process.off('SIGINT', onSigint);
        }
      });
    });

  program
    .command('inspect')
    .description('goals, capabilities and recent decisions of a Session')
    .argument('<session>', 'session id')
    .addOption(new Option('--limit <n>', 'how many recent decisions').argParser(positiveInt).default(10))
    .option('--json', 'print { snapshot, decisions } as JSON')
    .action(async (sessionId: string, opts: { limit: number; json?: boolean }, cmd: Command) => {
      await withClient(cmd, async (client) => {
        const [view, decisions] = await Promise.all([
          client.snapshot(sessionId),
          client.decisions(sessionId, { limit: opts.limit }),
        ]);
        line(opts.json ? JSON.stringify({ snapshot: view, decisions }, null, 2) : formatInspect(view, decisions));
      });
    });

  program
    .command('watch')
    .description(
      'follow a Session until it closes (Ctrl-C to stop): live events from the gateway (HARNESS_GATEWAY_URL, or the one `npm start` runs), else stage and decision changes by polling',
    )
    .argument('<session>', 'session id')
    .addOption(new Option('--since <seq>', 'also print decisions after this seq').argParser(nonNegativeInt))
    .option('--json', 'one JSON object per event')
    .action(async (sessionId: string, opts: { since?: number; json?: boolean }, cmd: Command) => {
      const stop = new AbortController();
      const onSigint = () => stop.abort();
      process.once('SIGINT', onSigint);
      try {
        await withClient(cmd, async (client) => {
          // A gateway that does not answer (npm start stopped, say) leaves watch to poll as before.
          const gateway = await reachableGateway(process.env);
          if (gateway) {
            // Live from the gateway's event stream: one log read to start, no polling while idle.
            const feed = new GatewayEventFeed(gateway.url, gateway.token);
            const after =
              opts.since !== undefined
                ? `${opts.since}.${Number.MAX_SAFE_INTEGER}`
                : (await client.eventsAfter(sessionId)).lastId;
            if (!opts.json) line(`watching ${sessionId} after event ${after ?? '(none)'}, live from ${gateway.url}`);
            for await (const event of client.events(sessionId, {
              feed,
              signal: stop.signal,
              ...(after ? { after } : {}),
            })) {
              line(opts.json ? JSON.stringify(event) : formatEvent(event));
            }
            return;
          }
          const events = client.watch(sessionId, {
            signal: stop.signal,
            ...(opts.since !== undefined ? { sinceSeq: opts.since } : {}),
          });
          for await (const event of events) {
            if (event.type === 'stage') {
              const { stage, seq, view } = event;
              line(opts.json ? JSON.stringify({ type: 'stage', stage, seq }) : formatStage(stage, seq, view));
            } else {
              line(opts.json ? JSON.stringify(event) : formatDecisionLine(event.record));
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
    .addOption(new Option('--limit <n>', 'most rows').argParser(positiveInt).default(50))
    .option('--json', 'print the rows as JSON')
    .action(async (opts: ListOptions, cmd: Command) => {
      await withClient(cmd, async (client) => {
        const rows = await client.list({
          limit: opts.limit,
          ...(opts.stage !== undefined ? { stage: opts.stage } : {}),
          ...(opts.status !== undefined ? { status: opts.status } : {}),
          ...(opts.parent !== undefined ? { parent: opts.parent } : {}),
          ...(opts.query !== undefined ? { query: opts.query } : {}),
        });
        line(opts.json ? JSON.stringify(rows, null, 2) : formatList(rows));
      });
    });
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

/** Live stage notices for `send --wait`: an ora spinner on a TTY, one plain line per change otherwise. */
function progressReporter(io: CliIO, seq: number): { update: (p: Progress) => void; done: () => void } {
  // A pseudo-terminal without a size (columns 0) would make the spinner's line arithmetic useless.
  const tty = Boolean(io.stdout.isTTY) && (io.stdout.columns ?? 0) > 0;
  const spinner = tty
    ? ora({ stream: io.stdout as NodeJS.WritableStream, discardStdin: false }).start(`waiting for input #${seq}`)
    : null;
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

/** What the wait has come to for input `seq`; null when there is nothing to say. */
export function describeProgress(p: Progress, seq: number): string | null {
  if (p.status === 'pending') return `input #${seq} is queued or its turn is running`;
  if (p.status === 'waiting') {
    return p.outcome === 'waiting-approval'
      ? `input #${seq} waits for an approval (harness approve|reject)`
      : `input #${seq} waits for an external tool result`;
  }
  return null;
}
