/**
 * `harness doctor`: the worker's start-up model check, run against the current environment, as a
 * table: each role's endpoint, model, provider profile, the parameters its request carried, the
 * verdict and the time to the first token; below it, each refusal with the provider's message and
 * the setting to change. Exits 2 when a role did not pass.
 */
import type { Command } from 'commander';
import Table from 'cli-table3';
import type { CommandContext } from './context.js';
import { UsageError } from './run.js';

export function addDoctorCommand(program: Command, { line }: CommandContext): void {
  program
    .command('doctor')
    .description(
      "send each configured model role one request of the shape it uses (the worker's start-up check) and print what the endpoint said",
    )
    .option('--timeout <ms>', 'longest wait for one answer', (v) => Number(v), 30_000)
    .action(async (opts: { timeout: number }) => {
      if (!Number.isFinite(opts.timeout) || opts.timeout < 100) throw new UsageError('--timeout: at least 100 ms');
      const [{ loadConfig }, { createModels }, { checkModels, checksPassed }, { OpenAIModels }] = await Promise.all([
        import('../worker/config.js'),
        import('../worker/create-worker.js'),
        import('../models/model-check.js'),
        import('../models/openai-models.js'),
      ]);
      const config = loadConfig();
      const models = createModels(config.models);
      if (!(models instanceof OpenAIModels)) {
        line('provider: local (no OPENAI_API_KEY or OPENAI_BASE_URL): the offline models need no check');
        return;
      }
      const checks = await checkModels(models, config.models.byRole, opts.timeout);
      if (checks.length === 0) {
        line('no model configured for any role (set HARNESS_MODEL or HARNESS_<ROLE>_MODEL)');
        return;
      }
      const table = new Table({
        head: ['role', 'endpoint', 'model', 'profile', 'sent', 'verdict', 'first token'],
        style: { head: [], border: [] },
        wordWrap: true,
        colWidths: [15, 30, 20, 26, 34, 16, 13],
      });
      for (const c of checks) {
        table.push([
          c.role,
          c.endpoint,
          c.model,
          c.profile,
          c.sent || '—',
          c.verdict,
          c.firstTokenMs === null ? '—' : `${c.firstTokenMs} ms`,
        ]);
      }
      line(table.toString());
      for (const c of checks.filter((x) => x.detail)) line(`${c.role}: ${c.detail}`);
      if (!checksPassed(checks)) {
        const failed = checks.filter((c) => c.verdict === 'refused' || c.verdict === 'failed').length;
        throw new UsageError(`${failed} of ${checks.length} model roles did not pass the check (see above)`);
      }
    });
}
