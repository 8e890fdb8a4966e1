/**
 * Scripts the helper-model roles on the shared model server by content, so several Sessions in one
 * test file can run side by side: relevance by message text, extraction and orchestration by the
 * task's phase goal, compaction by the finished phase goal, the agent by the newest message text.
 * A combined relevance call (UNDERSTANDING_SYSTEM) also gets the message's terms, scripted under the
 * message text (the phase goal it would set) or else its words: only what its request holds.
 *
 * Extraction and the combined call also state the message's task (`goal`): scripted by message text
 * in `statement`, else the message as it is, or null when it states no task (contract/goals.ts's
 * statement is empty: a greeting). The combined call says a message `refines` the current work when
 * it is in `refines`; its goal is then the scripted statement, or the request's phase goal with the
 * message's statement folded in.
 */
import { afterAll, beforeAll } from 'vitest';
import { MODEL, scriptedModels, startWorker, userJson, type TestWorker } from './harness.js';
import { ScriptedModelServer, type RecordedRequest, type Reply } from './model-server.js';
import { UNDERSTANDING_SYSTEM } from '../../models/prompts.js';
import { refinedStatement, taskStatement } from '../../contract/goals.js';

/** Whether a relevance request is the combined call, which asks for the message's task terms as well. */
export function asksForTerms(req: RecordedRequest): boolean {
  return req.messages.find((m) => m.role === 'system')?.content === UNDERSTANDING_SYSTEM;
}

/** The Session an agent request is for, from the system message the worker writes. */
export function agentSessionOf(req: RecordedRequest): string {
  return /business agent of Session (\S+)\./.exec(req.messages[0]?.content ?? '')?.[1] ?? '';
}

type Scores = [phase: number, session: number];
type Selection = { skills?: string[]; toolsets?: string[]; memories?: string[] };

export interface RoleScript {
  relevance: Map<string, Scores | Reply | Reply[]>;
  terms: Map<string, string[] | Reply>;
  selection: Map<string, Selection | Reply>;
  /** By phase goal: a fixed summary or reply, or one built from the compaction request's JSON. */
  summary: Map<string, string | Reply | ((request: Record<string, unknown>) => string)>;
  reply: Map<string, string | Reply>;
  /** By message text: the task statement extraction and the combined call write (null: no task stated). */
  statement: Map<string, string | null>;
  /** Messages the combined call judges to refine the current work. */
  refines: Set<string>;
}

function isReply(value: unknown): value is Reply {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    ['json', 'content', 'toolCalls', 'status', 'delayMs', 'hangUp'].some((k) => k in value)
  );
}

/** Replies given as a list are served one per request, the last one repeating. */
function next(list: Reply[], counter: Map<Reply[], number>): Reply {
  const i = counter.get(list) ?? 0;
  counter.set(list, i + 1);
  return list[Math.min(i, list.length - 1)]!;
}

export function scriptRoles(server: ScriptedModelServer): RoleScript {
  const script: RoleScript = {
    relevance: new Map(),
    terms: new Map(),
    selection: new Map(),
    summary: new Map(),
    reply: new Map(),
    statement: new Map(),
    refines: new Set(),
  };
  // The statement of a message: scripted, else the message itself, or null when it asks for nothing.
  const statementOf = (message: string) =>
    script.statement.has(message) ? (script.statement.get(message) ?? null) : taskStatement(message) ? message : null;
  const counters = new Map<Reply[], number>();
  const missing = (what: string): Reply => ({ status: 400, body: { error: { message: `unscripted ${what}` } } });

  // Terms for a task whose phase goal is `goal`: scripted, or its words.
  const termsFor = (goal: string) => script.terms.get(goal) ?? goal.toLowerCase().split(/\W+/).filter(Boolean);
  server.on(MODEL.relevance, (req: RecordedRequest) => {
    const { message, sessionGoal, phaseGoal } = userJson<{ message: string; sessionGoal: string; phaseGoal: string }>(
      req,
    );
    // `message|sessionGoal` scripts one judgment against particular goals; `message` alone any.
    const entry = script.relevance.get(`${message}|${sessionGoal}`) ?? script.relevance.get(message);
    if (entry === undefined) return missing(`relevance for "${message}"`);
    if (Array.isArray(entry) && entry.every((e) => typeof e === 'number')) {
      const terms = asksForTerms(req) ? termsFor(message) : undefined;
      const scores = { phaseRelevance: entry[0], sessionRelevance: entry[1] };
      if (isReply(terms) || !terms) return { json: scores };
      const refines = script.refines.has(message);
      const goal = refines
        ? (script.statement.get(message) ?? refinedStatement(phaseGoal, message))
        : statementOf(message);
      return { json: { ...scores, terms, goal, refines } };
    }
    return Array.isArray(entry) ? next(entry, counters) : entry;
  });
  server.on(MODEL.extraction, (req) => {
    const { phaseGoal, message } = userJson<{ phaseGoal: string; message: string }>(req);
    const entry = termsFor(phaseGoal);
    return isReply(entry) ? entry : { json: { terms: entry, goal: statementOf(message) } };
  });
  server.on(MODEL.orchestration, (req) => {
    const { task } = userJson<{ task: { phaseGoal: string } }>(req);
    const entry = script.selection.get(task.phaseGoal);
    if (entry === undefined) return missing(`selection for "${task.phaseGoal}"`);
    return isReply(entry) ? entry : { json: entry };
  });
  server.on(MODEL.compaction, (req) => {
    const request = userJson<{ phaseGoal: string }>(req);
    const scripted = script.summary.get(request.phaseGoal) ?? `Summary of: ${request.phaseGoal}`;
    const entry = typeof scripted === 'function' ? scripted(request) : scripted;
    return isReply(entry) ? entry : { json: { summary: entry } };
  });
  server.on(MODEL.agent, (req) => {
    // The newest user message is the input the turn is for; earlier ones are transcript.
    const user = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const text = user.split('\n[resource]')[0] ?? user;
    const entry = script.reply.get(text) ?? `Working on: ${text}`;
    return isReply(entry) ? entry : { content: entry };
  });
  return script;
}

export interface ScriptedFixture {
  server: ScriptedModelServer;
  script: RoleScript;
  worker: TestWorker;
}

/**
 * Registers beforeAll/afterAll hooks that start a scripted model server, script its roles and run a
 * worker whose models talk to it. The returned object is filled in once the hooks have run.
 */
export function useScriptedWorker(): ScriptedFixture {
  const fixture = {} as ScriptedFixture;
  beforeAll(async () => {
    fixture.server = await ScriptedModelServer.start();
    fixture.script = scriptRoles(fixture.server);
    fixture.worker = await startWorker({ models: scriptedModels(fixture.server) });
  });
  afterAll(async () => {
    await fixture.worker?.stop();
    await fixture.server?.close();
  });
  return fixture;
}
