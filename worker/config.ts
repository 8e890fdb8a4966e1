/**
 * Configuration from the environment, parsed by zod. A bad value is reported with the name of the
 * variable that holds it.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ConnectionConfigError, resolveConnection, type TemporalConnectionSettings } from '../client/connection.js';
import { EncryptionError, parseEncryptionKeys, type EncryptionKey } from '../client/encryption.js';
import type { HelperRole } from '../models/openai-models.js';
import type { PolicyConfig } from '../activities/worker-policy.js';
import { UNDERSTANDING_MODES, type Understanding } from '../activities/deps.js';
import { parseRemoteAgents, RemoteAgentsConfigError, type RemoteAgents } from '../activities/remote-agent.js';
import { ControlKeyError, parseControlKeys, type ControlKey } from '../contract/control-signature.js';
import { ROLES, type Role } from '../models/roles.js';
import { DEFAULT_TASK_QUEUE } from '../contract/api.js';
import type { Budget } from '../contract/usage.js';
import { parsePriceTable, type PriceTable } from '../models/prices.js';
import {
  JsonMode,
  parseOverrides,
  ProviderName,
  ReasoningEffort,
  resolveProfiles,
  type ProfileOverrides,
  type ResolvedProfile,
} from '../models/provider-profiles.js';

/** The `service.name` of exported spans when OTEL_SERVICE_NAME is unset. */
export const DEFAULT_SERVICE_NAME = 'session-harness-worker';

/** Where the data folder is when `HARNESS_DATA_DIR` is unset (relative to the working directory). */
export const DEFAULT_DATA_DIR = '.data';

const optionalString = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();

/** An optional whole number whose empty string means unset. */
const optionalInt = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  optionalString.pipe(z.coerce.number<string | undefined>().int().min(min).max(max).optional());

const port = (fallback: number) => z.coerce.number().int().min(1).max(65_535).default(fallback);

