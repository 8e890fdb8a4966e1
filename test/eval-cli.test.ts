/**
 * `npm run eval` as a user runs it: a real `npm run eval -- ...` process (which runs `harness eval`)
 * with no OpenAI configuration, so the local provider answers.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const GOAL = 'Research ComfyUI and deliver a Markdown guide';
const CASES = [
  { id: 'a', message: 'Continue', expected: 'continue' },
  { id: 'b', message: 'Convert the Markdown we just created to Word', expected: 'new-phase' },
  { id: 'c', message: "Also check tomorrow's weather", expected: 'out-of-scope' },
  { id: 'd', message: 'what about the other one?', expected: 'uncertain' },
];

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env };
  // No OpenAI configuration: the local provider answers.
  for (const name of Object.keys(env))
    if (name.startsWith('OPENAI_') || name === 'HARNESS_MODEL_PROVIDER') delete env[name];
  return new Promise((done) => {
    execFile(
      'npm',
      ['run', '--silent', 'eval', '--', ...args],
      { cwd: root, env, timeout: 90_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

describe('npm run eval', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eval-cli-'));
  const file = join(dir, 'cases.jsonl');
  writeFileSync(file, CASES.map((c) => JSON.stringify({ ...c, sessionGoal: GOAL, phaseGoal: GOAL })).join('\n') + '\n');

  it('prints the matrix, per-decision F1, accuracy, macro-F1 and calibration, and exits 0', async () => {
    const { code, stdout, stderr } = await run(['--file', file]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('(4 cases)');
    expect(stdout).toContain('Relevance role: local/rules-conflict-check-v4; thresholds high 0.65 / low 0.35');
    expect(stdout).toMatch(/│ continue\s+│\s+1 │\s+0 │\s+0 │\s+0 │\s+0 │\s+0 │\s+1 │/);
    expect(stdout).toContain('Accuracy: 1.000 (4/4)');
    expect(stdout).toContain('Macro-F1: 1.000');
    expect(stdout).toMatch(/best thresholds: high [\d.]+ \/ low [\d.]+ -> macro-F1 1\.000/);
  });

  it('reads several files as one set when --file is repeated', async () => {
    const second = join(dir, 'more.jsonl');
    writeFileSync(
      second,
      JSON.stringify({ id: 'e', sessionGoal: GOAL, phaseGoal: GOAL, message: 'go on', expected: 'continue' }) + '\n',
    );
    const { code, stdout } = await run(['--file', file, '--file', second, '--json']);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { file: string; total: number; cases: Array<{ id: string }> };
    expect(report.total).toBe(5);
    expect(report.cases.map((c) => c.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(report.file).toBe(`${file} + ${second}`);
  });

  it('prints the same as JSON with every case, at the given thresholds', async () => {
    const { code, stdout } = await run(['--file', file, '--json', '--high', '0.7', '--low', '0.3']);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as {
      provider: string;
      thresholds: { high: number; low: number };
      accuracy: number;
      macroF1: number;
      perDecision: Record<string, { f1: number }>;
      confusion: Record<string, Record<string, number>>;
      calibration: { high: number; low: number; macroF1: number };
      cases: Array<{ id: string; expected: string; predicted: string; scores: { phase: number; session: number } }>;
    };
    expect(report.provider).toBe('local/rules-conflict-check-v4');
    expect(report.thresholds).toEqual({ high: 0.7, low: 0.3 });
    expect(report.cases.map((c) => [c.id, c.predicted])).toEqual(CASES.map((c) => [c.id, c.expected]));
    const word = report.cases[1];
    expect(word?.scores.phase).toBeLessThanOrEqual(0.3);
    expect(word?.scores.session).toBeGreaterThanOrEqual(0.7);
    expect(report.perDecision['new-phase']?.f1).toBe(1);
    expect(report.confusion.continue?.degraded).toBe(0);
    expect(report.calibration.low).toBeLessThan(report.calibration.high);
  });

  it('says which file it cannot read and exits non-zero', async () => {
    const missing = join(dir, 'missing.jsonl');
    const { code, stdout, stderr } = await run(['--file', missing]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(`harness eval: cannot read case file ${missing}: no such file\n`);
  });

  it('is the `eval` subcommand of harness, with its options in `harness eval --help`', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: harness eval [options]');
    expect(stdout).toMatch(/--high <n>\s+high threshold \(default: 0\.65\)/);
    const bad = await run(['--high', 'lots']);
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toBe(
      "harness eval: option '--high <n>' argument 'lots' is invalid. must be a number between 0 and 1\n",
    );
  });

  it('names the line of a malformed case', async () => {
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(
      bad,
      `${JSON.stringify({ sessionGoal: 'g', phaseGoal: 'g', message: 'm', expected: 'continue' })}\nnot json\n`,
    );
    const { code, stderr } = await run(['--file', bad]);
    expect(code).toBe(2);
    expect(stderr).toBe(`harness eval: ${bad}:2: not valid JSON\n`);
  });
});
