/**
 * What every memory back end shares: the memory shape and its validation, scopes, titles, and the
 * store interface that the embedded SQLite store and the shared PostgreSQL store both implement.
 */
import { z } from 'zod';
import type { RecallOptions } from './catalog.js';

/** Who a memory is for: every Session, one Session, or every Session of one user. */
export const MemoryScope = z.union(
  [
    z.literal('global'),
    z.object({ sessionId: z.string().trim().min(1, 'must not be empty') }).strict(),
    z.object({ userId: z.string().trim().min(1, 'must not be empty') }).strict(),
  ],
  { error: 'must be "global", { sessionId } or { userId }' },
);
export type MemoryScope = z.infer<typeof MemoryScope>;

export const MAX_MEMORY_TEXT = 8_000;

export const NewMemory = z.object({
  text: z
    .string({ error: 'is required' })
    .trim()
    .min(1, 'must not be empty')
    .max(MAX_MEMORY_TEXT, `must be at most ${MAX_MEMORY_TEXT} characters`),
  tags: z
    .array(z.string().trim().min(1, 'must not be empty').max(64, 'must be at most 64 characters'), {
      error: 'must be a list of strings',
    })
    .max(32, 'at most 32 tags')
    .default([]),
  scope: MemoryScope,
});
/** What `add` takes; `tags` may be left out. */
export type NewMemory = z.input<typeof NewMemory>;

export interface MemoryItem {
  /** A positive integer as a string: ids are never reused, even after `remove`. */
  id: string;
  text: string;
  tags: string[];
  scope: MemoryScope;
  /** `memory:global`, `memory:session:<id>` or `memory:user:<id>`. */
  source: string;
  /** ISO 8601. */
  createdAt: string;
}

export interface MemoryFilter {
  /** Only memories with exactly this scope. */
  scope?: MemoryScope;
  tag?: string;
  limit?: number;
}

/** A recalled memory. It carries its text, so whichever worker runs the agent turn needs no second lookup. */
export interface MemoryCandidate {
  id: string;
  name: string;
  source: string;
  score: number;
  text: string;
}

/** Bad input to the store; the message names the field. */
export class MemoryInputError extends Error {
  override name = 'MemoryInputError';
}

/** `global`, `session:<id>` or `user:<id>`: the scope as the CLI and sources spell it. */
export function formatMemoryScope(scope: MemoryScope): string {
  if (scope === 'global') return 'global';
  return 'sessionId' in scope ? `session:${scope.sessionId}` : `user:${scope.userId}`;
}

/** Parses `global`, `session:<id>` or `user:<id>`. Throws MemoryInputError otherwise. */
export function parseMemoryScope(text: string): MemoryScope {
  const value = text.trim();
  if (value === 'global') return 'global';
  const match = /^(session|user):(.+)$/.exec(value);
  const id = match?.[2]?.trim();
  if (!match || !id) {
    throw new MemoryInputError(`scope: must be "global", "session:<sessionId>" or "user:<userId>" (got "${text}")`);
  }
  return match[1] === 'session' ? { sessionId: id } : { userId: id };
}

const TITLE_LENGTH = 60;

/** The first line of a memory, cut at a word boundary: the name recall shows for it. */
export function memoryTitle(text: string): string {
  const line = (text.trim().split('\n')[0] ?? '').replace(/\s+/g, ' ').trim();
  const chars = Array.from(line);
  if (chars.length <= TITLE_LENGTH) return line;
  const cut = chars.slice(0, TITLE_LENGTH).join('');
  const space = cut.lastIndexOf(' ');
  return `${space > TITLE_LENGTH / 2 ? cut.slice(0, space) : cut}…`;
}

/** `input` parsed by `schema`, or a MemoryInputError naming each bad field under `prefix`. */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown, prefix?: string): z.infer<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const field = (path: PropertyKey[]) => [prefix, ...path.map(String)].filter(Boolean).join('.') || 'memory';
  throw new MemoryInputError(parsed.error.issues.map((i) => `${field(i.path)}: ${i.message}`).join('; '));
}