export const EnvSchema = z.object({
  // TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE: see client/connection.ts.
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
  // Unset: each role's provider profile decides (models/provider-profiles.ts); set: every role uses it.
  HARNESS_JSON_MODE: optionalString.pipe(JsonMode.optional()),
  HARNESS_PROVIDER: optionalString.pipe(ProviderName.optional()),
  HARNESS_RELEVANCE_PROVIDER: optionalString.pipe(ProviderName.optional()),
  HARNESS_EXTRACTION_PROVIDER: optionalString.pipe(ProviderName.optional()),
  HARNESS_ORCHESTRATION_PROVIDER: optionalString.pipe(ProviderName.optional()),
  HARNESS_COMPACTION_PROVIDER: optionalString.pipe(ProviderName.optional()),
  HARNESS_AGENT_PROVIDER: optionalString.pipe(ProviderName.optional()),
  HARNESS_PROVIDER_OVERRIDES: optionalString,
  HARNESS_RELEVANCE_PROVIDER_OVERRIDES: optionalString,
  HARNESS_EXTRACTION_PROVIDER_OVERRIDES: optionalString,
  HARNESS_ORCHESTRATION_PROVIDER_OVERRIDES: optionalString,
  HARNESS_COMPACTION_PROVIDER_OVERRIDES: optionalString,
  HARNESS_AGENT_PROVIDER_OVERRIDES: optionalString,
  HARNESS_REASONING_EFFORT: optionalString.pipe(ReasoningEffort.optional()),
  HARNESS_RELEVANCE_REASONING_EFFORT: optionalString.pipe(ReasoningEffort.optional()),
  HARNESS_EXTRACTION_REASONING_EFFORT: optionalString.pipe(ReasoningEffort.optional()),
  HARNESS_ORCHESTRATION_REASONING_EFFORT: optionalString.pipe(ReasoningEffort.optional()),
  HARNESS_COMPACTION_REASONING_EFFORT: optionalString.pipe(ReasoningEffort.optional()),
  HARNESS_AGENT_REASONING_EFFORT: optionalString.pipe(ReasoningEffort.optional()),
  // The start-up check of the model endpoints (models/model-check.ts); `off` skips it.
  HARNESS_MODEL_CHECK: z.enum(['on', 'off']).default('on'),
  HARNESS_UNDERSTANDING: z.enum(UNDERSTANDING_MODES).default('combined'),
  HARNESS_RELEVANCE_MAX_TOKENS: optionalInt(1),
  HARNESS_EXTRACTION_MAX_TOKENS: optionalInt(1),
  HARNESS_ORCHESTRATION_MAX_TOKENS: optionalInt(1),
  HARNESS_COMPACTION_MAX_TOKENS: optionalInt(1),
  HARNESS_LOCAL_THREADS: optionalInt(0, 64),
  HARNESS_MEMORY_DB: optionalString,
  HARNESS_MEMORY_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, { error: 'must be a PostgreSQL URL such as postgres://user@host:5432/db' })
      .optional(),
  ),
  HARNESS_EVENTS_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, { error: 'must be a PostgreSQL URL such as postgres://user@host:5432/db' })
      .optional(),
  ),
  HARNESS_MCP_CONFIG: optionalString,
  HARNESS_MCP_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
  HARNESS_MCP_REFRESH_MS: z.coerce.number().int().min(0).default(0),
  HARNESS_TOOL_POLICY: optionalString,
  HARNESS_ENCRYPTION_KEYS: optionalString,
  HARNESS_METRICS_PORT: optionalInt(0, 65_535),
  // Loopback unless asked: the endpoint has no authentication and names task queues and activity types.
  HARNESS_METRICS_HOST: z.string().trim().min(1).default('127.0.0.1'),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(
    z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://localhost:4318' }).optional(),
  ),
  OTEL_SERVICE_NAME: z.string().trim().min(1).default(DEFAULT_SERVICE_NAME),
  HARNESS_LOG_FORMAT: z.enum(['json', 'text']).default('text'),
  HARNESS_LOG_LEVEL: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('INFO'),
  HARNESS_WORKFLOW_BUNDLE: optionalString,
  HARNESS_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(30_000),
  HARNESS_MAX_ACTIVITIES: optionalInt(1),
  HARNESS_MAX_WORKFLOW_TASKS: optionalInt(2),
  // Caps on Session settings (contract/worker-policy.ts DEFAULT_SETTING_CAPS when unset).
  HARNESS_ALLOWED_AGENT_TASK_QUEUES: optionalString,
  HARNESS_CONTROL_KEYS: optionalString,
  // The longest a signature may still be valid when a worker checks it (1 hour when unset).
  HARNESS_MAX_SIGNATURE_LIFETIME_MS: optionalInt(1_000, 7 * 24 * 3_600_000),
  HARNESS_MAX_AGENT_STEPS: optionalInt(1, 200),
  HARNESS_MAX_REPEATED_FAILURES: optionalInt(1, 20),
  HARNESS_MAX_MODEL_ATTEMPTS: optionalInt(1, 10),
  HARNESS_MAX_MODEL_TIMEOUT_MS: optionalInt(100, 600_000),
  HARNESS_MAX_AGENT_TIMEOUT_MS: optionalInt(100, 3_600_000),
  HARNESS_MAX_TOOL_TIMEOUT_MS: optionalInt(100, 3_600_000),
  HARNESS_MAX_AGENT_CONTEXT_BYTES: optionalInt(4_096, 4_000_000),
  HARNESS_MAX_IDLE_TIMEOUT_MS: optionalInt(1_000, 365 * 24 * 3_600_000),
  HARNESS_DEPLOYMENT_NAME: optionalString,
  HARNESS_BUILD_ID: optionalString,
  // Accounting: a price table (JSON text, or the path of a JSON file) and the worker's maximum budgets.
  HARNESS_MODEL_PRICES: optionalString,
  HARNESS_BUDGET_MAX_TURN_TOKENS: optionalInt(1),
  HARNESS_BUDGET_MAX_SESSION_TOKENS: optionalInt(1),
  HARNESS_BUDGET_MAX_TURN_USD: optionalString.pipe(z.coerce.number<string | undefined>().positive().optional()),
  HARNESS_BUDGET_MAX_SESSION_USD: optionalString.pipe(z.coerce.number<string | undefined>().positive().optional()),
  HARNESS_SPECULATIVE_AGENT_STEP: z.enum(['on', 'off']).default('on'),
  // Sticky cache (worker/capacity.ts): Sessions kept in the workflow thread; unset: sized from its heap limit.
  HARNESS_MAX_CACHED_WORKFLOWS: optionalInt(0).refine((n) => n !== 1, {
    error: 'must be 0 (no cache) or at least 2 (the SDK refuses 1)',
  }),
});
export type Env = z.infer<typeof EnvSchema>;

