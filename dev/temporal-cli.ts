/**
 * Finds or builds the Temporal CLI that runs the embedded dev server. The CLI is built from the Go
 * module proxy at the version pinned in tools/temporal/go.mod and cached outside the repository;
 * TEMPORAL_CLI_PATH points at an existing binary instead.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const TEMPORAL_CLI_VERSION = '1.5.1';
const TOOLS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'tools', 'temporal');

export class TemporalCliError extends Error {
  override name = 'TemporalCliError';
}

function cacheDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.trim() ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'session-harness');
}

/** The cached binary's path; its name changes whenever the pinned module versions change. */
export function cachedCliPath(env: NodeJS.ProcessEnv = process.env): string {
  const hash = createHash('sha256')
    .update(readFileSync(join(TOOLS_DIR, 'go.mod')))
    .update(readFileSync(join(TOOLS_DIR, 'go.sum')))
    .digest('hex')
    .slice(0, 12);
  return join(cacheDir(env), `temporal-${TEMPORAL_CLI_VERSION}-${hash}`);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns a runnable `temporal` binary: TEMPORAL_CLI_PATH if set, else the cached build, else a new
 * build (several minutes the first time; progress goes to `log`).
 */
export function ensureTemporalCli(options: { env?: NodeJS.ProcessEnv; log?: (line: string) => void } = {}): string {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const override = env.TEMPORAL_CLI_PATH?.trim();
  if (override) {
    if (!isExecutable(override)) {
      throw new TemporalCliError(`TEMPORAL_CLI_PATH=${override} is not an executable file`);
    }
    return override;
  }
  const target = cachedCliPath(env);
  if (isExecutable(target)) return target;

  const go = spawnSync('go', ['version'], { encoding: 'utf8', env });
  if (go.error || go.status !== 0) {
    throw new TemporalCliError(
      'The Temporal CLI is not built yet and Go was not found to build it. Install Go 1.25 or newer ' +
        '(Debian: apt-get install golang-go, or the go.dev tarball) so it can be built from the Go module proxy, ' +
        'or set TEMPORAL_CLI_PATH to an existing `temporal` binary.',
    );
  }
  mkdirSync(dirname(target), { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  log(
    `Building the Temporal CLI v${TEMPORAL_CLI_VERSION} from the Go module proxy (${go.stdout.trim()}).\n` +
      `This happens once and takes about 3-6 minutes on 2 cores; the binary is cached at ${target}.`,
  );
  const started = Date.now();
  const build = spawnSync(
    'go',
    [
      'build',
      '-o',
      partial,
      '-ldflags',
      `-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`,
      'github.com/temporalio/cli/cmd/temporal',
    ],
    {
      cwd: TOOLS_DIR,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...env, GOFLAGS: `${env.GOFLAGS ?? ''} -mod=mod`.trim() },
    },
  );
  if (build.status !== 0) {
    rmSync(partial, { force: true });
    throw new TemporalCliError(
      `Building the Temporal CLI failed (go build exited ${build.status ?? build.signal}). See the output above; ` +
        'tools/temporal/README.md says how to raise a failing dependency, or set TEMPORAL_CLI_PATH.',
    );
  }
  // Rename is atomic, so a concurrent build or reader never sees half a binary.
  renameSync(partial, target);
  log(`Built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)} s.`);
  return target;
}
