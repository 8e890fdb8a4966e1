/**
 * The labelled files in eval/ keep the format and the labelling rules eval/README.md states, so that
 * `npm run eval` reads every one of them and their figures mean what the README says.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseCases } from '../../cli/eval-cases.js';

const DIR = fileURLToPath(new URL('../../eval/', import.meta.url));
const FILES = readdirSync(DIR).filter((f) => f.endsWith('.jsonl'));
const KEYS = ['id', 'lang', 'domain', 'sessionGoal', 'phaseGoal', 'message', 'expected'];
const HAN = /\p{Script=Han}/u;
/**
 * The files whose README section states rule 4 for every conflict (a note, phase ≠ session);
 * dev.jsonl and holdout.jsonl were written before it was a rule.
 */
const CONFLICT_RULE_FILES = new Set(['cases.jsonl', 'holdout-2.jsonl', 'holdout-3.jsonl', 'holdout-4.jsonl']);

interface Row {
  id: string;
  lang: string;
  sessionGoal: string;
  phaseGoal: string;
  message: string;
  expected: string;
  note?: string;
}

function rows(file: string): Row[] {
  return readFileSync(`${DIR}${file}`, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Row);
}

describe('eval/*.jsonl', () => {
  it('holds the held-out files', () => {
    expect(FILES).toEqual(
      expect.arrayContaining(['cases.jsonl', 'holdout.jsonl', 'holdout-2.jsonl', 'holdout-3.jsonl', 'holdout-4.jsonl']),
    );
  });

  it.each(FILES)('%s parses as eval cases, keys in order, one id each', (file) => {
    const text = readFileSync(`${DIR}${file}`, 'utf8');
    expect(parseCases(text, file).length).toBeGreaterThan(0);
    const ids = new Set<string>();
    const triples = new Set<string>();
    for (const row of rows(file)) {
      const keys = Object.keys(row);
      expect(keys.slice(0, KEYS.length), row.id).toEqual(KEYS);
      expect(keys.length === KEYS.length || (keys.length === KEYS.length + 1 && keys.at(-1) === 'note'), row.id).toBe(
        true,
      );
      expect(ids.has(row.id), row.id).toBe(false);
      ids.add(row.id);
      const triple = JSON.stringify([row.sessionGoal, row.phaseGoal, row.message]);
      expect(triples.has(triple), row.id).toBe(false);
      triples.add(triple);
    }
  });

  it.each(FILES)('%s labels the message language and keeps the conflict rule', (file) => {
    for (const row of rows(file)) {
      // A message of punctuation alone ("？？") may be either.
      if (HAN.test(row.message)) expect(row.lang, row.id).toBe('zh');
      else if (/\p{Script=Latin}/u.test(row.message)) expect(row.lang, row.id).toBe('en');
      if (row.expected === 'conflict' && CONFLICT_RULE_FILES.has(file)) {
        // Rule 4: a conflict breaks a constraint the session goal states, so it is never phase == session.
        expect(row.phaseGoal, row.id).not.toBe(row.sessionGoal);
        expect(row.note, row.id).toBeTruthy();
      }
    }
  });
});
