import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  MemoryInputError,
  MemoryStore,
  formatMemoryScope,
  memoryTitle,
  parseMemoryScope,
} from '../capabilities/memory-store.js';

let dir: string;
const open: MemoryStore[] = [];
/** A store in this file's temp folder, closed after each test unless the test closed it. */
function openStore(name = 'memory.db'): MemoryStore {
  const store = MemoryStore.open(join(dir, name));
  open.push(store);
  return store;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'memory-store-'));
});
afterEach(() => {
  for (const store of open.splice(0)) {
    try {
      store.close();
    } catch {
      // already closed by the test
    }
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Memories on unrelated topics: FTS5 gives a word found in most memories almost no weight. */
const background = ['Prefers metric units', 'Time zone is Europe/Berlin', 'Invoices are due on the 5th'].map(
  (text) => ({
    text,
    scope: 'global' as const,
  }),
);

describe('MemoryStore: add, get, list, remove', () => {
  it('stores text, lowercased unique tags and the scope, with a source and a creation time', () => {
    const store = openStore('crud.db');
    const item = store.add({
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
    expect(store.get('1')).toEqual(item);
    expect(store.text('1')).toBe('Send the weekly report on Fridays');
    const forSession = store.add({ text: 'Session note', scope: { sessionId: 'abc' } });
    const forUser = store.add({ text: 'User note', tags: ['pref'], scope: { userId: 'u-9' } });
    expect([forSession.source, forUser.source]).toEqual(['memory:session:abc', 'memory:user:u-9']);

    expect(store.list().map((m) => m.id)).toEqual(['1', '2', '3']);
    expect(store.list({ scope: { sessionId: 'abc' } }).map((m) => m.id)).toEqual(['2']);
    expect(store.list({ scope: 'global' }).map((m) => m.id)).toEqual(['1']);
    expect(store.list({ tag: 'PREF' }).map((m) => m.id)).toEqual(['3']);
    expect(store.list({ limit: 2 }).map((m) => m.id)).toEqual(['1', '2']);

    expect(store.remove('2')).toBe(true);
    expect(store.remove('2')).toBe(false);
    expect(store.get('2')).toBeUndefined();
    expect(store.text('2')).toBeUndefined();
    expect(store.count()).toBe(2);
    // Ids are never reused: a Session that loaded memory 2 must not get another memory's text.
    expect(store.add({ text: 'Later note', scope: 'global' }).id).toBe('4');
  });

  it('treats ids that cannot exist as absent', () => {
    const store = openStore('ids.db');
    for (const id of ['', 'abc', '0', '-1', '1.5', '99999999999999999999']) {
      expect(store.get(id)).toBeUndefined();
      expect(store.remove(id)).toBe(false);
    }
  });

  it('rejects bad input with an error naming the field, and adds nothing from a bad batch', () => {
    const store = openStore('invalid.db');
    expect(() => store.add({ text: '   ', scope: 'global' })).toThrow(new MemoryInputError('text: must not be empty'));
    expect(() => store.add({ text: 'x', scope: { sessionId: ' ' } })).toThrow(/^scope\.sessionId: must not be empty$/);
    expect(() => store.add({ text: 'x', scope: 'everyone' as never })).toThrow(/^scope: must be "global"/);
    expect(() => store.add({ text: 'x', tags: [''], scope: 'global' })).toThrow(/^tags\.0: must not be empty$/);
    expect(() => store.list({ scope: { teamId: 't' } as never })).toThrow(MemoryInputError);
    expect(() =>
      store.addMany([
        { text: 'fine', scope: 'global' },
        { text: '', scope: 'global' },
      ]),
    ).toThrow(/^1\.text: must not be empty$/);
    expect(store.count()).toBe(0);
  });
});

describe('MemoryStore: persistence', () => {
  it('keeps memories across closing and reopening the file (a worker restart)', () => {
    const path = join(dir, 'restart.db');
    const before = MemoryStore.open(path);
    const kept = before.add({
      text: 'The ComfyUI guide must target Windows users',
      tags: ['comfyui'],
      scope: { userId: 'u1' },
    });
    before.addMany(background);
    before.close();

    const after = openStore('restart.db');
    expect(after.get(kept.id)).toEqual(kept);
    const found = after.recall('ComfyUI guide', { sessionId: 'new-session', userId: 'u1' });
    expect(found.map((m) => m.id)).toEqual([kept.id]);
    expect(after.add({ text: 'Next', scope: 'global' }).id).toBe('5');
  });

  it('lets two handles share the file: what the CLI adds, the worker recalls at once', () => {
    const worker = openStore('shared.db');
    const cli = openStore('shared.db');
    worker.addMany(background);
    const added = cli.add({ text: 'Deploys happen on Tuesdays', scope: 'global' });
    expect(worker.recall('when do deploys happen', { sessionId: 's' }).map((m) => m.id)).toEqual([added.id]);
    expect(cli.remove(added.id)).toBe(true);
    expect(worker.recall('deploys', { sessionId: 's' })).toEqual([]);
  });

  it('refuses a file written by a newer schema', () => {
    const path = join(dir, 'newer.db');
    const db = new Database(path);
    db.pragma('user_version = 99');
    db.close();
    expect(() => MemoryStore.open(path)).toThrow(/memory schema 99/);
  });
});

describe('MemoryStore: recall', () => {
  let store: MemoryStore;
  const ids: Record<string, string> = {};

  beforeAll(() => {
    store = MemoryStore.open(':memory:');
    store.addMany(background);
    ids.global = store.add({ text: 'Weekly support reports go to Dana, with charts as PNG', scope: 'global' }).id;
    ids.session = store.add({
      text: 'This session: the weekly report covers EMEA only',
      scope: { sessionId: 's-1' },
    }).id;
    ids.otherSession = store.add({ text: 'Weekly report for APAC', scope: { sessionId: 's-2' } }).id;
    ids.user = store.add({ text: 'Dana prefers the weekly report as a Word document', scope: { userId: 'dana' } }).id;
    ids.otherUser = store.add({ text: 'Weekly report in Spanish please', scope: { userId: 'luis' } }).id;
    ids.chinese = store.add({ text: '客服周报每周五发给运营团队', tags: ['周报'], scope: 'global' }).id;
    ids.tagged = store.add({
      text: 'Escalation contacts for the helpdesk',
      tags: ['support', 'tickets'],
      scope: 'global',
    }).id;
  });
  afterAll(() => store.close());

  it('returns only global memories and those of the given session and user', () => {
    const bySession = store.recall('weekly report', { sessionId: 's-1' }, { k: 10, floor: 0 });
    expect(bySession.map((m) => m.id).sort()).toEqual([ids.global, ids.session].sort());
    const byUser = store.recall('weekly report', { sessionId: 's-3', userId: 'dana' }, { k: 10, floor: 0 });
    expect(byUser.map((m) => m.id).sort()).toEqual([ids.global, ids.user].sort());
  });

  it('scores with FTS5 bm25 negated: positive, higher is better, best first', () => {
    const found = store.recall('weekly support report charts', { sessionId: 's-1' }, { k: 10, floor: 0 });
    expect(found[0]?.id).toBe(ids.global);
    expect(found.every((m) => m.score > 0)).toBe(true);
    const scores = found.map((m) => m.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it('names each candidate with a short title and its scope as source', () => {
    const [top] = store.recall('Dana Word document', { sessionId: 's', userId: 'dana' });
    expect(top).toEqual({
      id: ids.user,
      name: 'Dana prefers the weekly report as a Word document',
      source: 'memory:user:dana',
      score: expect.any(Number) as number,
    });
  });

  it('honours k and the floor', () => {
    expect(store.recall('weekly report', { sessionId: 's-1', userId: 'dana' }, { k: 1, floor: 0 })).toHaveLength(1);
    const all = store.recall('weekly support report charts', { sessionId: 's-1' }, { k: 10, floor: 0 });
    const floored = store.recall('weekly support report charts', { sessionId: 's-1' }, { k: 10, floor: 0.99 });
    expect(floored.map((m) => m.id)).toEqual([all[0]?.id]);
  });

  it('stems English words and matches tags and Chinese text', () => {
    expect(store.recall('reporting', { sessionId: 's-1' }, { k: 10, floor: 0 }).map((m) => m.id)).toContain(ids.global);
    expect(store.recall('ticket', { sessionId: 's' }).map((m) => m.id)).toEqual([ids.tagged]);
    expect(store.recall('写客服周报', { sessionId: 's' }).map((m) => m.id)).toEqual([ids.chinese]);
  });

  it('returns nothing for queries without search terms, and treats FTS5 syntax as plain words', () => {
    expect(store.recall('', { sessionId: 's' })).toEqual([]);
    expect(store.recall('the of and', { sessionId: 's' })).toEqual([]);
    expect(store.recall('"weekly" NEAR(report) OR * ^ -', { sessionId: 's-1' }).length).toBeGreaterThan(0);
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
