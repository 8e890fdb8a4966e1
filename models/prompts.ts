/**
 * Prompts of the helper-model roles. Each prompt sees only what its role may see; the request's
 * JSON is the user message so that what reached the model is exactly what the role was given.
 */
import type {
  CompactionAnswer,
  CompactRequest,
  CompactResult,
  ExtractRequest,
  OrchestrateRequest,
} from '../contract/activity-contract.js';
import { isPhaseRecord, renderHandoff, type Handoff } from '../contract/handoff.js';
import type { RelevanceRequest } from '../contract/relevance.js';

export interface ChatPrompt {
  system: string;
  user: string;
}

const RELEVANCE_ROLE = `You judge how a new message relates to the goals of an agent Session.
You see only the message, its resource references, the current-phase goal and the session-wide goal.`;

const RELEVANCE_RUBRIC = `phaseRelevance — does the message continue the CURRENT PHASE: the same step and the same deliverable?
- High (0.7-1): it continues, refines, corrects or adds a constraint to the deliverable being produced now,
  or it is a bare continuation such as "continue", "go on", "ok", "yes", "继续".
- Low (0-0.3): it asks for a different step or a different deliverable, even on the same topic:
  a new output format, a conversion ("convert the Markdown to Word"), a next stage ("now write the tests"),
  another artifact built from the current one.
- The phase goal may be worded exactly like the session goal (right after a Session starts). Judge
  against the specific deliverable that phase is producing, not against the topic.

sessionRelevance — does the message fall within the Session's RESPONSIBILITY: the business scope and
expected result of the session-wide goal?
- High (0.7-1): it serves that goal, including later steps and other deliverables of the same job.
- Low (0-0.3): it is a different job, e.g. a weather question in a software-research Session, or it
  contradicts a rule the session goal sets.

Use values between 0.35 and 0.65 only when the message is genuinely ambiguous (e.g. "what about the other one?").`;

export const RELEVANCE_SYSTEM = `${RELEVANCE_ROLE}
Answer with JSON only: {"phaseRelevance": number, "sessionRelevance": number}, each between 0 and 1.

${RELEVANCE_RUBRIC}`;

/**
 * Relevance and the message's retrieval terms in one call (combined understanding): the terms are
 * kept only when the verdict opens a phase, whose goal is then this message.
 */
export const UNDERSTANDING_SYSTEM = `${RELEVANCE_ROLE}
You also extract retrieval terms for the task the message asks for, and state that task.
Answer with JSON only: {"phaseRelevance": number, "sessionRelevance": number, "terms": ["..."], "goal": string or null, "refines": boolean}, each score between 0 and 1.

${RELEVANCE_RUBRIC}

terms — 3 to 12 short retrieval terms (single words or short phrases) naming the activities, artifacts,
formats, tools and domains the MESSAGE asks for, used to find the skills, tool sets and memories for it.
Keep the message's language; add the English term as well when it is not in English. Do not restate the goals.

refines — true when the message continues the current phase's work and adds a new constraint or a new
detail of its deliverable ("also cover X", "keep it under 2 pages"); false otherwise.

goal — one line of at most 200 characters in the message's language, an imperative task statement
without greetings, thanks or filler: when refines is true, the current phase goal with the refinement
folded in; otherwise the task the message asks for. null when the message states no task.`;

/** The combined call's prompt: the relevance request as it is, under UNDERSTANDING_SYSTEM. */
export function understandingPrompt(request: RelevanceRequest): ChatPrompt {
  return { ...relevancePrompt(request), system: UNDERSTANDING_SYSTEM };
}

export function relevancePrompt(request: RelevanceRequest): ChatPrompt {
  return {
    system: RELEVANCE_SYSTEM,
    user: JSON.stringify({
      sessionGoal: request.sessionGoal,
      phaseGoal: request.phaseGoal,
      message: request.message.text,
      resources: request.message.resources,
    }),
  };
}

export const EXTRACTION_SYSTEM = `You extract retrieval terms for finding the skills, tool sets and memories an agent needs for a task,
and state the task the message asks for.
Answer with JSON only: {"terms": ["..."], "goal": string or null}.
terms — 3 to 12 short terms (single words or short phrases) naming the activities, artifacts, formats,
tools and domains the task involves. Keep the task's language; add the English term as well when the
task is not in English.
goal — the task the MESSAGE asks for as one imperative line of at most 200 characters in its language,
without greetings, thanks or filler; null when the message states no task (a greeting, "can you help me?").`;