export interface HarnessConfig {
  /** Connection (address, namespace, TLS, API key) plus the task queue this worker polls. */
  temporal: TemporalConnectionSettings & { taskQueue: string };
  /** AES-256-GCM keys; the first encrypts. Empty: payloads are stored in the clear. */
  encryptionKeys: EncryptionKey[];
  telemetry: {
    /** Prometheus scrape endpoint port (`/metrics`); undefined: no endpoint. */
    metricsPort: number | undefined;
    metricsHost: string;
    /** OTLP/HTTP base URL for traces (`/v1/traces` is appended); undefined: no tracing. */
    otlpEndpoint: string | undefined;
    /** The `service.name` resource attribute of exported spans. */
    serviceName: string;
    logFormat: 'json' | 'text';
    logLevel: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  };
  worker: {
    /** Prebuilt workflow bundle (`npm run build` writes dist/workflow-bundle.js); undefined: bundle at start. */
    workflowBundle: string | undefined;
    /** How long in-flight activities may finish after SIGTERM before they are cancelled. */
    shutdownGraceMs: number;
    maxConcurrentActivities: number | undefined;
    maxConcurrentWorkflowTasks: number | undefined;
    /** `maxCachedWorkflows` from HARNESS_MAX_CACHED_WORKFLOWS; undefined: sized from the heap (worker/capacity.ts). */
    maxCachedWorkflows: number | undefined;
    /** Worker Deployment Versioning: both set turns it on (docs/deploying.md, "Upgrades"). */
    deployment: { name: string; buildId: string } | undefined;
  };
  /** Caps on Session settings and the agent task queues Sessions may name (activities/worker-policy.ts). */
  policy: PolicyConfig;
  dataDir: string;
  dev: { port: number; uiPort: number; httpPort: number; cliPath: string | undefined };
  catalogDir: string;
  recall: { k: number; floor: number };
  /** SQLite file of the memory store. */
  memoryDb: string;
  /** PostgreSQL URL of a memory store shared by all workers; it replaces the SQLite file when set. */
  memoryUrl: string | undefined;
  /**
   * PostgreSQL URL whose LISTEN/NOTIFY carries live events between workers, gateways and clients;
   * unset: events are pushed in this process only.
   */
  eventsUrl: string | undefined;
  /** MCP servers that become toolsets (none when configPath is unset). */
  mcp: { configPath: string | undefined; timeoutMs: number; refreshIntervalMs: number };
  /** The approval-policy file (`HARNESS_TOOL_POLICY`, JSON); undefined: toolsets' `requiresApproval` decides. */
  toolPolicyPath: string | undefined;
  /** Remote A2A agents `session_create_sub` may name (`HARNESS_A2A_REMOTE_AGENTS`, `HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS`). */
  remoteAgents: RemoteAgents;
  models: {
    provider: 'openai' | 'local';
    baseURL: string | undefined;
    apiKey: string | undefined;
    byRole: Partial<Record<Role, string>>;
    /** `HARNESS_JSON_MODE`, when set: it overrides every profile's JSON mode (already applied in `profiles`). */
    jsonMode: JsonMode | undefined;
    /** Each role's provider profile: named, detected and overridden (models/provider-profiles.ts). */
    profiles: Record<Role, ResolvedProfile>;
    /** Whether the worker checks each role's endpoint at start (`HARNESS_MODEL_CHECK`). */
    check: boolean;
    /** The answer limit of helper calls by role (`HARNESS_<ROLE>_MAX_TOKENS`); unset roles use DEFAULT_MAX_TOKENS. */
    maxTokens: Partial<Record<HelperRole, number>>;
    /** Scoring threads of the local provider; 0: on the main thread; undefined: one per core but one, at most 4. */
    localThreads: number | undefined;
    /**
     * `combined`: relevance and the message's task terms in one model call when the provider offers it
     * (the openai provider does, the local one does not); `separate`: two calls (`HARNESS_UNDERSTANDING`).
     */
    understanding: Understanding;
  };
  accounting: {
    /** USD per million tokens by model (`HARNESS_MODEL_PRICES`); a model without a row has no cost. */
    prices: PriceTable;
    /** The most any Session may spend, whatever its own budget says (`HARNESS_BUDGET_MAX_*`). */
    budgetMax: Budget;
  };
}

