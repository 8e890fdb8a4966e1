/**
 * Persistent memory items (text, tags, scope) in an embedded SQLite file, with BM25 recall through
 * an FTS5 index. Several processes may open the same file: the worker recalls while the CLI adds
 * and removes (WAL journal, busy timeout).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { DEFAULT_RECALL, searchTerms, type RecallOptions } from './catalog.js';
import {
  MemoryScope,
  columnsScope,
  formatMemoryScope,
  memoryTitle,
  parseInput,
  memoryVisibleTo,
  parseNewMemories,
  rowId,
  scopeColumns,
  type MemoryBackend,
  type MemoryCandidate,
  type MemoryFilter,
  type MemoryItem,
  type MemoryReader,
  type NewMemory,
  type ScopeKind,
} from './memory-model.js';

// Existing importers (CLI, tests, bench) keep importing the shared names from here.
export * from './memory-model.js';

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
  scope_kind: ScopeKind;
  scope_id: string;
  created_at: string;
}

function rowScope(row: Pick<MemoryRow, 'scope_kind' | 'scope_id'>): MemoryScope {
  return columnsScope(row.scope_kind, row.scope_id);
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

/**
 * The embedded memory store (the default). Open with `MemoryStore.open('.data/memory.db')`
 * (`:memory:` for a throwaway store) and `close()` when done. It answers synchronously; through
 * the MemoryBackend interface callers `await` it like the PostgreSQL store.
 */
export class MemoryStore implements MemoryBackend {
  readonly location: string;
  private readonly db: Database.Database;
  private readonly statements;

  private constructor(db: Database.Database, location: string) {
    this.db = db;
    this.location = location;
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
      return new MemoryStore(db, path === ':memory:' ? 'SQLite in memory' : `SQLite ${path}`);
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
    const parsed = parseNewMemories(inputs);
    const createdAt = new Date().toISOString();
    const ids = this.db.transaction(() =>
      parsed.map(({ text, scope, tags }) => {
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
   * Ranked by FTS5's BM25. `bm25()` is lower-is-better and negative; the score given here is its
   * negation. The term statistics cover the whole file, every scope included.
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
        text: row.text,
      }));
  }

  text(id: string, reader: MemoryReader): string | undefined {
    const item = this.get(id);
    return item && memoryVisibleTo(item.scope, reader) ? item.text : undefined;
  }

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM memories').get() as { n: number }).n;
  }

  close(): void {
    this.db.close();
  }
}
