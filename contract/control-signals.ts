/**
 * The non-task signals, one row each: payload schema, the field that identifies a delivery (for
 * at-least-once de-duplication), a one-line summary for records, and the description the Web UI
 * shows beside the handler. The workflow's handlers, the client and the published contract are all
 * built from this table.
 *
 * Pure module: safe to import from workflow code.
 */
import type { z } from 'zod';
import { ApprovalInput, CommandInput, NotificationInput, ToolResultInput } from './messages.js';
import { clip } from './text.js';

interface ControlSpec<S extends z.ZodType> {
  schema: S;
  idField: keyof z.output<S> & string;
  summary(payload: z.output<S>): string;
  description: string;
}

function spec<S extends z.ZodType>(row: ControlSpec<S>): ControlSpec<S> {
  return row;
}

/** Commands by name, as the `command` signal's discriminated union declares them. */
export const COMMAND_NAMES = CommandInput.options.map((option) => option.shape.name.value);

export const CONTROL_SIGNALS = {
  approval: spec({
    schema: ApprovalInput,
    idField: 'approvalId',
    summary: (p) => {
      const by = p.approver ? ` by ${p.approver}` : '';
      const note = p.note?.trim() ? `: ${clip(p.note, 200)}` : '';
      const edited = p.approved && p.arguments !== undefined ? ' with edited arguments' : '';
      return `${p.approved ? 'approved' : 'rejected'}${edited}${by}${note}`;
    },
    description:
      'Approval decision for one waiting tool call: {"approvalId": string (snapshot pendingApprovals[].approvalId, "<seq>:<step>:<callId>"), "approved": boolean, "note"?: string, "argumentsHash"?: string, "approver"?: string, "arguments"?: string (a JSON object replacing the model\'s, checked against the tool\'s schema and policy; the call keeps waiting if refused)}. Never a task input.',
  }),
  toolResult: spec({
    schema: ToolResultInput,
    idField: 'callId',
    summary: (p) => (p.isError ? 'error result' : 'result'),
    description:
      'Tool result: {"callId": string, "resultId"?: string (snapshot pendingToolCalls[].resultId, "<seq>:<step>:<callId>"; required under signed control), "output": any, "isError"?: boolean}. Never a task input.',
  }),
  notification: spec({
    schema: NotificationInput,
    idField: 'notificationId',
    summary: (p) => `${p.kind}: ${clip(p.text, 200)}`,
    description: 'System notification: {"notificationId": string, "kind": string, "text": string}. Never a task input.',
  }),
  command: spec({
    schema: CommandInput,
    idField: 'commandId',
    summary: (p) => p.name,
    description: `Deterministic command: {"commandId": string, "name": ${COMMAND_NAMES.map((n) => `"${n}"`).join('|')}, "args"?: {...}}. set-goals takes {"session"?, "phase"?}; set-budget takes {"turnTokens"?, "sessionTokens"?, "turnCostUsd"?, "sessionCostUsd"?} (null removes a limit).`,
  }),
};

export type ControlKind = keyof typeof CONTROL_SIGNALS;
export const CONTROL_KINDS = Object.keys(CONTROL_SIGNALS) as ControlKind[];

/** The delivery id of a validated control payload. */
export function controlIdOf(kind: ControlKind, payload: Record<string, unknown>): string {
  return String(payload[CONTROL_SIGNALS[kind].idField]);
}
