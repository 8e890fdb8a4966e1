/** `npm run temporal:build`: builds (or finds) the pinned Temporal CLI and prints its path. */
import { TemporalCliError, ensureTemporalCli } from './temporal-cli.js';

try {
  process.stdout.write(`${ensureTemporalCli()}\n`);
} catch (err) {
  process.stderr.write(`${err instanceof TemporalCliError ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
