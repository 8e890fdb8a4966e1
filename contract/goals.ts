/**
 * Goals as task statements: what a model's statement must be to be committed, the deterministic
 * statement that stands in when it is not (and that the local provider answers with), and the record
 * of every goal change.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';

/** Longest task statement, in characters. */
export const STATEMENT_CHARS = 200;

/** A statement as the Session commits it: one trimmed line of 1..STATEMENT_CHARS characters. */
export const TaskStatement = z
  .string()
  .trim()
  .min(1)
  .max(STATEMENT_CHARS)
  .refine((s) => !/[\r\n]/.test(s), 'expected one line');

/** A model's statement, or null when it is not a valid one (the deterministic statement stands in). */
export function validStatement(answer: unknown): string | null {
  const parsed = TaskStatement.safeParse(answer);
  return parsed.success ? parsed.data : null;
}

// Openers and closers that state no task: greetings, thanks, politeness and requests for help as such.
const OPENERS = [
  /^(hi|hello|hey|hiya|greetings|good (morning|afternoon|evening)|dear \w+)( there| all| team| everyone)?\b[\s,.!:;-]*/i,
  /^(ok(ay)?|so|well|alright|um+|uh+)\b[\s,.!:;-]+/i,
  /^(thanks|thank you)( (so|very) much)?( in advance)?\b[\s,.!:;-]*/i,
  /^(i hope (you are|you're) (well|doing well)|hope (you are|you're) (well|doing well))\b[\s,.!:;-]*/i,
  /^(please|kindly|pls)\b[\s,.:;-]*/i,
  /^(can|could|would|will) you( please| kindly)?( help( me)?( with| to)?)?\b[\s,:;-]*/i,
  /^(i('d| would) like|i want|i need|i wish)( you)? to\b[\s,:;-]*/i,
  /^(i('d| would) like|i want|i need) (some )?help( with| to)?\b[\s,:;-]*/i,
  /^help me( with| to)?\b[\s,:;-]*/i,
  /^(let's|let us)\b\s*/i,
];
const CLOSERS = [
  /[\s,.;:-]*\b(please|thanks|thank you( (so|very) much)?( in advance)?|cheers|if you can|if possible)[\s.!?]*$/i,
  /[\s,]*[?!]+$/,
];
// What is left when nothing was asked for: no task statement at all.
const EMPTY =
  /^(ok(ay)?|yes|no|sure|me|something|anything|this|that|it|a (question|favou?r|thing)|one thing|stuff|out|a bit|)$/i;

/**
 * The deterministic task statement of a message: one line, pleasantries and filler removed at both
 * ends, the first letter capitalised, clipped at a word to STATEMENT_CHARS. Empty when the message
 * states no task ("Hi, can you help me?"). The local provider answers with it, and the Session commits
 * it where a model's statement is missing or invalid.
 */
export function taskStatement(message: string): string {
  let text = message.replace(/\s+/g, ' ').trim();
  for (let changed = true; changed;) {
    changed = false;
    for (const pattern of [...OPENERS, ...CLOSERS]) {
      const next = text.replace(pattern, '').trim();
      if (next !== text) {
        text = next;
        changed = true;
      }
    }
  }
  if (EMPTY.test(text) || !/[\p{L}\p{N}]/u.test(text)) return '';
  return clipAtWord(text.charAt(0).toUpperCase() + text.slice(1), STATEMENT_CHARS);
}

/** `text` clipped at a word boundary to at most `max` characters, with no trailing punctuation. */
function clipAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max + 1);
  const space = cut.lastIndexOf(' ');
  return (space > max / 2 ? cut.slice(0, space) : text.slice(0, max)).replace(/[\s,;:-]+$/, '');
}

/**
 * A phase goal refined by a message, when no model wrote the refined statement: the phase goal with
 * the message's statement after it, clipped.
 */
export function refinedStatement(phaseGoal: string, message: string): string {
  const detail = taskStatement(message).replace(/^(also|and|plus|but)\b[\s,]*/i, '');
  if (!detail) return phaseGoal;
  return clipAtWord(`${phaseGoal.replace(/[\s.;]+$/, '')}; ${detail}`, STATEMENT_CHARS);
}

/** Which goal changed. */
export const GoalLevel = z.enum(['session', 'phase']);
export type GoalLevel = z.infer<typeof GoalLevel>;

/**
 * Why a goal changed: the first task (`initialize`), a new phase, a refinement of the current work, an
 * approved `propose_goal_change`, or a `set-goals` command.
 */
export const GoalChangeReason = z.enum(['initialize', 'new-phase', 'refine', 'proposal', 'command']);
export type GoalChangeReason = z.infer<typeof GoalChangeReason>;

/** One goal change, as the decision record, the goal history and the `goal.changed` event hold it. */
export const GoalChange = z.object({
  level: GoalLevel,
  reason: GoalChangeReason,
  /** The input the change was made for (the bound seq for a command). */
  seq: z.number().int(),
  old: z.string().nullable(),
  new: z.string(),
  /** The approved `propose_goal_change` call; null otherwise. */
  callId: z.string().nullable(),
  at: z.number(),
});
export type GoalChange = z.infer<typeof GoalChange>;
