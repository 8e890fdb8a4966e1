/**
 * Finds or builds the self-hosted Temporal binaries for `npm run cluster`: the server, its SQL schema
 * tool and the Web UI server. They are built from the Go module proxy at the versions pinned in
 * tools/temporal-server/go.mod (aligned with tools/temporal, so the CLI's build cache is reused) and
 * cached outside the repository, like the CLI (see temporal-cli.ts).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TemporalCliError } from './temporal-cli.js';

export const TEMPORAL_SERVER_VERSION = '1.29.1';
export const TEMPORAL_UI_SERVER_VERSION = '2.42.1';
const TOOLS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'tools', 'temporal-server');

/** One binary of the tools module: what it is built from and which variable points at a prebuilt one. */
interface GoTool {
  name: string;
  version: string;
  pkg: string;
  envVar: string;
}

export const TEMPORAL_SERVER: GoTool = {
  name: 'temporal-server',
  version: TEMPORAL_SERVER_VERSION,
  pkg: 'go.temporal.io/server/cmd/server',
  envVar: 'TEMPORAL_SERVER_PATH',
};
export const TEMPORAL_SQL_TOOL: GoTool = {
  name: 'temporal-sql-tool',
  version: TEMPORAL_SERVER_VERSION,
  pkg: 'go.temporal.io/server/cmd/tools/sql',
  envVar: 'TEMPORAL_SQL_TOOL_PATH',
};
export const TEMPORAL_UI_SERVER: GoTool = {
  name: 'temporal-ui-server',
  version: TEMPORAL_UI_SERVER_VERSION,
  pkg: 'github.com/temporalio/ui-server/v2/cmd/server',
  envVar: 'TEMPORAL_UI_SERVER_PATH',
};

export interface ClusterBinaries {
  server: string;
  sqlTool: string;
  uiServer: string;
  /** The server module's `schema/` folder (postgresql/v12/temporal and .../visibility). */
  schemaDir: string;
}

interface BuildOptions {
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

function cacheDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.trim() ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'session-harness');
}

/** The cached binary's path; its name changes whenever the pinned module versions change. */
export function cachedToolPath(tool: GoTool, env: NodeJS.ProcessEnv = process.env): string {
  const hash = createHash('sha256')
    .update(readFileSync(join(TOOLS_DIR, 'go.mod')))
    .update(readFileSync(join(TOOLS_DIR, 'go.sum')))
    .digest('hex')
    .slice(0, 12);
  return join(cacheDir(env), `${tool.name}-${tool.version}-${hash}`);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function goEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, GOFLAGS: `${env.GOFLAGS ?? ''} -mod=mod`.trim() };
}

function requireGo(env: NodeJS.ProcessEnv, what: string): string {
  const go = spawnSync('go', ['version'], { encoding: 'utf8', env });
  if (go.error || go.status !== 0) {
    throw new TemporalCliError(
      `${what} is not built yet and Go was not found to build it. Install Go 1.25 or newer so it can be built ` +
        'from the Go module proxy, or set TEMPORAL_SERVER_PATH, TEMPORAL_SQL_TOOL_PATH, TEMPORAL_UI_SERVER_PATH ' +
        'and TEMPORAL_SCHEMA_DIR to existing binaries and the server schema folder.',
    );
  }
  return go.stdout.trim();
}

/** Returns a runnable binary: the tool's env override if set, else the cached build, else a new build. */
export function ensureGoTool(tool: GoTool, options: BuildOptions = {}): string {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const override = env[tool.envVar]?.trim();
  if (override) {
    if (!isExecutable(override)) throw new TemporalCliError(`${tool.envVar}=${override} is not an executable file`);
    return override;
  }
  const target = cachedToolPath(tool, env);
  if (isExecutable(target)) return target;
  const go = requireGo(env, tool.name);
  mkdirSync(dirname(target), { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  log(
    `Building ${tool.name} v${tool.version} from the Go module proxy (${go}); once, cached at ${target}. ` +
      'With the Temporal CLI already built this takes well under a minute, from scratch 5-10 minutes on 2 cores.',
  );
  const started = Date.now();
  const build = spawnSync('go', ['build', '-o', partial, tool.pkg], {
    cwd: TOOLS_DIR,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: goEnv(env),
  });
  if (build.status !== 0) {
    rmSync(partial, { force: true });
    throw new TemporalCliError(
      `Building ${tool.name} failed (go build exited ${build.status ?? build.signal}). See the output above, ` +
        `or set ${tool.envVar} to an existing binary.`,
    );
  }
  // Rename is atomic, so a concurrent build or reader never sees half a binary.
  renameSync(partial, target);
  log(`Built ${tool.name} in ${Math.round((Date.now() - started) / 1000)} s.`);
  return target;
}

/**
 * The server module's schema folder: TEMPORAL_SCHEMA_DIR, else the module's source in the Go module
 * cache (downloaded by the build).
 */
export function temporalSchemaDir(options: BuildOptions = {}): string {
  const env = options.env ?? process.env;
  const check = (dir: string) => {
    if (!existsSync(join(dir, 'postgresql', 'v12', 'temporal', 'schema.sql'))) {
      throw new TemporalCliError(`${dir} has no postgresql/v12/temporal/schema.sql (TEMPORAL_SCHEMA_DIR?)`);
    }
    return dir;
  };
  const override = env.TEMPORAL_SCHEMA_DIR?.trim();
  if (override) return check(override);
  requireGo(env, 'The Temporal schema');
  const list = spawnSync('go', ['list', '-m', '-f', '{{.Dir}}', 'go.temporal.io/server'], {
    cwd: TOOLS_DIR,
    encoding: 'utf8',
    env: goEnv(env),
  });
  const dir = list.stdout.trim();
  if (list.status !== 0 || !dir) {
    throw new TemporalCliError(`go list could not locate go.temporal.io/server: ${list.stderr.trim()}`);
  }
  return check(join(dir, 'schema'));
}

/** All binaries and the schema a self-hosted cluster needs, building what is missing. */
export function ensureClusterBinaries(options: BuildOptions = {}): ClusterBinaries {
  return {
    server: ensureGoTool(TEMPORAL_SERVER, options),
    sqlTool: ensureGoTool(TEMPORAL_SQL_TOOL, options),
    uiServer: ensureGoTool(TEMPORAL_UI_SERVER, options),
    schemaDir: temporalSchemaDir(options),
  };
}
