/**
 * The streaming scenario (issue 23): the agent's reply streams from the scripted model server in
 * paced chunks, and a real subscriber (`SessionClient.events` on the worker's event feed, following
 * the Session from before its first input) times each continue input from its signal to the first
 * `agent.delta` and to the durable `turn.finished` event. The deltas of each turn, joined, are
 * checked against the reply in `turn.finished`. The mix runs with the Session defaults and with
 * `speculativeAgentStep: false` (a speculative step's deltas wait for the input's decision).
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { SessionClient } from '../client/session-client.js';
import type { SessionEvent } from '../contract/events.js';
import type { Role } from '../models/roles.js';
import { ScriptedModelServer, type Handler } from '../test/support/model-server.js';
import { FLAVORS, close, send, start } from './driver.js';
import {
  SPECULATION_SETTING,
  benchModels,
  delayedRoles,
  honestRoles,
  sessionPlan,
  settingsRefusal,
} from './model-latency-scenario.js';
import { startStack, type Stack, type StackOptions } from './stack.js';
import { percentile, round } from './stats.js';

export interface StreamingOptions {
  /** Continue inputs measured per run. */
  turns: number;
  /** About how long the agent's reply is, in characters. */
  replyChars: number;
  /** Characters per streamed chunk. */
  chunkChars: number;
  /** Pause between chunks. */
  chunkDelayMs: number;
  /** Fixed latency of every helper role's (non-agent) call; 0 answers at once. */
  helperLatencyMs: number;
}

type Delta = Extract<SessionEvent, { kind: 'agent.delta' }>;

/** One continue input as the subscriber saw it. */
export interface StreamingTurn {
  decision: string;
  /** Signal to the first `agent.delta` of the input; null when none arrived (they are best effort). */
  firstDeltaMs: number | null;
  /** Signal to the input's durable `turn.finished` event. */
  finishedMs: number;
  deltas: number;
  replyChars: number;
  /** The last agent step's deltas (of its last attempt), joined, equal the reply in `turn.finished`. */
  textMatched: boolean;
}

export interface StreamingRun {
  settings: Record<string, unknown>;
  firstDeltaMs: { p50: number; p95: number };
  finishedMs: { p50: number; p95: number };
  /** First delta p50 / finished p50 (and the same at p95). */
  ratioP50: number;
  ratioP95: number;
  /** Turns whose deltas joined equal the final reply, of `turns.length`. */
  textMatched: number;
  /** Turns with at least one delta. */
  withDeltas: number;
  turns: StreamingTurn[];
}

export interface StreamingResult {
  turns: number;
  replyChars: number;
  chunkChars: number;
  chunkDelayMs: number;
  helperLatencyMs: number;
  /** The pacing alone of one reply: (chunks − 1) × delay. */
  streamMs: number;
  /** The 1-minute load average when the scenario started and when it ended (the machine is shared). */
  loadavg: { start: number; end: number };
  /** The Session defaults (speculation on). */
  defaults: StreamingRun;
  /** `speculativeAgentStep: false`, or why this build refuses it. */
  noSpeculation: StreamingRun | { unavailable: string };
}

/** A reply of about `chars` characters built from the newest user message alone (honest). */
export function longReply(chars: number): Handler {
  return (req) => {
    const input = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    let text = `Done: ${input}.`;
    for (let part = 1; text.length < chars; part++) {
      text += ` Part ${part} of "${input}" is written and follows the loaded Skills.`;
    }
    return { content: text };
  };
}

/** The text a turn's deltas show: the last step's pieces of its last attempt, in order. */
export function deltaText(deltas: readonly Delta[]): string {
  const step = Math.max(...deltas.map((d) => d.step));
  const own = deltas.filter((d) => d.step === step);
  const attempt = Math.max(...own.map((d) => d.attempt ?? 1));
  return own
    .filter((d) => (d.attempt ?? 1) === attempt)
    .map((d) => d.text)
    .join('');
}

interface Watching {
  seq: number;
  t0: number;
  firstDeltaAt?: number;
  deltas: Delta[];
  decision?: string;
  finished?: (at: number, reply: string | null) => void;
}

