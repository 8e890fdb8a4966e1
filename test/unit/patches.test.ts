/**
 * The patch table (workflows/patches.ts) against the code that asks patches and the document made
 * from it: every id a `patched()` or `deprecatePatch()` call names is in the table, every row is
 * asked somewhere, and docs/patches.md is what `npm run patches` renders.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PATCHES_PATH, renderPatches } from '../../cli/patches-doc.js';
import { ASKED_AFTER_HANDLERS, ASKED_BEFORE_HANDLERS, PATCHES } from '../../workflows/patches.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** Where workflow code lives: the workflows and the workflow interceptors bundled beside them. */
const SOURCE_DIRS = ['workflows', 'worker'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|cjs|js)$/.test(name) ? [path] : [];
  });
}

/** Every `patched(...)` / `deprecatePatch(...)` call in the workflow source: its file and its argument as written. */
function patchCalls(): Array<{ file: string; call: string; arg: string }> {
  const calls: Array<{ file: string; call: string; arg: string }> = [];
  for (const file of SOURCE_DIRS.flatMap((d) => sourceFiles(join(ROOT, d)))) {
    // Comments may name `patched()` in passing; only code asks.
    const text = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
      .join('\n');
    for (const m of text.matchAll(/\b(patched|deprecatePatch)\(([^)]*)\)/g)) {
      calls.push({ file: relative(ROOT, file), call: m[1] ?? '', arg: (m[2] ?? '').trim() });
    }
  }
  return calls;
}

const ids = new Set<string>(PATCHES.map((p) => p.id));

describe('the patch table', () => {
  it('has one row per id', () => {
    expect(ids.size).toBe(PATCHES.length);
  });

  it('names every id a patched() or deprecatePatch() call asks, and those calls name ids as literals', () => {
    const calls = patchCalls();
    expect(calls.length).toBeGreaterThan(10);
    for (const { file, call, arg } of calls) {
      // The run-start lists are asked in one loop (askAtStart), typed by the table's ids.
      if (file === 'workflows/patches.ts' && arg === 'id') continue;
      const literal = /^'([a-z-]+)'$/.exec(arg);
      expect(literal, `${file}: ${call}(${arg}) must name its id as a string literal`).not.toBeNull();
      expect(ids.has(literal?.[1] ?? ''), `${file}: ${call}(${arg}) names an id outside PATCHES`).toBe(true);
    }
  });

  it('asks every row: the run-start ones from the two lists, the others where their branch is', () => {
    const asked = new Set(patchCalls().map((c) => /^'([a-z-]+)'$/.exec(c.arg)?.[1]));
    const atStart = new Set<string>([...ASKED_BEFORE_HANDLERS, ...ASKED_AFTER_HANDLERS]);
    expect(atStart.size).toBe(ASKED_BEFORE_HANDLERS.length + ASKED_AFTER_HANDLERS.length);
    for (const row of PATCHES) {
      if (row.asked === 'start') expect(atStart.has(row.id), row.id).toBe(true);
      else expect(asked.has(row.id), `${row.id} is asked nowhere`).toBe(true);
    }
    for (const id of atStart) expect(PATCHES.find((p) => p.id === id)?.asked, id).toBe('start');
  });

  it('docs/patches.md is what `npm run patches` renders (run it after changing the table)', async () => {
    expect(readFileSync(PATCHES_PATH, 'utf8')).toBe(await renderPatches());
  });
});