/** `HARNESS_MODEL_PRICES`: JSON text when it starts with `{`, else the path of a JSON file. */
export function loadPriceTable(value: string | undefined): PriceTable {
  if (!value) return {};
  if (value.startsWith('{')) return parsePriceTable(value, 'HARNESS_MODEL_PRICES');
  const path = resolve(value);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`HARNESS_MODEL_PRICES: cannot read ${path}: ${(err as Error).message}`);
  }
  return parsePriceTable(text, `HARNESS_MODEL_PRICES (${path})`);
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

/** Variables whose values an error never quotes, whatever they hold. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;
/** URL query parameters that carry credentials (`?password=`, `?api_key=`, `?sslpassword=`). */
const SECRET_PARAM = /([?&;][^=&#\s]*(?:key|token|secret|password|passwd|credential)[^=&#\s]*=)[^&#\s]*/gi;

/**
 * Text with the credentials a URL may carry masked: the password of `user:password@` (or the whole
 * userinfo when it has no password, which is then often a token) and secret-named query parameters.
 * Works on text that is not a valid URL too, since that is exactly what an error about it quotes.
 */
export function redactCredentials(text: string): string {
  return text
    .replace(/\/\/([^/?#@\s]*)@/g, (_, info: string) => {
      const colon = info.indexOf(':');
      return colon >= 0 ? `//${info.slice(0, colon)}:***@` : '//***@';
    })
    .replace(SECRET_PARAM, '$1***');
}

/** A configuration value as an error quotes it: secret-named variables not at all, others with credentials masked. */
export function shownValue(name: string, value: string | undefined): string {
  if (value === undefined) return 'undefined';
  if (SECRET_NAME.test(name)) return `a value of ${value.length} characters, not shown`;
  return JSON.stringify(redactCredentials(value));
}

/** The entries whose value is set: an unset cap keeps its default instead of overriding it with undefined. */
function definedOnly<T extends Record<string, number | undefined>>(values: T): { [K in keyof T]?: number } {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: number };
}

/** Parses the environment. Throws ConfigError naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): HarnessConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (i) => `${i.path.join('.')}: ${i.message} (got ${shownValue(String(i.path[0]), env[String(i.path[0])])})`,
    );
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const e = parsed.data;
  if (Boolean(e.HARNESS_DEPLOYMENT_NAME) !== Boolean(e.HARNESS_BUILD_ID)) {
    throw new ConfigError('Invalid configuration:\n  HARNESS_DEPLOYMENT_NAME and HARNESS_BUILD_ID go together');
  }
  let temporal: TemporalConnectionSettings;
  let encryptionKeys: EncryptionKey[];
  let controlKeys: ControlKey[];
  try {
    temporal = resolveConnection({}, env);
    encryptionKeys = e.HARNESS_ENCRYPTION_KEYS ? parseEncryptionKeys(e.HARNESS_ENCRYPTION_KEYS) : [];
    controlKeys = e.HARNESS_CONTROL_KEYS ? parseControlKeys(e.HARNESS_CONTROL_KEYS) : [];
  } catch (err) {
    if (err instanceof ConnectionConfigError || err instanceof EncryptionError || err instanceof ControlKeyError) {
      throw new ConfigError(`Invalid configuration:\n  ${err.message}`);
    }
    throw err;
  }
  const byRole: Partial<Record<Role, string>> = {};
  for (const role of ROLES) {
    const specific = e[`HARNESS_${role.toUpperCase()}_MODEL` as keyof Env] as string | undefined;
    const model = specific ?? e.HARNESS_MODEL;
    if (model) byRole[role] = model;
  }
  let remoteAgents: RemoteAgents;
  try {
    remoteAgents = parseRemoteAgents(env);
  } catch (err) {
    if (err instanceof RemoteAgentsConfigError) throw new ConfigError(`Invalid configuration:\n  ${err.message}`);
    throw err;
  }
  let prices: PriceTable;
  try {
    prices = loadPriceTable(e.HARNESS_MODEL_PRICES);
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  ${(err as Error).message}`);
  }
  let profiles: Record<Role, ResolvedProfile>;
  try {
    const overridesByRole: Partial<Record<Role, ProfileOverrides>> = {};
    const providerByRole: Partial<Record<Role, ProviderName>> = {};
    const effortByRole: Partial<Record<Role, ReasoningEffort>> = {};
    for (const role of ROLES) {
      const key = (what: string) => `HARNESS_${role.toUpperCase()}_${what}` as keyof Env;
      const overrides = parseOverrides(key('PROVIDER_OVERRIDES'), e[key('PROVIDER_OVERRIDES')] as string | undefined);
      if (overrides) overridesByRole[role] = overrides;
      const provider = e[key('PROVIDER')] as ProviderName | undefined;
      if (provider) providerByRole[role] = provider;
      const effort = e[key('REASONING_EFFORT')] as ReasoningEffort | undefined;
      if (effort) effortByRole[role] = effort;
    }
    profiles = resolveProfiles({
      baseURL: e.OPENAI_BASE_URL,
      models: byRole,
      provider: e.HARNESS_PROVIDER,
      providerByRole,
      overrides: parseOverrides('HARNESS_PROVIDER_OVERRIDES', e.HARNESS_PROVIDER_OVERRIDES),
      overridesByRole,
      jsonMode: e.HARNESS_JSON_MODE,
      reasoningEffort: e.HARNESS_REASONING_EFFORT,
      reasoningEffortByRole: effortByRole,
    });
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  ${(err as Error).message}`);
  }
  const budgetMax: Budget = {
    ...(e.HARNESS_BUDGET_MAX_TURN_TOKENS !== undefined ? { turnTokens: e.HARNESS_BUDGET_MAX_TURN_TOKENS } : {}),
    ...(e.HARNESS_BUDGET_MAX_SESSION_TOKENS !== undefined
      ? { sessionTokens: e.HARNESS_BUDGET_MAX_SESSION_TOKENS }
      : {}),
    ...(e.HARNESS_BUDGET_MAX_TURN_USD !== undefined ? { turnCostUsd: e.HARNESS_BUDGET_MAX_TURN_USD } : {}),
    ...(e.HARNESS_BUDGET_MAX_SESSION_USD !== undefined ? { sessionCostUsd: e.HARNESS_BUDGET_MAX_SESSION_USD } : {}),
  };
  const maxTokens: Partial<Record<HelperRole, number>> = {};
  for (const role of ROLES) {
    if (role === 'agent') continue;
    const limit = e[`HARNESS_${role.toUpperCase()}_MAX_TOKENS` as keyof Env] as number | undefined;
    if (limit !== undefined) maxTokens[role] = limit;
  }
  return {
    temporal: { ...temporal, taskQueue: e.HARNESS_TASK_QUEUE },
    encryptionKeys,
    telemetry: {
      metricsPort: e.HARNESS_METRICS_PORT,
      metricsHost: e.HARNESS_METRICS_HOST,
      otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
      serviceName: e.OTEL_SERVICE_NAME,
      logFormat: e.HARNESS_LOG_FORMAT,
      logLevel: e.HARNESS_LOG_LEVEL,
    },
    worker: {
      workflowBundle: e.HARNESS_WORKFLOW_BUNDLE ? resolve(e.HARNESS_WORKFLOW_BUNDLE) : undefined,
      shutdownGraceMs: e.HARNESS_SHUTDOWN_GRACE_MS,
      maxConcurrentActivities: e.HARNESS_MAX_ACTIVITIES,
      maxConcurrentWorkflowTasks: e.HARNESS_MAX_WORKFLOW_TASKS,
      maxCachedWorkflows: e.HARNESS_MAX_CACHED_WORKFLOWS,
      deployment:
        e.HARNESS_DEPLOYMENT_NAME && e.HARNESS_BUILD_ID
          ? { name: e.HARNESS_DEPLOYMENT_NAME, buildId: e.HARNESS_BUILD_ID }
          : undefined,
    },
    policy: {
      caps: definedOnly({
        maxAgentSteps: e.HARNESS_MAX_AGENT_STEPS,
        maxRepeatedFailures: e.HARNESS_MAX_REPEATED_FAILURES,
        modelAttempts: e.HARNESS_MAX_MODEL_ATTEMPTS,
        modelTimeoutMs: e.HARNESS_MAX_MODEL_TIMEOUT_MS,
        agentTimeoutMs: e.HARNESS_MAX_AGENT_TIMEOUT_MS,
        toolTimeoutMs: e.HARNESS_MAX_TOOL_TIMEOUT_MS,
        agentContextBytes: e.HARNESS_MAX_AGENT_CONTEXT_BYTES,
        idleTimeoutMs: e.HARNESS_MAX_IDLE_TIMEOUT_MS,
      }),
      allowedAgentTaskQueues: (e.HARNESS_ALLOWED_AGENT_TASK_QUEUES ?? '')
        .split(',')
        .map((q) => q.trim())
        .filter((q) => q.length > 0),
      controlKeys,
      ...(e.HARNESS_MAX_SIGNATURE_LIFETIME_MS !== undefined
        ? { maxSignatureLifetimeMs: e.HARNESS_MAX_SIGNATURE_LIFETIME_MS }
        : {}),
      speculativeAgentStep: e.HARNESS_SPECULATIVE_AGENT_STEP === 'on',
    },
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
    eventsUrl: e.HARNESS_EVENTS_URL,
    mcp: {
      configPath: e.HARNESS_MCP_CONFIG ? resolve(e.HARNESS_MCP_CONFIG) : undefined,
      timeoutMs: e.HARNESS_MCP_TIMEOUT_MS,
      refreshIntervalMs: e.HARNESS_MCP_REFRESH_MS,
    },
    toolPolicyPath: e.HARNESS_TOOL_POLICY ? resolve(e.HARNESS_TOOL_POLICY) : undefined,
    remoteAgents,
    models: {
      // Without a key the roles run on the local provider, unless a base URL says a keyless
      // OpenAI-compatible server (Ollama, vLLM) is meant.
      provider: e.HARNESS_MODEL_PROVIDER ?? (e.OPENAI_API_KEY || e.OPENAI_BASE_URL ? 'openai' : 'local'),
      baseURL: e.OPENAI_BASE_URL,
      apiKey: e.OPENAI_API_KEY,
      byRole,
      jsonMode: e.HARNESS_JSON_MODE,
      profiles,
      check: e.HARNESS_MODEL_CHECK === 'on',
      maxTokens,
      localThreads: e.HARNESS_LOCAL_THREADS,
      understanding: e.HARNESS_UNDERSTANDING,
    },
    accounting: { prices, budgetMax },
  };
}
