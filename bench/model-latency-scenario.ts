/**
 * The model-latency scenario (issue 22): a worker whose every model call is an `openai` client call to
 * the scripted model server (test/support/model-server.ts), each answered after a fixed latency. Each
 * input is timed from its signal to its finished decision record; what the harness adds on top of the
 * agent's own calls, in units of one model call, is its helper depth. The mix runs twice: with the
 * Session defaults, and with `speculativeAgentStep: false` where this build knows that setting.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { InvalidInputError } from '../client/errors.js';
import { startArgument } from '../client/payloads.js';
import type { DecisionRecord } from '../contract/state.js';
import type { UsageSum } from '../contract/usage.js';
import { OpenAIModels } from '../models/openai-models.js';
import type { Role } from '../models/roles.js';
import { honestCompaction } from '../test/support/honest-agent.js';
import { ScriptedModelServer, type Handler, type RecordedRequest, type Reply } from '../test/support/model-server.js';
import { FLAVORS, billableActions, close, send, settledEvents, start, type Driven } from './driver.js';
import { startStack, type StackOptions } from './stack.js';
import { UNDERSTANDING_SYSTEM } from '../models/prompts.js';
import { percentile, round } from './stats.js';

export const INPUT_KINDS = ['continue', 'new-phase', 'initialize'] as const;
export type InputKind = (typeof INPUT_KINDS)[number];

/** The issue-22 helper-depth targets at one model call per second. */
export const DEPTH_TARGETS: Record<InputKind, number> = { continue: 0.6, 'new-phase': 2.6, initialize: 2.6 };

/** The Session setting the second run turns off; builds without it refuse it in the start argument. */
export const SPECULATION_SETTING = 'speculativeAgentStep';

const MODEL: Record<Role, string> = {
  relevance: 'bench-relevance',
  extraction: 'bench-extraction',
  orchestration: 'bench-orchestration',
  compaction: 'bench-compaction',
  agent: 'bench-agent',
};

const TOPICS = ['ComfyUI', 'Temporal', 'pandoc', 'Ollama', 'Playwright', 'SQLite', 'Grafana', 'Caddy'];
const SECTIONS = ['installation', 'first workflow', 'troubleshooting', 'configuration', 'upgrades', 'shortcuts'];

/**
 * One Session's inputs: an initialize, continues, a new phase, more continues. The relevance role
 * tells them apart from the request alone (see `relevance`), not from the bench's labels.
 */
export function sessionPlan(topic: string, continues: number): Array<[InputKind, string]> {
  const section = (i: number) => SECTIONS[i % SECTIONS.length] ?? 'notes';
  const half = Math.ceil(continues / 2);
  return [
    ['initialize', `Research ${topic} and write a Markdown guide to it`],
    ...Array.from({ length: half }, (_, i): [InputKind, string] => ['continue', `Continue with the ${section(i)}`]),
    ['new-phase', `Convert the ${topic} Markdown guide to Word`],
    ...Array.from({ length: continues - half }, (_, i): [InputKind, string] => [
      'continue',
      `Continue with the ${section(half + i)} in the Word version`,
    ]),
  ];
}

const STOP = new Set(['with', 'the', 'and', 'into', 'from', 'that', 'this', 'write', 'continue']);
const words = (text: string) =>
  new Set(
    text
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((w) => w.length > 2 && !STOP.has(w)),
  );
const userJson = <T>(req: RecordedRequest): T =>
  JSON.parse(req.messages.find((m) => m.role === 'user')?.content ?? '{}') as T;

/**
 * The roles, each answering from its request alone:
 * - relevance: a message that opens with "Continue" goes on with the current phase; another that shares a
 *   word with the Session goal starts a new phase of it; anything else is unrelated;
 *   the combined call also gets the message's words as its task terms;
 * - extraction: the phase goal's words; orchestration: the two best-scored candidate Skills;
 * - compaction: test/support/honest-agent.ts honestCompaction;
 * - agent: a one-step reply about the newest user message.
 */
export function honestRoles(): Record<Role, Handler> {
  return {
    relevance: (req) => {
      const { message, sessionGoal } = userJson<{ message: string; sessionGoal: string }>(req);
      // The combined call (the default) asks for the message's task terms too: its words.
      const terms = req.messages[0]?.content === UNDERSTANDING_SYSTEM ? { terms: [...words(message)] } : {};
      if (/^continue\b/i.test(message.trim()))
        return { json: { phaseRelevance: 0.9, sessionRelevance: 0.9, ...terms } };
      const shared = [...words(message)].some((w) => words(sessionGoal).has(w));
      const scores = shared
        ? { phaseRelevance: 0.2, sessionRelevance: 0.85 }
        : { phaseRelevance: 0.1, sessionRelevance: 0.1 };
      return { json: { ...scores, ...terms } };
    },
    extraction: (req) => ({ json: { terms: [...words(userJson<{ phaseGoal: string }>(req).phaseGoal)] } }),
    orchestration: (req) => {
      const { candidates } = userJson<{ candidates: { skills: Array<{ id: string; score?: number }> } }>(req);
      const best = [...candidates.skills].sort((a, b) => (b.score ?? 0) - (a.score ?? 0)).slice(0, 2);
      return { json: { skills: best.map((s) => s.id), toolsets: [], memories: [] } };
    },
    compaction: honestCompaction,
    agent: (req) => {
      const input = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
      return { content: `Done: ${input}. The section is written and follows the loaded Skills.` };
    },
  };
}

