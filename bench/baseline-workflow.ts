/**
 * The bare-Temporal baseline the Session is measured against: the minimum a model-gated step needs.
 * A `message` signal enqueues, the loop runs the relevance activity and then one agent step (the
 * same activity functions, on the same worker, as the Session's), and the outcome is recorded for
 * the `decisions` query. Nothing else: no goals beyond the first message, no search attributes, no
 * current details, no validation beyond de-duplication. It continues-as-new when Temporal suggests
 * it, so long bursts stay comparable with the Session, which does the same.
 *
 * Workflow code: bundled by bench/workflows.ts and run in the workflow sandbox.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentActivities, SessionActivities } from '../contract/activity-contract.js';

export interface BaselineMessage {
  messageId: string;
  text: string;
}

export interface BaselineRecord {
  seq: number;
  messageId: string;
  decision: string;
  scores: { phase: number; session: number } | null;
}

export interface BaselineInput {
  carried?: { goal: string | null; seq: number; queue: BaselineMessage[]; seen: string[]; closed: boolean };
}

const messageSignal = defineSignal<[BaselineMessage]>('message');
const commandSignal = defineSignal<[{ commandId: string; name: string }]>('command');
const decisionsQuery = defineQuery<BaselineRecord[], [{ limit?: number }?]>('decisions');

// The Session's helper-role options (modelTimeoutMs 20 s, 3 attempts), so retries and timeouts match.
const { relevance, agentStep } = proxyActivities<SessionActivities & AgentActivities>({
  startToCloseTimeout: 20_000,
  scheduleToCloseTimeout: 75_000,
  retry: { maximumAttempts: 3, initialInterval: '250ms', backoffCoefficient: 2, maximumInterval: '2s' },
});

/** Workflow type `benchBaseline`. */
export async function benchBaseline(input: BaselineInput = {}): Promise<{ seq: number }> {
  const carried = input.carried;
  let goal = carried?.goal ?? null;
  let seq = carried?.seq ?? 0;
  let closed = carried?.closed ?? false;
  const queue: BaselineMessage[] = carried?.queue ?? [];
  const seen = new Set(carried?.seen ?? []);
  const decisions: BaselineRecord[] = [];

  setHandler(messageSignal, (message) => {
    if (seen.has(message.messageId)) return;
    seen.add(message.messageId);
    queue.push(message);
  });
  setHandler(commandSignal, (command) => {
    if (command.name === 'close') closed = true;
  });
  setHandler(decisionsQuery, (options) => decisions.slice(-(options?.limit ?? decisions.length)));

  for (;;) {
    await condition(() => queue.length > 0 || closed || workflowInfo().continueAsNewSuggested);
    if (queue.length === 0 && closed) return { seq };
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof benchBaseline>({
        carried: { goal, seq, queue, seen: [...seen].slice(-2_000), closed },
      });
    }
    const message = queue.shift();
    if (!message) continue;
    seq++;
    goal ??= message.text;
    const scores = await relevance({
      message: { text: message.text, resources: [] },
      phaseGoal: goal,
      sessionGoal: goal,
    });
    const decision = band(scores.phaseRelevance, scores.sessionRelevance);
    await agentStep({
      sessionId: workflowInfo().workflowId,
      goals: { session: goal, phase: goal },
      decision: 'continue',
      summaries: [],
      transcript: [{ kind: 'user', seq, text: message.text, resources: [] }],
      skills: [],
      toolsets: [],
      memories: [],
      step: 1,
    });
    decisions.push({
      seq,
      messageId: message.messageId,
      decision,
      scores: { phase: scores.phaseRelevance, session: scores.sessionRelevance },
    });
    if (decisions.length > 100) decisions.shift();
  }
}

/** The Session's default bands (high 0.65, low 0.35), reduced to a label. */
function band(phase: number, session: number): string {
  const level = (x: number) => (x >= 0.65 ? 'high' : x <= 0.35 ? 'low' : 'mid');
  const p = level(phase);
  const s = level(session);
  if (p === 'high' && s === 'high') return 'continue';
  if (p === 'low' && s === 'high') return 'new-phase';
  if (p === 'low' && s === 'low') return 'out-of-scope';
  if (p === 'high' && s === 'low') return 'conflict';
  return 'uncertain';
}
