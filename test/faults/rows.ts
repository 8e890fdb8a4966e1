/**
 * The fault suite's result table: each scenario writes its row to a file (test files run in their
 * own processes), and the global teardown reads them all back, prints them and saves the JSON.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ARTIFACTS = resolve(dirname(fileURLToPath(import.meta.url)), '..', '.artifacts');
export const ROWS_DIR = join(ARTIFACTS, 'faults-rows');

export interface FaultRow {
  scenario: string;
  sessions: number;
  inputs: number;
  lost: number;
  duplicated: number;
  /** Workflow tasks failed by our code (every cause but the server's flow control). */
  failedTasks: number;
  /** Workflow tasks the server itself failed for flow control; printed, not asserted. */
  serverFailedTasks: number;
  timeMs: number;
  /** Extra figures worth a glance (kills, degraded inputs, sizes). */
  notes: string;
}

export function writeRow(row: FaultRow): void {
  mkdirSync(ROWS_DIR, { recursive: true });
  const file = `${row.scenario.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.json`;
  writeFileSync(join(ROWS_DIR, file), JSON.stringify(row));
}

export function readRows(): FaultRow[] {
  let files: string[] = [];
  try {
    files = readdirSync(ROWS_DIR).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  return files
    .map((f) => JSON.parse(readFileSync(join(ROWS_DIR, f), 'utf8')) as FaultRow & { at?: number })
    .sort((a, b) => a.scenario.localeCompare(b.scenario));
}

export function renderTable(rows: FaultRow[]): string {
  const header = ['scenario', 'sessions', 'inputs', 'lost', 'duplicated', 'failed tasks', 'server-failed', 'time'];
  const body = rows.map((r) => [
    r.scenario,
    String(r.sessions),
    String(r.inputs),
    String(r.lost),
    String(r.duplicated),
    String(r.failedTasks),
    String(r.serverFailedTasks),
    `${(r.timeMs / 1000).toFixed(1)} s`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const notes = rows.filter((r) => r.notes).map((r) => `  ${r.scenario}: ${r.notes}`);
  return [
    line(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...body.map(line),
    ...(notes.length > 0 ? ['', 'notes:', ...notes] : []),
  ].join('\n');
}
