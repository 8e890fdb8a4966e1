/**
 * Every workflow patch, one row each, and the rules for asking and retiring them: the table that
 * docs/patches.md is generated from (`npm run patches`). A unit test (test/unit/patches.test.ts)
 * fails when the document differs from what this renders, or when a `patched()` or `deprecatePatch()`
 * call in the source names an id that is not here. Ids are history contract: never rename one.
 */
import { patched } from '@temporalio/workflow';

/** Where a patch is asked (Markdown, rendered into docs/patches.md). */
export const ASKING_RULE = `Ask a patch either at the run's start, by adding it at the end of one of the run-start lists in \`workflows/patches.ts\` (\`session.ts\` asks both, each in its order, so the markers of a run's first task sit in the same order in every history), or where its branch is, when that is not in the continuation of a local activity's result. A run-start patch that changes a handler, or the order the handlers are set in, goes at the end of \`ASKED_BEFORE_HANDLERS\` (as \`submit-after-control\`, \`message-after-control\`, \`bound-control\`, \`current-control-policy\` and \`arrival-order-signals\` did): a run's first task hands buffered signals and updates to each handler as it is set, so its answer must be known before the first \`setHandler\`. Any other goes at the end of \`ASKED_AFTER_HANDLERS\`. Never ask one for the first time there (the worker policy at a run's start, \`verifyControl\` for a signed item, \`checkApprovalEdit\`): core can complete the workflow task before that continuation runs and record the local activity's marker in it, so the run asks the patch in the next task; on replay the marker resolves in the first task, the continuation runs there, and the patch marker, met a task later, has no command: \`[TMPRL1100] Non-deprecated patch marker encountered\`. The bench's long Session hit it with \`speculative-agent-step\` first asked after a continued run's worker-policy answer, which is why the run-start lists exist. A run recorded before a run-start patch gets \`false\` there and keeps the old branch for the rest of the run. \`control-search-attributes\` is asked in \`applyNow\`, which under signed control runs right after \`verifyControl\` returns: the \`worker-policy\` history's second run records that case (its marker in the same task as the verdict), and it replays. To keep new runs out of that race all the same, \`session.ts\` also asks it at the run's start, after the handlers, in runs that began with \`submit-after-control\` (the newest patch when this rule was written): their marker lands in the first task and \`applyNow\` only reads the answer. Runs that began before \`submit-after-control\` are left as they were recorded: moving their first ask would move their marker, and a run whose first task applied a control item would no longer replay.`;

/** When a patch can go (Markdown, rendered into docs/patches.md). */
export const RETIRING_RULE = `A patch's old branch stays while a run that started before its \`since\` commit may still be open, reset or replayed (retention included). Such runs can no longer exist once the task queue they ran on is drained: with Worker Versioning, once no open run is pinned to a deployment version older than the patch; without it, at a release boundary after which \`temporal workflow list --query 'WorkflowType="session" AND ExecutionStatus="Running" AND StartTime < "<since date>"'\` lists nothing and the retention period of closed runs has passed. Then, for one release, \`patched(id)\` becomes \`deprecatePatch(id)\` (the new branch only; histories that carry the marker still replay) and the committed histories in \`test/histories/\` that take the old branch are removed, since they document runs that can no longer exist; in the next release the call and the row go. Every patch kept costs each new run a marker and an upsert of \`TemporalChangeVersion\`: two history events, though Temporal Cloud's Actions page does not bill that upsert (\`bench/driver.ts\` counts by that page), so retiring them keeps histories and replay short rather than bills low.`;

/** What the rule says today (Markdown, rendered into docs/patches.md). */
export const RETIRED_SO_FAR = `None yet. Every id came between 2026-11-30 and 2026-12-06 and no release boundary with a drained task queue has passed since, so a run that takes each old branch may still be open; the committed histories that take the old branches (named in each row, or recorded before the id existed) document such runs and must keep replaying. No \`deprecatePatch\` is called.`;