/** A memory id as the database holds it, or undefined for anything that cannot be one. */
export function rowId(id: string): number | undefined {
  const value = /^[1-9]\d*$/.test(id.trim()) ? Number(id) : NaN;
  return Number.isSafeInteger(value) ? value : undefined;
}

/** The scope columns both back ends store: kind plus id (empty for global). */
export type ScopeKind = 'global' | 'session' | 'user';

export function scopeColumns(scope: MemoryScope): { kind: ScopeKind; id: string } {
  if (scope === 'global') return { kind: 'global', id: '' };
  return 'sessionId' in scope ? { kind: 'session', id: scope.sessionId } : { kind: 'user', id: scope.userId };
}

export function columnsScope(kind: ScopeKind, id: string): MemoryScope {
  if (kind === 'global') return 'global';
  return kind === 'session' ? { sessionId: id } : { userId: id };
}

/** Validated memories with lowercased, de-duplicated tags, ready to insert. */
export function parseNewMemories(inputs: NewMemory[]): Array<{ text: string; tags: string[]; scope: MemoryScope }> {
  return inputs.map((input, i) => {
    const { text, scope, tags } = parseInput(NewMemory, input, inputs.length > 1 ? String(i) : undefined);
    return { text, scope, tags: [...new Set(tags.map((t) => t.toLowerCase()))] };
  });
}

/** A value or a promise of it: the SQLite store answers synchronously, the PostgreSQL store does not. */
export type Awaitable<T> = T | Promise<T>;

/** What recall and the agent turn need from a memory store. Callers always `await`. */
export interface MemoryRecall {
  /**
   * The top `k` memories visible to the Session (global ones, the Session's own, its user's) for
   * `query`, best first, with their texts. Scores are positive, higher is better, and compare only
   * within one recall; candidates under `floor` times the best score are left out.
   */
  recall(
    query: string,
    scope: { sessionId: string; userId?: string },
    options?: Partial<RecallOptions>,
  ): Awaitable<MemoryCandidate[]>;
  /**
   * The full text of a memory, for the agent turn that loaded it; undefined when there is none with
   * this id or it is not visible to `reader` (see {@link memoryVisibleTo}). Ids are sequential, so
   * the id alone proves nothing about whose memory it is.
   */
  text(id: string, reader: MemoryReader): Awaitable<string | undefined>;
}

/** The Session that reads a memory, and the user whose input it serves (when known). */
export interface MemoryReader {
  sessionId: string;
  userId?: string | undefined;
}

/**
 * Whether a memory of `scope` may be read by `reader`: a global memory by every Session, a Session's
 * memory only by that Session, a user's memory only by Sessions serving that user. Recall filters by
 * the same rule.
 */
export function memoryVisibleTo(scope: MemoryScope, reader: MemoryReader): boolean {
  if (scope === 'global') return true;
  if ('sessionId' in scope) return scope.sessionId === reader.sessionId;
  return reader.userId !== undefined && scope.userId === reader.userId;
}

/** A memory back end: the embedded SQLite file (`MemoryStore`) or shared PostgreSQL (`PostgresMemoryStore`). */
export interface MemoryBackend extends MemoryRecall {
  /** Where the memories live, for logs (never a password). */
  readonly location: string;
  /** Stores a memory. Throws MemoryInputError naming the field when the input is invalid. */
  add(input: NewMemory): Awaitable<MemoryItem>;
  /** Stores several memories in one transaction: all of them, or none when one is invalid. */
  addMany(inputs: NewMemory[]): Awaitable<MemoryItem[]>;
  get(id: string): Awaitable<MemoryItem | undefined>;
  /** Memories in id order (oldest first), optionally of one exact scope and/or carrying a tag. */
  list(filter?: MemoryFilter): Awaitable<MemoryItem[]>;
  /** Deletes a memory; false when there was none with this id. Ids are never reused. */
  remove(id: string): Awaitable<boolean>;
  count(): Awaitable<number>;
  close(): Awaitable<void>;
}
