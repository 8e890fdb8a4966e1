/**
 * Persistent memory items (text, tags, scope) in an embedded SQLite file, with BM25 recall through
 * an FTS5 index. Several processes may open the same file: the worker recalls while the CLI adds
 * and removes (WAL journal, busy timeout).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { DEFAULT_RECALL, searchTerms, type RecallOptions } from './catalog.js';

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

export interface MemoryCandidate {
  id: string;
  name: string;
  source: string;
  score: number;
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

/** The FTS5 query for `text`: its search terms, any of which may match. */
function matchExpression(text: string): string | undefined {
  const terms = [...new Set(searchTerms(text))];
  // searchTerms yields letters and digits only, so quoting is enough to keep FTS5 syntax out.
  return terms.length > 0 ? terms.map((t) => `"${t}"`).join(' OR ') : undefined;
}

const SCHEMA_VERSION = 1;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    text TEXT NOT NULL,
    tags TEXT NOT NULL,
    scope_kind TEXT NOT NULL CHECK (scope_kind IN ('global', 'session', 'user')),
    scope_id TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS memories_by_scope ON memories (scope_kind, scope_id);
  -- rowid = memories.id. Holds the analysed terms (CJK bigrams, no stopwords) that porter then stems.
  CREATE VIRTUAL TABLE IF NOT EXISTS memory_terms USING fts5(text, tags, tokenize = 'porter unicode61 remove_diacritics 2');