async function runMix(
  stack: Stack,
  sessions: SessionClient,
  settings: Record<string, unknown>,
  options: StreamingOptions,
): Promise<StreamingRun> {
  const id = randomUUID().slice(0, 8);
  const sessionId = `bench-${id}`;
  const d = await start(stack.client, stack.taskQueue, FLAVORS.session, settings, id);
  const abort = new AbortController();
  let watching: Watching | undefined;
  // One subscriber for the whole Session, open before its first input is sent.
  const following = (async () => {
    for await (const event of sessions.events(sessionId, { feed: stack.built.events, signal: abort.signal })) {
      const now = performance.now();
      const w = watching;
      if (!w || event.seq !== w.seq) continue;
      if (event.kind === 'agent.delta') {
        w.firstDeltaAt ??= now;
        w.deltas.push(event);
      } else if (event.kind === 'decision') {
        w.decision = event.decision;
      } else if (event.kind === 'turn.finished') {
        w.finished?.(now, event.reply);
      }
    }
  })();
  const turn = async (text: string): Promise<StreamingTurn> => {
    const w: Watching = { seq: d.sent + 1, t0: performance.now(), deltas: [] };
    const done = new Promise<{ at: number; reply: string | null }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no turn.finished for seq ${w.seq} within 180 s`)), 180_000);
      w.finished = (at, reply) => {
        clearTimeout(timer);
        resolve({ at, reply });
      };
    });
    watching = w;
    await send(d, text);
    const { at, reply } = await Promise.race([done, following.then(() => Promise.reject(new Error('events ended')))]);
    watching = undefined;
    return {
      decision: w.decision ?? 'unknown',
      firstDeltaMs: w.firstDeltaAt === undefined ? null : round(w.firstDeltaAt - w.t0),
      finishedMs: round(at - w.t0),
      deltas: w.deltas.length,
      replyChars: reply?.length ?? 0,
      textMatched: w.deltas.length > 0 && reply !== null && deltaText(w.deltas) === reply,
    };
  };
  try {
    // The initialize pays for the Session's first activities; only the continues are measured.
    const plan = sessionPlan('Hugo', options.turns);
    await turn(plan[0]![1]);
    const continues = plan.filter(([kind]) => kind === 'continue').map(([, text]) => text);
    const turns: StreamingTurn[] = [];
    for (const text of continues) turns.push(await turn(text));
    const first = turns.flatMap((t) => (t.firstDeltaMs === null ? [] : [t.firstDeltaMs]));
    const finished = turns.map((t) => t.finishedMs);
    const p = (xs: number[], q: number) => round(percentile(xs, q));
    return {
      settings,
      firstDeltaMs: { p50: p(first, 50), p95: p(first, 95) },
      finishedMs: { p50: p(finished, 50), p95: p(finished, 95) },
      ratioP50: round(percentile(first, 50) / percentile(finished, 50)),
      ratioP95: round(percentile(first, 95) / percentile(finished, 95)),
      textMatched: turns.filter((t) => t.textMatched).length,
      withDeltas: first.length,
      turns,
    };
  } finally {
    abort.abort();
    await close(d);
    await following.catch(() => {});
  }
}

export async function streaming(
  options: StreamingOptions & Pick<StackOptions, 'address' | 'namespace'>,
  log: (line: string) => void = () => {},
): Promise<StreamingResult> {
  const loadStart = round(loadavg()[0] ?? NaN);
  const server = await ScriptedModelServer.start({ promptCache: true });
  server.streamWith({ chunkChars: options.chunkChars, delayMs: options.chunkDelayMs });
  delayedRoles(server, (role: Role) => (role === 'agent' ? 0 : options.helperLatencyMs), {
    ...honestRoles(),
    agent: longReply(options.replyChars),
  });
  const stack = await startStack({
    ...(options.address ? { address: options.address } : {}),
    ...(options.namespace ? { namespace: options.namespace } : {}),
    models: benchModels(server),
  });
  const sessions = new SessionClient(stack.client, { taskQueue: stack.taskQueue });
  try {
    log('  defaults');
    const defaults = await runMix(stack, sessions, {}, options);
    const off = { [SPECULATION_SETTING]: false };
    const refusal = settingsRefusal(off);
    let noSpeculation: StreamingRun | { unavailable: string };
    if (refusal === null) {
      log(`  ${SPECULATION_SETTING}: false`);
      noSpeculation = await runMix(stack, sessions, off, options);
    } else {
      noSpeculation = { unavailable: refusal };
    }
    const chunks = Math.ceil(options.replyChars / options.chunkChars);
    return {
      turns: options.turns,
      replyChars: options.replyChars,
      chunkChars: options.chunkChars,
      chunkDelayMs: options.chunkDelayMs,
      helperLatencyMs: options.helperLatencyMs,
      streamMs: Math.max(0, chunks - 1) * options.chunkDelayMs,
      loadavg: { start: loadStart, end: round(loadavg()[0] ?? NaN) },
      defaults,
      noSpeculation,
    };
  } finally {
    await stack.stop();
    await server.close();
  }
}
