/**
 * The shared memory store: the same memories, scopes and recall as the embedded SQLite store, in
 * PostgreSQL (`HARNESS_MEMORY_URL=postgres://…`), so every worker recalls and resolves the same ids.
 *
 * Full-text search is a `tsvector` column under a GIN index. The text is analysed first by the same
 * `searchTerms` as the SQLite store and the catalog: Latin words lose stopwords, and Chinese,
 * Japanese and Korean runs become overlapping bigrams, which is the CJK path (PostgreSQL has no CJK
 * segmenter, and pg_trgm ignores non-alphanumerics in the C locale). The `english` configuration then
 * stems the Latin words. Tags are weight A and text weight B, so a tag counts twice as much.
 */
import pg from 'pg';
import { DEFAULT_RECALL, searchTerms, type RecallOptions } from './catalog.js';
import {
  MemoryScope,
  columnsScope,
  formatMemoryScope,
  memoryTitle,
  memoryVisibleTo,
  parseInput,
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

const SCHEMA_VERSION = 1;

/** Serialises schema creation when several workers start at once; any fixed number does ("hrns"). */
const SCHEMA_LOCK = 0x68726e73;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS harness_memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS harness_memories (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    text TEXT NOT NULL,
    tags TEXT[] NOT NULL,
    scope_kind TEXT NOT NULL CHECK (scope_kind IN ('global', 'session', 'user')),
    scope_id TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    terms TSVECTOR NOT NULL
  );
  CREATE INDEX IF NOT EXISTS harness_memories_by_scope ON harness_memories (scope_kind, scope_id);
  CREATE INDEX IF NOT EXISTS harness_memories_terms ON harness_memories USING GIN (terms);
`;

/** ts_rank weights for {D, C, B, A}: tags (A) count double against text (B), as in the SQLite store. */
const RANK_WEIGHTS = '{0.1, 0.2, 0.5, 1.0}';

interface MemoryRow {
  id: string;
  text: string;
  tags: string[];
  scope_kind: ScopeKind;
  scope_id: string;
  created_at: Date;
}

function toItem(row: MemoryRow): MemoryItem {
  const scope = columnsScope(row.scope_kind, row.scope_id);
  return {
    id: row.id,
    text: row.text,
    tags: row.tags,
    scope,
    source: `memory:${formatMemoryScope(scope)}`,
    createdAt: row.created_at.toISOString(),
  };
}

/** The tsquery text for `query`: its search terms, any of which may match. */
function queryExpression(query: string): string | undefined {
  // searchTerms yields letters and digits only, so no tsquery operator can get through.
  const terms = [...new Set(searchTerms(query))];
  return terms.length > 0 ? terms.join(' | ') : undefined;
}

/** The URL without its password, for logs. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'PostgreSQL (unparsable URL)';
  }
}

const COLUMNS = 'id::text AS id, text, tags, scope_kind, scope_id, created_at';

/** Memories in PostgreSQL. Open with `await PostgresMemoryStore.open(url)` and `close()` when done. */
export class PostgresMemoryStore implements MemoryBackend {
  readonly location: string;
  private readonly pool: pg.Pool;

  private constructor(pool: pg.Pool, url: string) {
    this.pool = pool;
    this.location = `PostgreSQL ${redact(url)}`;
  }

  /** Connects and creates the tables if needed. Throws when the database holds a newer schema. */
  static async open(url: string, options: { maxConnections?: number } = {}): Promise<PostgresMemoryStore> {
    const pool = new pg.Pool({ connectionString: url, max: options.maxConnections ?? 4 });
    // An idle client that loses its server (a restart) must not crash the worker; the next query reconnects.
    pool.on('error', () => {});
    try {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
        await client.query(SCHEMA);
        const found = await client.query<{ value: string }>(
          "SELECT value FROM harness_memory_meta WHERE key = 'schema_version'",
        );
        const version = Number(found.rows[0]?.value ?? 0);
        if (version > SCHEMA_VERSION) {
          throw new Error(`${redact(url)} holds memory schema ${version}; this version reads up to ${SCHEMA_VERSION}`);
        }
        await client.query(
          "INSERT INTO harness_memory_meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
          [String(SCHEMA_VERSION)],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
      return new PostgresMemoryStore(pool, url);
    } catch (err) {
      await pool.end();
      throw err;
    }
  }

  async add(input: NewMemory): Promise<MemoryItem> {
    const [item] = await this.addMany([input]);
    if (!item) throw new Error('the memory vanished right after it was added');
    return item;
  }

  async addMany(inputs: NewMemory[]): Promise<MemoryItem[]> {
    const parsed = parseNewMemories(inputs);
    if (parsed.length === 0) return [];
    const createdAt = new Date();
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const items: MemoryItem[] = [];
      for (const { text, tags, scope } of parsed) {
        const columns = scopeColumns(scope);
        const { rows } = await client.query<MemoryRow>(
          `INSERT INTO harness_memories (text, tags, scope_kind, scope_id, created_at, terms)
           VALUES ($1, $2, $3, $4, $5,
             setweight(to_tsvector('english', $6), 'B') || setweight(to_tsvector('english', $7), 'A'))
           RETURNING ${COLUMNS}`,
          [
            text,
            tags,
            columns.kind,
            columns.id,
            createdAt,
            searchTerms(text).join(' '),
            searchTerms(tags.join(' ')).join(' '),
          ],
        );
        if (rows[0]) items.push(toItem(rows[0]));
      }
      await client.query('COMMIT');
      return items;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async get(id: string): Promise<MemoryItem | undefined> {
    const key = rowId(id);
    if (key === undefined) return undefined;
    const { rows } = await this.pool.query<MemoryRow>(`SELECT ${COLUMNS} FROM harness_memories WHERE id = $1`, [key]);
    return rows[0] ? toItem(rows[0]) : undefined;
  }

  async list(filter: MemoryFilter = {}): Promise<MemoryItem[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.scope !== undefined) {
      const columns = scopeColumns(parseInput(MemoryScope, filter.scope, 'scope'));
      params.push(columns.kind, columns.id);
      where.push(`scope_kind = $${params.length - 1} AND scope_id = $${params.length}`);
    }
    if (filter.tag !== undefined) {
      params.push(filter.tag.trim().toLowerCase());
      where.push(`$${params.length} = ANY (tags)`);
    }
    let limit = '';
    if (Number.isFinite(filter.limit)) {
      params.push(Math.max(0, Math.floor(filter.limit ?? 0)));
      limit = ` LIMIT $${params.length}`;
    }
    const sql = `SELECT ${COLUMNS} FROM harness_memories${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id${limit}`;
    const { rows } = await this.pool.query<MemoryRow>(sql, params);
    return rows.map(toItem);
  }

  async remove(id: string): Promise<boolean> {
    const key = rowId(id);
    if (key === undefined) return false;
    const { rowCount } = await this.pool.query('DELETE FROM harness_memories WHERE id = $1', [key]);
    return (rowCount ?? 0) > 0;
  }

  /**
   * Ranked by `ts_rank` (term frequency with tag and text weights; unlike BM25 it has no inverse
   * document frequency, so a word found in most memories still counts).
   */
  async recall(
    query: string,
    scope: { sessionId: string; userId?: string },
    options: Partial<RecallOptions> = {},
  ): Promise<MemoryCandidate[]> {
    const { k, floor } = { ...DEFAULT_RECALL, ...options };
    const expression = queryExpression(query);
    if (expression === undefined || k <= 0) return [];
    const { rows } = await this.pool.query<MemoryRow & { rank: number }>(
      `SELECT ${COLUMNS}, ts_rank('${RANK_WEIGHTS}', terms, q) AS rank
       FROM harness_memories, to_tsquery('english', $1) AS q
       WHERE terms @@ q
         AND (scope_kind = 'global'
           OR (scope_kind = 'session' AND scope_id = $2)
           OR (scope_kind = 'user' AND scope_id = $3))
       ORDER BY rank DESC, id
       LIMIT $4`,
      [expression, scope.sessionId, scope.userId ?? null, k],
    );
    const best = rows[0]?.rank ?? 0;
    return rows
      .filter((row) => row.rank >= best * floor)
      .map((row) => ({
        id: row.id,
        name: memoryTitle(row.text),
        source: `memory:${formatMemoryScope(columnsScope(row.scope_kind, row.scope_id))}`,
        score: row.rank,
        text: row.text,
      }));
  }

  async text(id: string, reader: MemoryReader): Promise<string | undefined> {
    const item = await this.get(id);
    return item && memoryVisibleTo(item.scope, reader) ? item.text : undefined;
  }

  async count(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM harness_memories');
    return Number(rows[0]?.n ?? 0);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