/** One patch: its id, when it came, where it is asked, and what its old branch does and why it is kept. */
export interface PatchRow {
  readonly id: string;
  /** The commit (and date) that introduced it. */
  readonly since: string;
  /** `start`: asked at the run's start (`askAtStart`); `where`: asked where its branch is. */
  readonly asked: 'start' | 'where';
  /** The file that asks it (and where the answer is used, when that is elsewhere). */
  readonly where: string;
  /** What the old branch does, and which committed histories replay it. */
  readonly why: string;
}

/** Every patch id in use, oldest first. */
export const PATCHES = [
  {
    id: 'route-out-of-scope',
    since: 'd34c68e (2026-11-30)',
    asked: 'where',
    where: 'workflows/process-input.ts',
    why: 'Sessions recorded before responsibility routing keep out-of-scope requests without routing them (`before-routing` history).',
  },
  {
    id: 'control-search-attributes',
    since: '1b3cb25 (2026-11-30)',
    asked: 'where',
    where:
      "workflows/control/control-plane.ts (`applyNow`); and at the run's start in workflows/session.ts, in runs that began with `submit-after-control`",
    why: 'Without it, pause, resume and close upsert no search attributes at once; they show after the next input.',
  },
  {
    id: 'agent-loop',
    since: 'ca2b0e7 (2026-12-01)',
    asked: 'where',
    where: 'workflows/process-input.ts',
    why: 'Sessions recorded before the tool loop replay their single `agentTurn` activity call (`before-routing`, `with-routing` histories). No worker implements `agentTurn` any more: replay never runs activities, and the contract keeps only its request and result shapes (`RetiredActivities`).',
  },
  {
    id: 'route-by-update',
    since: 'ca2b0e7 (2026-12-01)',
    asked: 'where',
    where: 'workflows/children/routing.ts',
    why: "Routing hands a request over by signal instead of the `handOver` activity (update), so a receiver's refusal was not seen.",
  },
  {
    id: 'coarse-stage-attribute',
    since: 'ca2b0e7 (2026-12-01)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/view/visibility.ts)',
    why: 'The `SessionStage` search attribute is upserted per input stage instead of only on Idle / waiting / paused / closed.',
  },
  {
    id: 'idle-timeout',
    since: '3baae24 (2026-12-01)',
    asked: 'start',
    where: 'workflows/session.ts',
    why: 'Sessions started before the idle timeout never arm its timer.',
  },
  {
    id: 'relevance-lookahead',
    since: '90062d0 (2026-12-01)',
    asked: 'start',
    where: 'workflows/session.ts',
    why: 'Queued inputs are judged one at a time, never ahead.',
  },
  {
    id: 'compact-to-low-water',
    since: '8ea96fe (2026-12-01)',
    asked: 'where',
    where: 'workflows/agent/context-window.ts',
    why: 'Context compaction brings the transcript just under the budget rather than to half of it (`before-compact-to-low-water` history).',
  },
  {
    id: 'approval-ids',
    since: '8d1a9a9 (2026-12-02)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/control/)',
    why: "An approval names the model's call id (or the new approval id) and may answer a call that does not wait yet; without it approvals bind to `<seq>:<step>:<callId>` and the argument hash (`before-approval-ids-*` histories).",
  },
  {
    id: 'delegation-keys',
    since: '22cbcdc (2026-12-02)',
    asked: 'where',
    where: 'workflows/agent/agent-loop.ts',
    why: "`session_create_sub` hands over the model's text under messageId/requestKey `tool:<callId>` (a later turn reusing `call_1` was a duplicate at the receiver), with no note, no depth or per-turn limit, and no reply expected (`agent-sub-session` history).",
  },
  {
    id: 'sub-session-answers',
    since: '22cbcdc (2026-12-02)',
    asked: 'where',
    where:
      'workflows/children/routing.ts, workflows/children/sub-sessions.ts, workflows/control/result.ts (three branches, each asked where it is)',
    why: 'Routing hands over without `routed.seq` and neither limits depth nor waits for a reply; a sub-session sends no `answerParent` when its turn for a handed-over input ends; the `result` update reports a routed input `done` at once (`routing-*`, `with-routing` histories; `answers-*` record the new branch).',
  },
  {
    id: 'goal-attribute-off-when-encrypted',
    since: '967dbac (2026-12-02)',
    asked: 'where',
    where: 'worker/encrypted-workflow-interceptors.ts',
    why: "Only in the encrypting workers' bundles (`worker/encrypted-workflow-interceptors.ts`): runs that began before it keep the start argument's `goalSearchAttribute`.",
  },
  {
    id: 'phase-handoff',
    since: 'fc191c7 (2026-12-02)',
    asked: 'where',
    where: 'workflows/environment/phases.ts',
    why: 'A finished phase is compacted from its user inputs alone (`{ phaseGoal, inputs }`) and keeps no summary when the model fails; with it the whole phase record goes to the compaction role and a failure keeps the deterministic hand-off (`phase-handoff` history).',
  },
  {
    id: 'compact-turn-outputs',
    since: '2178f89 (2026-12-02)',
    asked: 'where',
    where: 'workflows/agent/context-window.ts',
    why: "A turn over `agentContextBytes` after compaction is sent whole; with it the turn's earlier tool steps go as clipped stubs (`phase-handoff` history).",
  },
  {
    id: 'model-budgets',
    since: 'ab32ad2 (2026-12-02)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/ledger/accounting.ts, workflows/stages/activity-proxies.ts)',
    why: "Sessions started before budgets send no `budget` with their model calls, so no call is refused or answered locally for budget (their usage is still summed when a worker reports it). With it, every model call carries the turn's and the Session's spending and limits, and an agent step answered `budget-exceeded` ends the turn (`budget-exceeded` history).",
  },
  {
    id: 'worker-policy',
    since: 'd26fbbd (2026-12-02)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/control/control-plane.ts)',
    why: 'Runs recorded before worker policies take their settings as started (no `workerPolicy` local activity, no caps), apply control signals synchronously in their handlers and never verify signatures or identities (`worker-policy` history records the new path).',
  },
  {
    id: 'combined-understanding',
    since: '2d0ce9f (2026-12-02)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/process-input.ts)',
    why: 'A new phase always calls the extraction role for its task terms. With it, a new phase whose relevance result carries terms (a worker running `HARNESS_UNDERSTANDING=combined`, the default for model providers) recalls with them and records the extract stage as `terms from the relevance call` (`combined-understanding` history).',
  },
  {
    id: 'compaction-beside',
    since: '2d0ce9f (2026-12-02)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/process-input.ts)',
    why: "The finished phase is compacted after the new phase's environment is prepared, one after the other. With it, its compaction activity starts as soon as the new-phase decision is made, runs beside extraction, recall, orchestration and apply, and is awaited before the agent's first step; its stage entry is reserved when it starts (`combined-understanding` history).",
  },
  {
    id: 'speculative-agent-step',
    since: '7c869c2 (2026-12-02)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/agent/speculation.ts)',
    why: "Sessions recorded before it never send the agent's first step beside the relevance call: the step waits for the decision. (`speculation-adopted`, `speculation-discarded` histories record the new path).",
  },
  {
    id: 'approval-edits',
    since: '32620fa (2026-12-02)',
    asked: 'where',
    where: 'workflows/control/control-plane.ts',
    why: 'Asked only when an approval carries `arguments`. Runs recorded before approval edits refused such an approval by its schema (no command followed); the old branch refuses it with a recorded reason. The new branch checks the edit with the `checkApprovalEdit` local activity (in order with the other control items) before applying it (`approval-edit` history).',
  },
  {
    id: 'submit-after-control',
    since: '6bbe672 (2026-12-02)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/control/control-plane.ts)',
    why: "A `submit` update is decided at once, even while a control item sent before it still waits (for the worker policy in a run's first task, or for its signature check), so a close did not refuse the submit that followed it. With it the submit waits for those items first, and its handler is set after the control handlers (a run's first task hands buffered updates and signals to handlers as each is set).",
  },
  {
    id: 'message-after-control',
    since: 'e7c6ac9 (2026-12-04)',
    asked: 'start',
    where: 'workflows/session.ts',
    why: "A `message` signal is taken into the queue at once, even while a control item sent before it still waits (for the worker policy in a run's first task, or for its signature check): a pause sent before messages in a run's first task was applied only after the loop had bound the first of them. With it the message waits behind those items, as a `submit` does, and its handler is set after the control handlers.",
  },
  {
    id: 'bound-control',
    since: '391fef1 (2026-12-04)',
    asked: 'start',
    where:
      'workflows/session.ts (used in workflows/control/, workflows/children/sub-sessions.ts); and where a tool result carrying `resultId` is delivered (workflows/control/control-plane.ts), in runs that began before it',
    why: "Runs recorded before it match a tool result by the model's call id alone (a signed result for `call_1` answered a later step's `call_1`), take a `subSessionReply` unverified, and check a message's signature only for a user identity, so a hand-over's `from: {kind: \"session\"}`, `routed` and `note` are trusted unsigned. With it, under signed control, a tool result must name its waiting call (`resultId`, inside the MAC), a reply must carry its worker's signature, and an unsigned or altered hand-over loses its session identity, route and note. A result that carries `resultId` in a run that began before it asks the patch where it is delivered: a live run answers true and binds it; a replay of a history recorded before `resultId` existed answers false and refuses it, as that history's schema did (`bound-control` history records the new path).",
  },
  {
    id: 'current-control-policy',
    since: '12ff462 (2026-12-04)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/control/control-plane.ts, workflows/control/signed-control.ts)',
    why: "Runs recorded before it judge control by the worker policy asked at their start: with no keys then, unsigned approvals, tool results, commands and identities are applied until the run continues as new, and a run's key ids are frozen, so a rotation strands a waiting approval; signed items are de-duplicated only by id in `recentControl`. With it every item but a notification waits for the `checkControl` local activity (whether the worker requires signing now, and whether the signature holds under its current keys and maximum lifetime), a message's identity, route and note are checked so on arrival, accepted signed items are remembered by MAC per kind until they expire (`replayWindow`), and a `message` signal waits behind the control items sent before it, as a submit does (`current-control-policy` history).",
  },
  {
    id: 'agent-capabilities',
    since: 'dffc094 (2026-12-05)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/agent/agent-loop.ts)',
    why: 'Runs recorded before it hand a built-in `capabilities_search`, `capabilities_load` or `capabilities_unload` call to the `runTool` activity, which answers that the Session runs it (an error result); no committed history has one, since no worker offered those tools then. With it the Session runs them: the search through the `searchCapabilities` local activity, loads and unloads as a capability diff recorded as a revision with reason `agent` (`agent-capabilities` history).',
  },
  {
    id: 'fewer-actions',
    since: '363f6c6 (2026-12-05)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/agent/speculation.ts, workflows/view/visibility.ts)',
    why: "Runs recorded before it send the agent's first step ahead right after `initialize` and beside a relevance judgment made ahead that has already answered (a new phase then discards it: an activity and its tokens for nothing), and upsert the search attributes at the run's start even when a first input is bound in the same task, whose stage entry upserts them again with the goal (two upserts in a Session's first task). With it the step is sent ahead only where a continue is the likely outcome (after `continue` or `new-phase`, with no answered judgment ahead), and a fresh run's start-up upsert waits for the first input's stage, or for the loop's first wait, so the first task upserts once (`fewer-actions` history).",
  },
  {
    id: 'while-busy',
    since: 'cc8e3b2 (2026-12-06)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/control/while-busy.ts)',
    why: "Runs recorded before it queue every message that arrives during an agent turn, whatever the Session's `whileBusy` setting or the message's own says (the `enqueue` mode). With it the message's handler decides by that mode: `reject` records a refusal with cause `busy` (a `submit` fails with `SessionBusy`), `interrupt` ends the running turn `interrupted` (its model step cancelled, a running tool call left to finish) before the message is processed, and `merge` marks the message for the turn, which judges it at its next step boundary and binds it into the turn when it keeps the task where it is (`while-busy-*` histories).",
  },
  {
    id: 'collaborating-subsessions',
    since: 'a6b91c4 (2026-12-06)',
    asked: 'start',
    where:
      'workflows/session.ts (used in workflows/agent/agent-loop.ts, workflows/process-input.ts, workflows/children/collaboration.ts)',
    why: "Runs recorded before it hand `session_create_sub` over with no mode and record no `delegations`: a sub-session's reply is recorded in the parent (record, history, transcript, children) and its agent acts on it only at the next user input; a sub-session answers its parent as soon as its own turn ends; the `result` update reports a delegating input `done` when its turn ends (`answers-*`, `agent-sub-session` histories). With it, a `collaborate` delegation's reply runs a follow-up turn of the parent's agent for the same input, which replaces the record's reply (`earlierReply` keeps the first), a caller waiting on that input waits for it (bounded by `subSessionReplyWaitMs`), a reply after the parent moved on is recorded with a note, and a sub-session holds its own answer until its follow-up (`collaborating-subsessions`, `collaborating-nested` histories).",
  },
  {
    id: 'goal-statements',
    since: '2a9863b (2026-12-06)',
    asked: 'start',
    where:
      'workflows/session.ts (used in workflows/process-input.ts, workflows/environment/goals.ts, workflows/agent/agent-loop.ts, workflows/agent/step-request.ts)',
    why: "Runs recorded before it set the session goal to the first input's text word for word (a greeting included) and a new phase's goal to its message, before the extraction stage; a `continue` never changes the phase goal, and the agent is never offered `propose_goal_change` (a call of it goes to `runTool`, which answers that the Session runs it). With it goals are task statements committed after the extraction stage (the understanding call's or the extraction call's `goal`, else the deterministic statement), an input that states no task sets no goals and skips the environment stages (`no task stated`), a `continue` that `refines` updates the phase goal, and an approved `propose_goal_change` after a `conflict` or `uncertain` turn changes the session goal; each change is recorded (`goal-statements` history).",
  },
  {
    id: 'remote-subsessions',
    since: 'f334a5c (2026-12-06)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/agent/agent-loop.ts, workflows/children/remote-agents.ts)',
    why: "Runs recorded before it take `session_create_sub`'s arguments without `agent` (no worker offered it then) and count only local sub-sessions against `maxSubSessionsPerTurn`. With it, a call naming `agent` runs the `callRemoteAgent` activity (a configured remote A2A agent, under the same depth and per-turn caps), whose answer is the call's result, and the input's record lists the call in `remote` (`remote-subsession` history).",
  },
  {
    id: 'arrival-order-signals',
    since: '3cfdffd (2026-12-06)',
    asked: 'start',
    where: 'workflows/session.ts (used in workflows/control/arrival-order.ts)',
    why: "Runs recorded before it hand the signals buffered before their first task to the handlers kind by kind, as each handler is set (the control signals' before the `message` handler): a `close` sent after a message in that window was applied first and refused the message with `session is closed`. With it a default signal handler takes every buffered signal first, in the order the server received them, and calls its kind's handler; the handlers are then set as before and the default handler unset (`arrival-order-signals` history).",
  },
] as const satisfies readonly PatchRow[];