/**
 * Every role's reply (`roles`, honestRoles unless given), after `latencyMs`; a role whose latency is
 * 0 answers at once (the streaming scenario paces the agent by its stream instead).
 */
export function delayedRoles(
  server: ScriptedModelServer,
  latencyMs: number | ((role: Role) => number),
  roles: Record<Role, Handler> = honestRoles(),
): void {
  for (const [role, handler] of Object.entries(roles) as Array<[Role, Handler]>) {
    const delayMs = typeof latencyMs === 'number' ? latencyMs : latencyMs(role);
    server.on(MODEL[role], async (req): Promise<Reply> => {
      const reply = await handler(req);
      return delayMs > 0 ? { delayMs, then: reply } : reply;
    });
  }
}

/** The worker's models: the `openai` provider for every role, pointed at the scripted server. */
export function benchModels(server: ScriptedModelServer): OpenAIModels {
  return new OpenAIModels({ baseURL: server.baseURL, apiKey: 'bench', models: MODEL, jsonMode: 'json_object' });
}

/** One input as measured. */
export interface InputSample {
  kind: InputKind;
  decision: string;
  elapsedMs: number;
  agentCalls: number;
  /** (elapsed − agent calls × latency) / latency. */
  depth: number;
  calls: Record<string, number>;
  tokens: number;
  promptTokens: number;
  cachedTokens: number;
  events: number;
  actions: number;
  /** Speculative agent steps this input discarded, and how many of them were cancelled before their usage came. */
  discarded: number;
  unknownUsage: number;
}

export interface KindFigures {
  inputs: number;
  decisions: Record<string, number>;
  depthP50: number;
  depthMax: number;
  target: number;
  met: boolean;
  /** Model calls per input, by role (mean). */
  callsPerInput: Record<string, number>;
  tokensPerInput: number;
  cachedTokensPerInput: number;
  eventsPerInput: number;
  actionsPerInput: number;
}

export interface MixRun {
  settings: Record<string, unknown>;
  byKind: Record<InputKind, KindFigures>;
  tokens: number;
  /** Discarded speculative steps over the mix; `unknownUsage` of them were cancelled before they answered. */
  discarded: number;
  unknownUsage: number;
  samples: InputSample[];
}

export interface ModelLatencyResult {
  latencyMs: number;
  sessions: number;
  continuesPerSession: number;
  /** The 1-minute load average when the scenario started and when it ended (the machine is shared). */
  loadavg: { start: number; end: number };
  /**
   * The first input after the worker started (an initialize in a Session of its own), signal to
   * finished record: it pays for cold work (first activity calls, connections), so it is not in the mix.
   */
  firstInputMs: number;
  /** The Session defaults (speculation on where the build has it). */
  defaults: MixRun;
  /** `speculativeAgentStep: false`, or why it did not run. */
  noSpeculation: MixRun | { unavailable: string };
  /** (tokens with defaults − tokens without speculation) / tokens with defaults, in percent. */
  speculativeOverheadPct: number | null;
}

const tokensOf = (sum: UsageSum | undefined) => (sum ? sum.promptTokens + sum.completionTokens : 0);

