/**
 * A throwaway PostgreSQL for tests (dev/postgres.ts on a free port). Tests that need it skip, saying
 * why, only when the machine has no PostgreSQL binaries at all.
 */
import { findPostgresBin, startPostgres, type PostgresServer } from '../../dev/postgres.js';
import { freePorts } from './ports.js';

/** Debian's PostgreSQL bin folder (or HARNESS_PG_BIN), undefined when there is none. */
export const postgresBin = findPostgresBin();

/** Why PostgreSQL tests are skipped, printed once by each file that skips them. */
export const NO_POSTGRES =
  'PostgreSQL tests skipped: no initdb/postgres under /usr/lib/postgresql/*/bin ' +
  '(apt-get install postgresql, or set HARNESS_PG_BIN to a folder holding them)';

if (!postgresBin) console.warn(NO_POSTGRES);

/** Starts a fresh server; `stop()` removes its data. Call only when `postgresBin` is set. */
export async function startTestPostgres(): Promise<PostgresServer> {
  if (!postgresBin) throw new Error(NO_POSTGRES);
  const [port] = (await freePorts(1)) as [number];
  return startPostgres({ binDir: postgresBin, port });
}
