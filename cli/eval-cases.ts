/**
 * The labelled cases `harness eval` runs: their JSON-lines file format, its validation, and the
 * error a bad file or bad arguments raise. Kept apart from scoring so the format can be read, and
 * checked by tests, without the evaluation around it.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { describeIssues } from '../contract/text.js';
import { EXPECTED } from './eval-metrics.js';
import { UsageError } from './run.js';

/** The repository's labelled cases, `eval/cases.jsonl`; `--file` names another file. */
export const DEFAULT_CASES_FILE = fileURLToPath(new URL('../eval/cases.jsonl', import.meta.url));

export const EvalCase = z.object({
  id: z.string().optional(),
  sessionGoal: z.string().trim().min(1),
  phaseGoal: z.string().trim().min(1),
  message: z.string().trim().min(1),
  expected: z.enum(EXPECTED),
});
export type EvalCase = z.infer<typeof EvalCase>;

/** A bad case file or bad arguments: the message is for the user as is (exit 2). */
export class EvalInputError extends UsageError {
  override name = 'EvalInputError';
}

/** Parses JSON lines of cases; blank lines are skipped, a bad line is reported with its number. */
export function parseCases(text: string, source = 'cases'): EvalCase[] {
  const cases: EvalCase[] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '') return;
    const where = `${source}:${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new EvalInputError(`${where}: not valid JSON`);
    }
    const parsed = EvalCase.safeParse(value);
    if (!parsed.success) throw new EvalInputError(`${where}: ${describeIssues(parsed.error)}`);
    cases.push(parsed.data);
  });
  if (cases.length === 0) throw new EvalInputError(`${source}: no cases`);
  return cases;
}

/** Reads and parses a case file. */
export async function loadCases(path: string): Promise<EvalCase[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    throw new EvalInputError(`cannot read case file ${path}: ${why}`);
  }
  return parseCases(text, path);
}