/** Polls the `decisions` query until the finished record for `seq` is there. */
async function finished(d: Driven, seq: number, timeoutMs = 180_000): Promise<DecisionRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const records = await d.handle.query<DecisionRecord[], [{ limit: number }]>('decisions', { limit: 3 });
    const record = records.find((r) => r.seq === seq);
    if (record) return record;
    if (Date.now() > deadline) throw new Error(`no decision record for seq ${seq} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function summarize(samples: InputSample[]): Record<InputKind, KindFigures> {
  const byKind = {} as Record<InputKind, KindFigures>;
  for (const kind of INPUT_KINDS) {
    const own = samples.filter((s) => s.kind === kind);
    const n = own.length || 1;
    const mean = (pick: (s: InputSample) => number) => round(own.reduce((sum, s) => sum + pick(s), 0) / n);
    const depths = own.map((s) => s.depth);
    const decisions: Record<string, number> = {};
    const calls: Record<string, number> = {};
    for (const s of own) {
      decisions[s.decision] = (decisions[s.decision] ?? 0) + 1;
      for (const [role, c] of Object.entries(s.calls)) calls[role] = (calls[role] ?? 0) + c;
    }
    const depthMax = round(Math.max(...depths));
    byKind[kind] = {
      inputs: own.length,
      decisions,
      depthP50: round(percentile(depths, 50)),
      depthMax,
      target: DEPTH_TARGETS[kind],
      met: own.length > 0 && percentile(depths, 50) <= DEPTH_TARGETS[kind],
      callsPerInput: Object.fromEntries(Object.entries(calls).map(([role, c]) => [role, round(c / n)])),
      tokensPerInput: mean((s) => s.tokens),
      cachedTokensPerInput: mean((s) => s.cachedTokens),
      eventsPerInput: mean((s) => s.events),
      actionsPerInput: mean((s) => s.actions),
    };
  }
  return byKind;
}

async function runMix(
  stack: Awaited<ReturnType<typeof startStack>>,
  settings: Record<string, unknown>,
  options: { latencyMs: number; sessions: number; continues: number },
): Promise<MixRun> {
  const samples: InputSample[] = [];
  for (let i = 0; i < options.sessions; i++) {
    const topic = `${TOPICS[i % TOPICS.length] ?? 'Caddy'}${i >= TOPICS.length ? ` ${i}` : ''}`;
    const d = await start(stack.client, stack.taskQueue, FLAVORS.session, settings);
    let before = await settledEvents(stack.client, d.handle.workflowId);
    for (const [kind, text] of sessionPlan(topic, options.continues)) {
      const t0 = performance.now();
      const seq = await send(d, text);
      const record = await finished(d, seq);
      const elapsedMs = performance.now() - t0;
      const after = await settledEvents(stack.client, d.handle.workflowId);
      const added = after.slice(before.length);
      before = after;
      const agentCalls = record.agent?.steps ?? 0;
      samples.push({
        kind,
        decision: record.decision,
        elapsedMs: round(elapsedMs),
        agentCalls,
        depth: round(elapsedMs / options.latencyMs - agentCalls),
        calls: Object.fromEntries(Object.entries(record.usage?.byRole ?? {}).map(([role, sum]) => [role, sum.calls])),
        tokens: tokensOf(record.usage?.total),
        promptTokens: record.usage?.total.promptTokens ?? 0,
        cachedTokens: record.usage?.total.cachedTokens ?? 0,
        events: added.length,
        actions: billableActions(added),
        discarded: record.usage?.speculative?.discarded ?? 0,
        unknownUsage: record.usage?.speculative?.unknown ?? 0,
      });
    }
    await close(d);
  }
  const total = (pick: (s: InputSample) => number) => samples.reduce((n, s) => n + pick(s), 0);
  return {
    settings,
    byKind: summarize(samples),
    tokens: total((s) => s.tokens),
    discarded: total((s) => s.discarded),
    unknownUsage: total((s) => s.unknownUsage),
    samples,
  };
}

/** Why this build refuses `settings` in a start argument, or null when it accepts them. */
export function settingsRefusal(settings: Record<string, unknown>): string | null {
  try {
    startArgument('bench-probe', { settings });
    return null;
  } catch (err) {
    if (err instanceof InvalidInputError && /settings/.test(err.message)) return err.message;
    throw err;
  }
}

export async function modelLatency(
  options: { latencyMs: number; sessions: number; continues: number } & Pick<StackOptions, 'address' | 'namespace'>,
  log: (line: string) => void = () => {},
): Promise<ModelLatencyResult> {
  const loadStart = round(loadavg()[0] ?? NaN);
  const server = await ScriptedModelServer.start({ promptCache: true });
  delayedRoles(server, options.latencyMs);
  const stack = await startStack({
    ...(options.address ? { address: options.address } : {}),
    ...(options.namespace ? { namespace: options.namespace } : {}),
    models: benchModels(server),
  });
  try {
    const warm = await start(stack.client, stack.taskQueue, FLAVORS.session);
    const t0 = performance.now();
    await finished(warm, await send(warm, sessionPlan('Hugo', 0)[0]![1]));
    const firstInputMs = round(performance.now() - t0);
    await close(warm);
    log('  defaults');
    const defaults = await runMix(stack, {}, options);
    const off = { [SPECULATION_SETTING]: false };
    const refusal = settingsRefusal(off);
    let noSpeculation: MixRun | { unavailable: string };
    if (refusal === null) {
      log(`  ${SPECULATION_SETTING}: false`);
      noSpeculation = await runMix(stack, off, options);
    } else {
      noSpeculation = { unavailable: refusal };
    }
    return {
      latencyMs: options.latencyMs,
      sessions: options.sessions,
      continuesPerSession: options.continues,
      loadavg: { start: loadStart, end: round(loadavg()[0] ?? NaN) },
      firstInputMs,
      defaults,
      noSpeculation,
      speculativeOverheadPct:
        'tokens' in noSpeculation && defaults.tokens > 0
          ? round(((defaults.tokens - noSpeculation.tokens) / defaults.tokens) * 100)
          : null,
    };
  } finally {
    await stack.stop();
    await server.close();
  }
}