/** An id from the table. */
export type PatchId = (typeof PATCHES)[number]['id'];

/**
 * Asked at the run's start before the message handlers are set, in this order: they decide how the
 * handlers behave, and a run's first task hands buffered messages to each handler as it is set.
 */
export const ASKED_BEFORE_HANDLERS = [
  'coarse-stage-attribute',
  'approval-ids',
  'idle-timeout',
  'worker-policy',
  'submit-after-control',
  'message-after-control',
  'bound-control',
  'current-control-policy',
  'while-busy',
  'arrival-order-signals',
] as const satisfies readonly PatchId[];

/**
 * Asked at the run's start after the handlers (which may already have run for a buffered first
 * input) and before the worker-policy local activity, in this order, although most matter only
 * later: each marker then sits in the same place in every history.
 */
export const ASKED_AFTER_HANDLERS = [
  'model-budgets',
  'relevance-lookahead',
  'speculative-agent-step',
  'combined-understanding',
  'compaction-beside',
  'agent-capabilities',
  'fewer-actions',
  'collaborating-subsessions',
  'goal-statements',
  'remote-subsessions',
] as const satisfies readonly PatchId[];

/**
 * Asks the patches of one run-start list, in its order; the answer for each id. A run recorded
 * before an id existed gets false and keeps the old branch for the rest of the run.
 */
export function askAtStart<const T extends readonly PatchId[]>(ids: T): Record<T[number], boolean> {
  const on = {} as Record<T[number], boolean>;
  for (const id of ids) on[id as T[number]] = patched(id);
  return on;
}