export function extractionPrompt(request: ExtractRequest): ChatPrompt {
  return { system: EXTRACTION_SYSTEM, user: JSON.stringify(request.task) };
}

export const ORCHESTRATION_SYSTEM = `You select the capabilities an agent Session loads for its task.
You get the task, the mode, the capabilities loaded now, and retrieved candidates with relevance scores.
Answer with JSON only: {"skills": [ids], "toolsets": [ids], "memories": [ids]}.
- Choose only ids that appear among the candidates or the current capabilities.
- mode "init": choose what the task needs from the candidates; prefer few, well-fitting capabilities.
- mode "reconcile": keep current capabilities that still apply to the task, drop those that no longer do,
  add candidates the new phase needs. Return the complete target set, not a difference.
You do not create Sessions, rewrite goals or choose models.`;

export function orchestrationPrompt(request: OrchestrateRequest): ChatPrompt {
  const brief = (caps: Array<{ id: string; name: string; score?: number }>) =>
    caps.map((c) =>
      c.score === undefined ? { id: c.id, name: c.name } : { id: c.id, name: c.name, score: round(c.score) },
    );
  return {
    system: ORCHESTRATION_SYSTEM,
    user: JSON.stringify({
      mode: request.mode,
      task: request.task,
      current: {
        skills: brief(request.current.skills),
        toolsets: brief(request.current.toolsets),
        memories: brief(request.current.memories),
      },
      candidates: {
        skills: brief(request.candidates.skills),
        toolsets: brief(request.candidates.toolsets),
        memories: brief(request.candidates.memories),
      },
    }),
  };
}

export const COMPACTION_SYSTEM = `You summarise a finished phase of an agent Session so later work keeps continuity.
Answer with JSON only: {"summary": "..."} — at most 120 words: what was asked and what was produced or decided.
Do not restate, rewrite or replace the goals.`;

export const HANDOFF_SYSTEM = `You write the hand-off of a finished phase of an agent Session, so the next phase can continue the work.
You get the phase goal and the phase record: the user's inputs, the agent's replies, its tool calls with clipped
arguments and results, and the artifacts (files, URIs, resources) the tool calls produced.
Answer with JSON only:
{"produced": [{"what": "...", "artifact": "<exact path or URI from the artifacts, or null>"}],
 "decisions": ["..."], "constraints": ["..."], "openQuestions": ["..."], "nextSteps": ["..."]}
- produced: every deliverable, naming its artifact exactly as the record spells it.
- decisions: decisions taken and commitments made. constraints: what the user required or preferred.
- openQuestions: what is unresolved. nextSteps: what remains to do. Short items; empty lists are fine.
Use only what the record shows. Do not restate, rewrite or replace the goals.`;

/** The compaction prompt: a hand-off for a whole phase record, a plain summary for loose transcript lines. */
export function compactionPrompt(request: CompactRequest): ChatPrompt {
  return { system: isPhaseRecord(request) ? HANDOFF_SYSTEM : COMPACTION_SYSTEM, user: JSON.stringify(request) };
}

/**
 * The compaction result from the model's answer: for a phase record, the structured hand-off rendered
 * with the request's own phase goal (the model cannot rewrite it); otherwise its summary.
 */
export function compactionResult(request: CompactRequest, answer: CompactionAnswer): CompactResult {
  const handoff: Handoff = {
    produced: (answer.produced ?? []).map((p) => ({ what: p.what, artifact: p.artifact ?? null })),
    decisions: answer.decisions ?? [],
    constraints: answer.constraints ?? [],
    openQuestions: answer.openQuestions ?? [],
    nextSteps: answer.nextSteps ?? [],
  };
  const structured = Object.values(handoff).some((list) => list.length > 0);
  if (!isPhaseRecord(request) && !structured) return { summary: answer.summary ?? '' };
  return { summary: renderHandoff(request.phaseGoal, handoff, answer.summary ?? undefined), handoff };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