`;

/** Tags count double against text in the BM25 sum, as tags do in the catalog index. */
const BM25_WEIGHTS = 'bm25(memory_terms, 1.0, 2.0)';

interface MemoryRow {
  id: number;
  text: string;
  tags: string;
  scope_kind: 'global' | 'session' | 'user';
  scope_id: string;
  created_at: string;
}

function scopeColumns(scope: MemoryScope): { kind: MemoryRow['scope_kind']; id: string } {
  if (scope === 'global') return { kind: 'global', id: '' };
  return 'sessionId' in scope ? { kind: 'session', id: scope.sessionId } : { kind: 'user', id: scope.userId };
}

function rowScope(row: Pick<MemoryRow, 'scope_kind' | 'scope_id'>): MemoryScope {
  if (row.scope_kind === 'global') return 'global';
  return row.scope_kind === 'session' ? { sessionId: row.scope_id } : { userId: row.scope_id };
}

function toItem(row: MemoryRow): MemoryItem {
  const scope = rowScope(row);
  return {
    id: String(row.id),
    text: row.text,
    tags: JSON.parse(row.tags) as string[],
    scope,
    source: `memory:${formatMemoryScope(scope)}`,
    createdAt: row.created_at,
  };
}

/** `input` parsed by `schema`, or a MemoryInputError naming each bad field under `prefix`. */
function parseInput<T extends z.ZodType>(schema: T, input: unknown, prefix?: string): z.infer<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const field = (path: PropertyKey[]) => [prefix, ...path.map(String)].filter(Boolean).join('.') || 'memory';
  throw new MemoryInputError(parsed.error.issues.map((i) => `${field(i.path)}: ${i.message}`).join('; '));
}

/** A memory id as the database holds it, or undefined for anything that cannot be one. */
function rowId(id: string): number | undefined {
  const value = /^[1-9]\d*$/.test(id.trim()) ? Number(id) : NaN;
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * The memory store. Open with `MemoryStore.open('.data/memory.db')` (`:memory:` for a throwaway
 * store) and `close()` when done.
 */
/** What recall and the agent turn need from a memory store. */
export interface MemoryRecall {
  recall(
    query: string,
    scope: { sessionId: string; userId?: string },
    options: RecallOptions,
  ): Array<{ id: string; name: string; source: string; score: number }>;
  text(id: string): string | undefined;
}

export class MemoryStore implements MemoryRecall {
  private readonly db: Database.Database;
  private readonly statements;

  private constructor(db: Database.Database) {
    this.db = db;
    this.statements = {
      insert: db.prepare<[string, string, string, string, string], void>(
        'INSERT INTO memories (text, tags, scope_kind, scope_id, created_at) VALUES (?, ?, ?, ?, ?)',
      ),
      insertTerms: db.prepare<[number, string, string], void>(
        'INSERT INTO memory_terms (rowid, text, tags) VALUES (?, ?, ?)',
      ),
      get: db.prepare<[number], MemoryRow>('SELECT * FROM memories WHERE id = ?'),
      remove: db.prepare<[number], void>('DELETE FROM memories WHERE id = ?'),
      removeTerms: db.prepare<[number], void>('DELETE FROM memory_terms WHERE rowid = ?'),
      recall: db.prepare<
        { match: string; sessionId: string; userId: string | null; limit: number },
        MemoryRow & { rank: number }
      >(`
        SELECT m.*, ${BM25_WEIGHTS} AS rank
        FROM memory_terms JOIN memories m ON m.id = memory_terms.rowid
        WHERE memory_terms MATCH @match
          AND (m.scope_kind = 'global'
            OR (m.scope_kind = 'session' AND m.scope_id = @sessionId)
            OR (m.scope_kind = 'user' AND m.scope_id = @userId))
        ORDER BY rank, m.id
        LIMIT @limit`),
    };
  }

  /** Opens (creating if needed) the store at `path`; its folder is created too. */
  static open(path: string): MemoryStore {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 5000');
      // The usual pairing with WAL: a commit is durable across a process crash, and may be lost
      // only on power failure; FULL would fsync the log on every add.
      db.pragma('synchronous = NORMAL');
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > SCHEMA_VERSION) {
        throw new Error(`${path} holds memory schema ${version}; this version reads up to ${SCHEMA_VERSION}`);
      }
      db.exec(SCHEMA);
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
      return new MemoryStore(db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Stores a memory. Throws MemoryInputError naming the field when the input is invalid. */
  add(input: NewMemory): MemoryItem {
    const [item] = this.addMany([input]);
    if (!item) throw new Error('the memory vanished right after it was added');
    return item;
  }

  /** Stores several memories in one transaction: all of them, or none when one is invalid. */
  addMany(inputs: NewMemory[]): MemoryItem[] {
    const parsed = inputs.map((input, i) => parseInput(NewMemory, input, inputs.length > 1 ? String(i) : undefined));
    const createdAt = new Date().toISOString();
    const ids = this.db.transaction(() =>
      parsed.map(({ text, scope, tags: given }) => {
        const tags = [...new Set(given.map((t) => t.toLowerCase()))];
        const columns = scopeColumns(scope);
        const { lastInsertRowid } = this.statements.insert.run(
          text,
          JSON.stringify(tags),
          columns.kind,
          columns.id,
          createdAt,
        );
        const rowid = Number(lastInsertRowid);
        this.statements.insertTerms.run(rowid, searchTerms(text).join(' '), searchTerms(tags.join(' ')).join(' '));
        return rowid;
      }),
    )();
    return ids.flatMap((id) => {
      const row = this.statements.get.get(id);
      return row ? [toItem(row)] : [];
    });
  }

  get(id: string): MemoryItem | undefined {
    const key = rowId(id);
    const row = key === undefined ? undefined : this.statements.get.get(key);
    return row ? toItem(row) : undefined;
  }

  /** Memories in id order (oldest first), optionally of one exact scope and/or carrying a tag. */
  list(filter: MemoryFilter = {}): MemoryItem[] {
    const where: string[] = [];
    const params: Record<string, string | number> = {};
    if (filter.scope !== undefined) {
      const columns = scopeColumns(parseInput(MemoryScope, filter.scope, 'scope'));
      where.push('scope_kind = @kind AND scope_id = @scopeId');
      params.kind = columns.kind;
      params.scopeId = columns.id;
    }
    if (filter.tag !== undefined) {
      where.push('EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value = @tag)');
      params.tag = filter.tag.trim().toLowerCase();
    }
    const limit = Number.isFinite(filter.limit) ? ` LIMIT ${Math.max(0, Math.floor(filter.limit ?? 0))}` : '';
    const sql = `SELECT * FROM memories${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id${limit}`;
    return this.db.prepare<Record<string, string | number>, MemoryRow>(sql).all(params).map(toItem);
  }

  /** Deletes a memory; false when there was none with this id. */
  remove(id: string): boolean {
    const key = rowId(id);
    if (key === undefined) return false;
    return this.db.transaction(() => {
      this.statements.removeTerms.run(key);
      return this.statements.remove.run(key).changes > 0;
    })();
  }

  /**
   * The top `k` memories visible to the Session (global ones, the Session's own, its user's) for
   * `query`, ranked by FTS5's BM25. `bm25()` is lower-is-better and negative; the score given here is
   * its negation, so higher is better as for the catalog. Scores compare only within one recall: the
   * term statistics cover the whole file, every scope included. Candidates under `floor` times the
   * best score are left out.
   */
  recall(
    query: string,
    scope: { sessionId: string; userId?: string },
    options: Partial<RecallOptions> = {},
  ): MemoryCandidate[] {
    const { k, floor } = { ...DEFAULT_RECALL, ...options };
    const match = matchExpression(query);
    if (match === undefined || k <= 0) return [];
    const rows = this.statements.recall.all({
      match,
      sessionId: scope.sessionId,
      userId: scope.userId ?? null,
      limit: k,
    });
    const best = rows[0] ? -rows[0].rank : 0;
    return rows
      .filter((row) => -row.rank >= best * floor)
      .map((row) => ({
        id: String(row.id),
        name: memoryTitle(row.text),
        source: `memory:${formatMemoryScope(rowScope(row))}`,
        score: -row.rank,
      }));
  }

  /** The full text of a memory, for the agent turn that loaded it. */
  text(id: string): string | undefined {
    return this.get(id)?.text;
  }

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM memories').get() as { n: number }).n;
  }

  close(): void {
    this.db.close();
  }
}
