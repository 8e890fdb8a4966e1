/**
 * Payloads the client builds and checks before anything is sent: the start argument, the Web UI's
 * summary and details for a new Session, message ids, and the visibility query behind `list`.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { WORKFLOW_TYPE } from '../contract/api.js';
import { SessionId, SessionStart, type MessageInput } from '../contract/messages.js';
import { SESSION_STAGES } from '../contract/state.js';
import { clip } from '../contract/text.js';
import { InvalidInputError } from './errors.js';
import { SESSION_STATUSES, type ListFilter, type MessageDraft, type StartOptions } from './types.js';

/** Longest Web UI summary line, in characters. */
const SUMMARY_CHARS = 160;

/** The visibility query `list` runs. Values are checked against known ones, so nothing needs escaping. */
export function visibilityQuery(filter: ListFilter): string {
  const clauses = [`WorkflowType = '${WORKFLOW_TYPE}'`];
  if (filter.stage !== undefined) {
    const stage = SESSION_STAGES.find((s) => s.toLowerCase() === filter.stage?.trim().toLowerCase());
    if (!stage) {
      throw new InvalidInputError(`invalid stage: ${filter.stage} (one of: ${SESSION_STAGES.join(', ')})`, [
        { field: 'stage', message: `unknown stage ${filter.stage}` },
      ]);
    }
    clauses.push(`SessionStage = '${stage}'`);
  }
  if (filter.status !== undefined) {
    const status = SESSION_STATUSES.find((s) => s === filter.status?.trim().toLowerCase());
    if (!status) {
      throw new InvalidInputError(`invalid status: ${filter.status} (one of: ${SESSION_STATUSES.join(', ')})`, [
        { field: 'status', message: `unknown status ${filter.status}` },
      ]);
    }
    clauses.push(`SessionStatus = '${status}'`);
  }
  if (filter.parent !== undefined)
    clauses.push(`SessionParent = '${parse(SessionId, filter.parent, 'parent', 'parent')}'`);
  if (filter.query?.trim()) clauses.push(`(${filter.query.trim()})`);
  return clauses.join(' AND ');
}

/** The public start argument, validated. */
export function startArgument(sessionId: string, start: StartOptions): SessionStart {
  return parse(
    SessionStart,
    {
      sessionId,
      ...(start.parentSessionId !== undefined ? { parentSessionId: start.parentSessionId } : {}),
      ...(start.profile !== undefined ? { profile: start.profile } : {}),
      ...(start.goals !== undefined ? { goals: start.goals } : {}),
      ...(start.settings !== undefined ? { settings: start.settings } : {}),
    },
    'start argument',
  );
}

/** The Web UI's static summary (one line) and details (Markdown) for a new Session. */
export function userMetadata(
  start: SessionStart,
  first: MessageInput,
  overrides: Pick<StartOptions, 'summary' | 'details'> = {},
): { staticSummary: string; staticDetails: string } {
  const subject = start.goals?.session ?? start.goals?.phase ?? first.text;
  const summary = overrides.summary ?? `Session ${start.sessionId}: ${clip(subject, SUMMARY_CHARS)}`;
  const lines = [
    `**Session** \`${start.sessionId}\` · **profile** ${start.profile ?? 'default'} · **parent** ${
      start.parentSessionId ? `\`${start.parentSessionId}\`` : '—'
    }`,
    '',
    `**Goals at start:** ${
      start.goals
        ? `session: ${clip(start.goals.session ?? '—', 300)}; phase: ${clip(start.goals.phase ?? '—', 300)}`
        : 'from the first task input'
    }`,
    '',
    `**First message** \`${first.messageId}\`: ${clip(first.text, 600)}`,
  ];
  if (first.resources?.length) lines.push('', `**Resources:** ${first.resources.map((r) => r.uri).join(', ')}`);
  if (start.settings && Object.keys(start.settings).length > 0) {
    lines.push('', `**Settings:** \`${JSON.stringify(start.settings)}\``);
  }
  return { staticSummary: summary, staticDetails: overrides.details ?? lines.join('\n') };
}

/** The draft with a generated messageId when it has none. */
export function withMessageId(draft: MessageDraft): unknown {
  return { ...draft, messageId: draft.messageId ?? `m-${randomUUID()}` };
}

/** `value` parsed by `schema`, or an InvalidInputError naming the field (`field` when the issue has no path). */
export function parse<S extends z.ZodType>(schema: S, value: unknown, what: string, field?: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const error = InvalidInputError.fromZod(what, parsed.error);
  if (field === undefined) throw error;
  throw new InvalidInputError(
    error.message,
    error.issues.map((i) => ({ ...i, field: i.field || field })),
  );
}
