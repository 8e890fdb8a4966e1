/**
 * The business agent's transcript and tool calls, as facts the workflow keeps and the model step
 * activity turns into chat messages. Shared by the workflow's state and the activity contract.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import { ResourceRef } from './messages.js';
import { utf8Length } from './text.js';

/** Longest tool output kept in the transcript, in UTF-8 bytes; longer output is clipped and marked. */
export const TOOL_OUTPUT_BYTES = 8 * 1024;

/**
 * Tool output as the model sees it: `text`, or its longest prefix (whole characters) followed by
 * `…[clipped: N bytes]`, so that the whole is at most `maxBytes` UTF-8 bytes. The worker clips what a
 * tool returns and the workflow what it is handed, with this one function, so output clipped once
 * passes the second time unchanged.
 */
export function clipToolOutput(text: string, maxBytes: number = TOOL_OUTPUT_BYTES): string {
  const size = utf8Length(text);
  if (size <= maxBytes) return text;
  // The marker is sized for the largest count it could show, so the result never exceeds maxBytes.
  const room = maxBytes - utf8Length(`\n…[clipped: ${size} bytes]`);
  let kept = 0;
  let end = 0;
  for (const char of text) {
    const bytes = utf8Length(char);
    if (kept + bytes > room) break;
    kept += bytes;
    end += char.length;
  }
  return `${text.slice(0, end)}\n…[clipped: ${size - kept} bytes]`;
}

/** One tool call as the model made it; `arguments` is the model's raw JSON text. */
export const ToolCallRef = z.object({ callId: z.string().min(1), tool: z.string().min(1), arguments: z.string() });
export type ToolCallRef = z.infer<typeof ToolCallRef>;

/** What an approval-policy rule decides for a tool call: run it, wait for a person, or refuse it. */
export const PolicyEffect = z.enum(['allow', 'approve', 'deny']);
export type PolicyEffect = z.infer<typeof PolicyEffect>;

/**
 * The worker's approval policy's decision on one call and the rule that made it (the strongest effect
 * among the matching rules, the first such rule in file order).
 */
export const PolicyDecision = z.object({
  effect: PolicyEffect,
  /** The rule's `id`, or `rule-<n>` (1-based position) when it has none. */
  rule: z.string(),
  /** The rule's 0-based position in the policy file. */
  index: z.number().int().nonnegative(),
  /** The rule's `reason`; a denied call's error result quotes it. */
  reason: z.string().nullable(),
});
export type PolicyDecision = z.infer<typeof PolicyDecision>;

/**
 * Why a call waits for a person, as the approval inbox shows it: an approval-policy rule (with its
 * reason), the toolset's own `requiresApproval` flag, or a `memory_save` into the user's scope; and
 * the risk tags the tool carries (toolset file or MCP config `riskTags`).
 */
export const ApprovalReason = z.object({
  source: z.enum(['policy', 'toolset', 'user-memory']),
  /** The policy rule's id when a rule decided; null otherwise. */
  rule: z.string().nullable(),
  /** The rule's `reason`; null when it has none or no rule decided. */
  reason: z.string().nullable(),
  /** The toolset that declared the tool; null for built-ins. */
  toolset: z.string().nullable(),
  riskTags: z.array(z.string()),
});
export type ApprovalReason = z.infer<typeof ApprovalReason>;

/**
 * A tool call resolved against the loaded tools by the worker: how it runs, whether it waits for a
 * person's approval, and whether its arguments fit the tool's JSON Schema.
 */
export const ResolvedToolCall = ToolCallRef.extend({
  /** The toolset that declared the tool; null for built-ins and unknown tools. */
  toolset: z.string().nullable(),
  /**
   * `mcp`: runs through the worker's MCP connection (activity runTool). `builtin`: run by the
   * Session (BUILTIN_TOOLS). `external`: a backend service runs it and answers with the `toolResult`
   * signal. `unknown`: no loaded tool has this name; the model sees an error result.
   */
  execution: z.enum(['mcp', 'builtin', 'external', 'unknown']),
  requiresApproval: z.boolean(),
  /** Why the arguments are not valid JSON or do not fit the tool's inputSchema; null when they do. */
  argumentError: z.string().nullable(),
  /**
   * The approval policy's decision, when a rule matched; null when none did (or the worker has no
   * policy, or predates policies), and the toolset's own `requiresApproval` decided. A `deny` is
   * finished as an error result the model sees; its `requiresApproval` is true as well, so a workflow
   * that predates policies (and drops this field) waits for a person instead of running the call.
   */
  policy: PolicyDecision.nullable().default(null),
  /** The tool's risk tags as the worker's catalog declared them (absent from older workers). */
  riskTags: z.array(z.string()).optional(),
});
export type ResolvedToolCall = z.infer<typeof ResolvedToolCall>;

/** How a call ended; `pending` only while the turn waits (for approval or an external result). */
export const ToolCallStatus = z.enum(['ok', 'error', 'rejected', 'pending', 'interrupted']);
export type ToolCallStatus = z.infer<typeof ToolCallStatus>;

/** A finished call: the call and its result are always kept together. */
export const ToolExchange = ToolCallRef.extend({
  status: ToolCallStatus,
  /** What the model sees as the tool message content (clipped to TOOL_OUTPUT_BYTES, marked when clipped). */
  output: z.string(),
});
export type ToolExchange = z.infer<typeof ToolExchange>;

/**
 * The transcript, as facts. `step` is one assistant message with tool calls together with every
 * call's result: it is written only once all results exist, so a call is never separated from its
 * result. `summary` stands in for older items that were compacted. `sub-reply` is what a sub-session
 * answered to an input this Session handed over.
 */
export const TranscriptItem = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('user'),
    seq: z.number().int(),
    text: z.string(),
    resources: z.array(ResourceRef),
    /** The delegating parent's note beside a handed-over message (absent otherwise). */
    note: z.object({ fromSessionId: z.string(), text: z.string() }).optional(),
  }),
  z.object({ kind: z.literal('reply'), seq: z.number().int(), text: z.string() }),
  z.object({
    kind: z.literal('step'),
    seq: z.number().int(),
    text: z.string().nullable(),
    calls: z.array(ToolExchange),
    /**
     * The model's reasoning text for this step, as the provider returned it (`reasoning_content`).
     * Absent when there was none, and in steps recorded before it was kept. Some providers
     * (DeepSeek's thinking mode) require it back within the tool loop.
     */
    reasoning: z.string().optional(),
  }),
  z.object({ kind: z.literal('summary'), seq: z.number().int(), text: z.string() }),
  /**
   * A sub-session's reply to an input this Session handed over: a fact the agent sees, not a task input.
   */
  z.object({
    kind: z.literal('sub-reply'),
    /** Where it sits: the Session's latest bound input when the reply came (so the current window holds it). */
    seq: z.number().int(),
    /** This Session's input the sub-session answered, when the hand-over named it. */
    inputSeq: z.number().int().nullable(),
    /** The request that was handed over (clipped), so the reply reads on its own. */
    request: z.string(),
    sessionId: z.string(),
    outcome: z.string(),
    text: z.string(),
  }),
]);
export type TranscriptItem = z.infer<typeof TranscriptItem>;
