/**
 * Store conformance: the same tests against both memory back ends, the embedded SQLite file and
 * shared PostgreSQL (a real server of this file's own, skipped only where no PostgreSQL is installed).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresServer } from '../dev/postgres.js';
import {
  MemoryInputError,
  MemoryStore,
  formatMemoryScope,
  memoryTitle,
  parseMemoryScope,
  type MemoryBackend,
} from '../capabilities/memory-store.js';
import { PostgresMemoryStore } from '../capabilities/memory-store-postgres.js';
import { postgresBin, startTestPostgres } from './support/postgres.js';

/** One back end: how to open a named store (the same name reaches the same memories) and age its schema. */
interface Backend {
  name: string;
  skip: boolean;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  open(name: string): Promise<MemoryBackend>;
  /** Makes the named store look as if a newer version had written it. */
  writeNewerSchema(name: string): Promise<void>;
}

function sqliteBackend(): Backend {
  let dir = '';
  return {
    name: 'SQLite',
    skip: false,
    setup() {
      dir = mkdtempSync(join(tmpdir(), 'memory-store-'));
      return Promise.resolve();
    },
    teardown() {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
    // A throw (a newer schema) becomes a rejection, as from the PostgreSQL store.
    open: (name) => Promise.resolve().then(() => MemoryStore.open(join(dir, `${name}.db`))),
    writeNewerSchema(name) {
      const db = new Database(join(dir, `${name}.db`));
      db.pragma('user_version = 99');
      db.close();
      return Promise.resolve();
    },
  };
}

function postgresBackend(): Backend {
  let server: PostgresServer | undefined;
  const database = (name: string) =>
    server?.createDatabase(name.replace(/\W/g, '_')) ?? Promise.reject(new Error('PostgreSQL is not running'));
  return {
    name: 'PostgreSQL',
    skip: postgresBin === undefined,
    async setup() {
      server = await startTestPostgres();
    },
    async teardown() {
      await server?.stop();
    },
    open: async (name) => PostgresMemoryStore.open(await database(name)),
    async writeNewerSchema(name) {
      const client = new pg.Client({ connectionString: await database(name) });
      await client.connect();
      await client.query('CREATE TABLE harness_memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
      await client.query("INSERT INTO harness_memory_meta VALUES ('schema_version', '99')");
      await client.end();
    },
  };
}

/** Memories on unrelated topics: a word found in most memories should not decide a ranking. */
const background = ['Prefers metric units', 'Time zone is Europe/Berlin', 'Invoices are due on the 5th'].map(
  (text) => ({ text, scope: 'global' as const }),
);

describe.each([sqliteBackend(), postgresBackend()])('$name memory store', (backend) => {
  const open: MemoryBackend[] = [];
  /** A store closed after each test unless the test closed it. */
  async function openStore(name: string): Promise<MemoryBackend> {
    const store = await backend.open(name);
    open.push(store);
    return store;
  }
  beforeAll(async () => {
    if (!backend.skip) await backend.setup();
  });
  afterEach(async () => {
    for (const store of open.splice(0)) await Promise.resolve(store.close()).catch(() => {});
  });
  afterAll(async () => {
    if (!backend.skip) await backend.teardown();
  });

  describe.skipIf(backend.skip)('add, get, list, remove', () => {
    it('stores text, lowercased unique tags and the scope, with a source and a creation time', async () => {
      const store = await openStore('crud');
      const item = await store.add({
        text: '  Send the weekly report on Fridays  ',
        tags: ['Reporting', 'reporting', 'team'],
        scope: 'global',
      });
      expect(item).toEqual({
        id: '1',
        text: 'Send the weekly report on Fridays',
        tags: ['reporting', 'team'],
        scope: 'global',
        source: 'memory:global',
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as string,
      });
      expect(await store.get('1')).toEqual(item);
      expect(await store.text('1', { sessionId: 'any' })).toBe('Send the weekly report on Fridays');
      const forSession = await store.add({ text: 'Session note', scope: { sessionId: 'abc' } });
      const forUser = await store.add({ text: 'User note', tags: ['pref'], scope: { userId: 'u-9' } });
      expect([forSession.source, forUser.source]).toEqual(['memory:session:abc', 'memory:user:u-9']);

      const ids = async (filter?: Parameters<MemoryBackend['list']>[0]) => (await store.list(filter)).map((m) => m.id);
      expect(await ids()).toEqual(['1', '2', '3']);
      expect(await ids({ scope: { sessionId: 'abc' } })).toEqual(['2']);
      expect(await ids({ scope: 'global' })).toEqual(['1']);
      expect(await ids({ tag: 'PREF' })).toEqual(['3']);
      expect(await ids({ limit: 2 })).toEqual(['1', '2']);

      expect(await store.remove('2')).toBe(true);
      expect(await store.remove('2')).toBe(false);
      expect(await store.get('2')).toBeUndefined();
      expect(await store.text('2', { sessionId: 'abc' })).toBeUndefined();
      expect(await store.count()).toBe(2);
      // Ids are never reused: a Session that loaded memory 2 must not get another memory's text.
      expect((await store.add({ text: 'Later note', scope: 'global' })).id).toBe('4');
    });

    it('reads a memory by id only for its own Session or its own user', async () => {
      const store = await openStore('read-scope');
      const global = await store.add({ text: 'Office closes at six', scope: 'global' });
      const session = await store.add({ text: 'Draft lives in /tmp/a', scope: { sessionId: 's-1' } });
      const user = await store.add({ text: 'Alice prefers A4', scope: { userId: 'alice' } });
      const text = (id: string, sessionId: string, userId?: string) => store.text(id, { sessionId, userId });
      expect(await text(global.id, 's-2')).toBe('Office closes at six');
      expect(await text(session.id, 's-1')).toBe('Draft lives in /tmp/a');
      expect(await text(user.id, 's-2', 'alice')).toBe('Alice prefers A4');
      // Ids are sequential, so guessing one is easy: another Session or user gets nothing.
      expect(await text(session.id, 's-2', 'alice')).toBeUndefined();
      expect(await text(user.id, 's-1', 'bob')).toBeUndefined();
      expect(await text(user.id, 's-1')).toBeUndefined();
    });

    it('treats ids that cannot exist as absent', async () => {
      const store = await openStore('ids');
      for (const id of ['', 'abc', '0', '-1', '1.5', '99999999999999999999']) {
        expect(await store.get(id)).toBeUndefined();
        expect(await store.remove(id)).toBe(false);
      }
    });

    it('rejects bad input with an error naming the field, and adds nothing from a bad batch', async () => {
      const store = await openStore('invalid');
      const add = (input: unknown) => Promise.resolve().then(() => store.add(input as never));
      await expect(add({ text: '   ', scope: 'global' })).rejects.toThrow(
        new MemoryInputError('text: must not be empty'),
      );
      await expect(add({ text: 'x', scope: { sessionId: ' ' } })).rejects.toThrow(
        /^scope\.sessionId: must not be empty$/,
      );
      await expect(add({ text: 'x', scope: 'everyone' })).rejects.toThrow(/^scope: must be "global"/);
      await expect(add({ text: 'x', tags: [''], scope: 'global' })).rejects.toThrow(/^tags\.0: must not be empty$/);
      await expect(Promise.resolve().then(() => store.list({ scope: { teamId: 't' } as never }))).rejects.toThrow(
        MemoryInputError,
      );
      const batch = [
        { text: 'fine', scope: 'global' as const },
        { text: '', scope: 'global' as const },
      ];
      await expect(Promise.resolve().then(() => store.addMany(batch))).rejects.toThrow(/^1\.text: must not be empty$/);
      expect(await store.count()).toBe(0);
    });
  });

  describe.skipIf(backend.skip)('persistence and sharing', () => {
    it('keeps memories across closing and reopening (a worker restart)', async () => {
      const before = await backend.open('restart');
      const kept = await before.add({
        text: 'The ComfyUI guide must target Windows users',
        tags: ['comfyui'],
        scope: { userId: 'u1' },
      });
      await before.addMany(background);
      await before.close();

      const after = await openStore('restart');
      expect(await after.get(kept.id)).toEqual(kept);
      const found = await after.recall('ComfyUI guide', { sessionId: 'new-session', userId: 'u1' });
      expect(found.map((m) => m.id)).toEqual([kept.id]);
      expect((await after.add({ text: 'Next', scope: 'global' })).id).toBe('5');
    });

    it('lets two handles share the store: what one adds, the other recalls at once', async () => {
      const worker = await openStore('shared');
      const cli = await openStore('shared');
      await worker.addMany(background);
      const added = await cli.add({ text: 'Deploys happen on Tuesdays', scope: 'global' });
      expect((await worker.recall('when do deploys happen', { sessionId: 's' })).map((m) => m.id)).toEqual([added.id]);
      expect(await cli.remove(added.id)).toBe(true);
      expect(await worker.recall('deploys', { sessionId: 's' })).toEqual([]);
    });

    it('opens one store from several workers starting at once, and their adds get distinct ids', async () => {
      const workers = await Promise.all([1, 2, 3].map(() => openStore('concurrent')));
      const added = await Promise.all(
        workers.map(async (w, i) =>
          w.addMany([0, 1, 2].map((j) => ({ text: `note ${i}-${j}`, scope: 'global' as const }))),
        ),
      );
      const ids = added.flat().map((m) => m.id);
      expect(new Set(ids).size).toBe(9);
      expect(await workers[0]?.count()).toBe(9);
    });

    it('refuses a store written by a newer schema', async () => {
      await backend.writeNewerSchema('newer');
      await expect(backend.open('newer')).rejects.toThrow(/memory schema 99/);
    });
  });

  describe.skipIf(backend.skip)('recall', () => {
    let store: MemoryBackend;
    const ids: Record<string, string> = {};

    beforeAll(async () => {
      store = await backend.open('recall');
      await store.addMany(background);
      const add = async (key: string, input: Parameters<MemoryBackend['add']>[0]) => {
        ids[key] = (await store.add(input)).id;
      };
      await add('global', { text: 'Weekly support reports go to Dana, with charts as PNG', scope: 'global' });
      await add('session', { text: 'This session: the weekly report covers EMEA only', scope: { sessionId: 's-1' } });
      await add('otherSession', { text: 'Weekly report for APAC', scope: { sessionId: 's-2' } });
      await add('user', { text: 'Dana prefers the weekly report as a Word document', scope: { userId: 'dana' } });
      await add('otherUser', { text: 'Weekly report in Spanish please', scope: { userId: 'luis' } });
      await add('chinese', { text: '客服周报每周五发给运营团队', tags: ['周报'], scope: 'global' });
      await add('tagged', {
        text: 'Escalation contacts for the helpdesk',
        tags: ['support', 'tickets'],
        scope: 'global',
      });
    });
    afterAll(async () => {
      if (!backend.skip) await store.close();
    });
    const recalled = async (query: string, scope: { sessionId: string; userId?: string }, k = 10, floor = 0) =>
      (await store.recall(query, scope, { k, floor })).map((m) => m.id);

    it('returns only global memories and those of the given session and user', async () => {
      expect((await recalled('weekly report', { sessionId: 's-1' })).sort()).toEqual([ids.global, ids.session].sort());
      const byUser = await recalled('weekly report', { sessionId: 's-3', userId: 'dana' });
      expect(byUser.sort()).toEqual([ids.global, ids.user].sort());
    });

    it('scores positive, higher is better, best first', async () => {
      const found = await store.recall('weekly support report charts', { sessionId: 's-1' }, { k: 10, floor: 0 });
      expect(found[0]?.id).toBe(ids.global);
      expect(found.every((m) => m.score > 0)).toBe(true);
      const scores = found.map((m) => m.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
    });

    it('gives each candidate a short title, its scope as source, and its full text', async () => {
      const [top] = await store.recall('Dana Word document', { sessionId: 's', userId: 'dana' });
      expect(top).toEqual({
        id: ids.user,
        name: 'Dana prefers the weekly report as a Word document',
        source: 'memory:user:dana',
        score: expect.any(Number) as number,
        text: 'Dana prefers the weekly report as a Word document',
      });
    });

    it('honours k and the floor', async () => {
      expect(await recalled('weekly report', { sessionId: 's-1', userId: 'dana' }, 1)).toHaveLength(1);
      const all = await recalled('weekly support report charts', { sessionId: 's-1' });
      const floored = await recalled('weekly support report charts', { sessionId: 's-1' }, 10, 0.99);
      expect(floored).toEqual([all[0]]);
    });

    it('stems English words and matches tags and Chinese text', async () => {
      expect(await recalled('reporting', { sessionId: 's-1' })).toContain(ids.global);
      expect(await recalled('ticket', { sessionId: 's' })).toEqual([ids.tagged]);
      expect(await recalled('写客服周报', { sessionId: 's' })).toEqual([ids.chinese]);
      expect(await recalled('周报', { sessionId: 's' })).toEqual([ids.chinese]);
    });

    it('returns nothing for queries without search terms, and treats query syntax as plain words', async () => {
      expect(await store.recall('', { sessionId: 's' })).toEqual([]);
      expect(await store.recall('the of and', { sessionId: 's' })).toEqual([]);
      const syntax = `"weekly" NEAR(report) OR * ^ - ' & ! :* <-> |`;
      expect((await store.recall(syntax, { sessionId: 's-1' })).length).toBeGreaterThan(0);
    });
  });
});

describe('scopes and titles', () => {
  it('parses and formats the CLI spelling of a scope', () => {
    expect(parseMemoryScope('global')).toBe('global');
    expect(parseMemoryScope('session:abc:def')).toEqual({ sessionId: 'abc:def' });
    expect(parseMemoryScope(' user:u1 ')).toEqual({ userId: 'u1' });
    expect(() => parseMemoryScope('session:')).toThrow(MemoryInputError);
    expect(() => parseMemoryScope('team:x')).toThrow(/^scope: must be/);
    expect(formatMemoryScope({ sessionId: 'abc' })).toBe('session:abc');
    expect(formatMemoryScope({ userId: 'u1' })).toBe('user:u1');
  });

  it('titles a memory by its first line, cut at a word boundary', () => {
    expect(memoryTitle('Short note\nmore detail')).toBe('Short note');
    const long = memoryTitle('The customer-support weekly report goes to Dana every Friday morning before ten');
    expect(long).toBe('The customer-support weekly report goes to Dana every…');
    expect(Array.from(memoryTitle('周'.repeat(100)))).toHaveLength(61);
  });
});
