/**
 * The hand-off between task phases: what a finished phase passes on to the next. The compaction role
 * (or, when it fails, deterministicHandoff) turns the whole phase record (user inputs, agent replies,
 * tool calls with clipped results, artifacts) into a structured hand-off, and renderHandoff makes
 * the bounded text the agent sees as the phase's summary. Goals are never part of the answer: the
 * rendered text quotes the phase goal from the record, so a summary can never rewrite it.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import type { Artifact } from './state.js';
import { clip, clipBytes } from './text.js';

/** Longest rendered hand-off, in UTF-8 bytes (the carried state keeps at most 4 KiB of a past phase's summary). */
export const HANDOFF_BYTES = 4000;

/** Most entries of each list the phase record hands the compaction role. */
export const RECORD_LIMITS = { inputs: 20, replies: 20, toolCalls: 40, artifacts: 50 } as const;

/** One tool call of the phase as the compaction role sees it (arguments and result clipped). */
export interface RecordToolCall {
  tool: string;
  callId: string;
  seq: number;
  arguments: string;
  status: string;
  result: string;
}

/** One artifact of the phase as the compaction role sees it. */
export type RecordArtifact = Pick<Artifact, 'uri' | 'kind' | 'tool' | 'callId' | 'seq'>;

/** The structured hand-off. Lists may be empty; nothing in it restates or replaces a goal. */
export const Handoff = z.object({
  /** What the phase produced, each with the artifact (path or URI) it refers to, if any. */
  produced: z.array(z.object({ what: z.string(), artifact: z.string().nullable().default(null) })).default([]),
  /** Decisions taken and commitments made. */
  decisions: z.array(z.string()).default([]),
  /** Constraints and preferences the user stated. */
  constraints: z.array(z.string()).default([]),
  openQuestions: z.array(z.string()).default([]),
  nextSteps: z.array(z.string()).default([]),
});
export type Handoff = z.infer<typeof Handoff>;

/** The phase record, as the compaction request carries it (see CompactRequest). */
export interface PhaseRecord {
  phaseGoal: string;
  /** The user's inputs of the phase, oldest first. */
  inputs: string[];
  replies?: string[];
  toolCalls?: RecordToolCall[];
  artifacts?: RecordArtifact[];
}

/** Whether a compaction request carries a whole phase record (a hand-off) rather than loose transcript lines. */
export function isPhaseRecord(request: PhaseRecord): boolean {
  return request.replies !== undefined || request.toolCalls !== undefined || request.artifacts !== undefined;
}

const line = (text: string) => clip(text, 300);

/** One artifact as one line, for the agent's request: `uri "title" (kind, from tool call id, input #seq, phase n)`. */
export function artifactLine(a: Artifact): string {
  const title = a.title ? ` "${clip(a.title, 100)}"` : '';
  return `${a.uri}${title} (${a.kind}, from ${a.tool} call ${a.callId}, input #${a.seq}, phase ${a.phaseIndex})`;
}

/**
 * A hand-off built from the record alone, without a model: what the offline provider answers, and what
 * the workflow keeps when the compaction model fails. It states facts only: the artifacts with their
 * producing calls, the calls that ran, the user's later inputs as their constraints, what failed, and
 * the agent's last reply.
 */
export function deterministicHandoff(record: PhaseRecord): Handoff {
  const artifacts = record.artifacts ?? [];
  const calls = record.toolCalls ?? [];
  const replies = record.replies ?? [];
  const produced = artifacts.map((a) => ({
    what: `${a.kind} from ${a.tool} (call ${a.callId}, input #${a.seq})`,
    artifact: a.uri,
  }));
  const ran = new Map<string, number>();
  for (const call of calls) if (call.status === 'ok') ran.set(call.tool, (ran.get(call.tool) ?? 0) + 1);
  const decisions = [...ran].map(([tool, n]) => `ran ${tool}${n > 1 ? ` ${n} times` : ''}`);
  const lastReply = replies.at(-1);
  if (lastReply) decisions.push(`last reply: ${line(lastReply)}`);
  // The first input set the phase goal; the later ones refine it.
  const constraints = record.inputs.slice(1).map(line);
  const openQuestions = calls
    .filter((c) => c.status !== 'ok')
    .map((c) => `${c.tool} ${c.status}: ${line(c.result)}`)
    .slice(-5);
  if (lastReply?.trim().endsWith('?')) openQuestions.push(`asked the user: ${line(lastReply)}`);
  return { produced, decisions, constraints, openQuestions, nextSteps: [] };
}

/**
 * The hand-off as the text earlier phases show in every agent request: the phase goal from the
 * record (verbatim, clipped), the model's free-text summary if it gave one, then each non-empty
 * section, at most HANDOFF_BYTES in all.
 */
export function renderHandoff(phaseGoal: string, handoff: Handoff, summary?: string): string {
  const lines = [`Phase goal: ${clip(phaseGoal, 300)}`];
  if (summary?.trim()) lines.push(`Summary: ${clip(summary, 1200)}`);
  const section = (title: string, items: string[]) => {
    if (items.length > 0) lines.push(`${title}:`, ...items.map((item) => `- ${clip(item, 400)}`));
  };
  section(
    'Produced',
    handoff.produced.map((p) => (p.artifact ? `${p.artifact} — ${p.what}` : p.what)),
  );
  section('Decisions and commitments', handoff.decisions);
  section('User constraints', handoff.constraints);
  section('Open questions', handoff.openQuestions);
  section('Next steps', handoff.nextSteps);
  return clipBytes(lines.join('\n'), HANDOFF_BYTES);
}
