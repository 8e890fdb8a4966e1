/**
 * Configuration from the environment, parsed by zod. A bad value is reported with the name of the
 * variable that holds it.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { ROLES, type Role } from '../models/roles.js';
import { DEFAULT_TASK_QUEUE } from '../workflows/api.js';

/** Where the data folder is when `HARNESS_DATA_DIR` is unset (relative to the working directory). */
export const DEFAULT_DATA_DIR = '.data';

const optionalString = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();

const port = (fallback: number) => z.coerce.number().int().min(1).max(65_535).default(fallback);

export const EnvSchema = z.object({
  TEMPORAL_ADDRESS: z.string().trim().min(1).default('localhost:7233'),
  TEMPORAL_NAMESPACE: z.string().trim().min(1).default('default'),
  HARNESS_TASK_QUEUE: z.string().trim().min(1).default(DEFAULT_TASK_QUEUE),
  TEMPORAL_CLI_PATH: optionalString,
  HARNESS_DATA_DIR: z.string().trim().min(1).default(DEFAULT_DATA_DIR),
  HARNESS_DEV_PORT: port(7233),
  HARNESS_DEV_UI_PORT: port(8233),
  HARNESS_DEV_HTTP_PORT: port(7243),
  HARNESS_CATALOG_DIR: z.string().trim().min(1).default('catalog'),
  HARNESS_RECALL_K: z.coerce.number().int().min(1).max(100).default(8),
  HARNESS_RECALL_FLOOR: z.coerce.number().min(0).max(1).default(0.15),
  HARNESS_MODEL_PROVIDER: z.enum(['openai', 'local']).optional(),
  OPENAI_BASE_URL: optionalString.pipe(z.url({ error: 'must be a URL such as https://api.openai.com/v1' }).optional()),
  OPENAI_API_KEY: optionalString,
  HARNESS_MODEL: optionalString,
  HARNESS_RELEVANCE_MODEL: optionalString,
  HARNESS_EXTRACTION_MODEL: optionalString,
  HARNESS_ORCHESTRATION_MODEL: optionalString,
  HARNESS_COMPACTION_MODEL: optionalString,
  HARNESS_AGENT_MODEL: optionalString,
  HARNESS_JSON_MODE: z.enum(['json_object', 'json_schema']).default('json_object'),
  HARNESS_MEMORY_DB: optionalString,
  HARNESS_MEMORY_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, { error: 'must be a PostgreSQL URL such as postgres://user@host:5432/db' })
      .optional(),
  ),
  HARNESS_MCP_CONFIG: optionalString,
  HARNESS_MCP_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
  HARNESS_MCP_REFRESH_MS: z.coerce.number().int().min(0).default(0),
});
export type Env = z.infer<typeof EnvSchema>;

export interface HarnessConfig {
  temporal: { address: string; namespace: string; taskQueue: string };
  dataDir: string;
  dev: { port: number; uiPort: number; httpPort: number; cliPath: string | undefined };
  catalogDir: string;
  recall: { k: number; floor: number };
  /** SQLite file of the memory store. */
  memoryDb: string;
  /** PostgreSQL URL of a memory store shared by all workers; it replaces the SQLite file when set. */
  memoryUrl: string | undefined;
  /** MCP servers that become toolsets (none when configPath is unset). */
  mcp: { configPath: string | undefined; timeoutMs: number; refreshIntervalMs: number };
  models: {
    provider: 'openai' | 'local';
    baseURL: string | undefined;
    apiKey: string | undefined;
    byRole: Partial<Record<Role, string>>;
    jsonMode: 'json_object' | 'json_schema';
  };
}

/**
 * The memory store's SQLite file: `HARNESS_MEMORY_DB`, else `memory.db` in `HARNESS_DATA_DIR`, else
 * `.data/memory.db`. The worker and `harness memory` both use this rule, so they open the same file.
 */
export function memoryDbPath(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.HARNESS_MEMORY_DB?.trim();
  if (explicit) return resolve(explicit);
  return resolve(env.HARNESS_DATA_DIR?.trim() || DEFAULT_DATA_DIR, 'memory.db');
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment. Throws ConfigError naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): HarnessConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (i) => `${i.path.join('.')}: ${i.message} (got ${JSON.stringify(env[String(i.path[0])])})`,
    );
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const e = parsed.data;
  const byRole: Partial<Record<Role, string>> = {};
  for (const role of ROLES) {
    const specific = e[`HARNESS_${role.toUpperCase()}_MODEL` as keyof Env] as string | undefined;
    const model = specific ?? e.HARNESS_MODEL;
    if (model) byRole[role] = model;
  }
  return {
    temporal: { address: e.TEMPORAL_ADDRESS, namespace: e.TEMPORAL_NAMESPACE, taskQueue: e.HARNESS_TASK_QUEUE },
    dataDir: resolve(e.HARNESS_DATA_DIR),
    dev: {
      port: e.HARNESS_DEV_PORT,
      uiPort: e.HARNESS_DEV_UI_PORT,
      httpPort: e.HARNESS_DEV_HTTP_PORT,
      cliPath: e.TEMPORAL_CLI_PATH,
    },
    catalogDir: resolve(e.HARNESS_CATALOG_DIR),
    recall: { k: e.HARNESS_RECALL_K, floor: e.HARNESS_RECALL_FLOOR },
    memoryDb: memoryDbPath({ HARNESS_MEMORY_DB: e.HARNESS_MEMORY_DB, HARNESS_DATA_DIR: e.HARNESS_DATA_DIR }),
    memoryUrl: e.HARNESS_MEMORY_URL,
    mcp: {
      configPath: e.HARNESS_MCP_CONFIG ? resolve(e.HARNESS_MCP_CONFIG) : undefined,
      timeoutMs: e.HARNESS_MCP_TIMEOUT_MS,
      refreshIntervalMs: e.HARNESS_MCP_REFRESH_MS,
    },
    models: {
      // Without a key the roles run on the local provider, unless a base URL says a keyless
      // OpenAI-compatible server (Ollama, vLLM) is meant.
      provider: e.HARNESS_MODEL_PROVIDER ?? (e.OPENAI_API_KEY || e.OPENAI_BASE_URL ? 'openai' : 'local'),
      baseURL: e.OPENAI_BASE_URL,
      apiKey: e.OPENAI_API_KEY,
      byRole,
      jsonMode: e.HARNESS_JSON_MODE,
    },
  };
}
