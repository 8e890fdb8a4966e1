/**
 * Builds the Session worker from configuration: catalog, role models, activities, and a Temporal
 * worker on the task queue. Shared by `npm run worker`, `npm start` and the tests.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type InjectedSinks, type WorkerOptions } from '@temporalio/worker';
import { IndexedCatalog } from '../capabilities/catalog.js';
import { loadCatalogDir, type CatalogProblem } from '../capabilities/catalog-files.js';
import { createActivities, type SessionDirectory } from '../activities/index.js';
import { LocalModels } from '../models/local-models.js';
import { defaultScoringThreads } from '../models/local/scoring-pool.js';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import type { EventPublisher, EventSinks, SessionEvent } from '../contract/events.js';
import { InProcessEventFeed, PostgresEventFeed } from '../client/event-feeds.js';
import { UndecodableMarkingCodec } from './undecodable-codec.js';
import { deltaOutlet } from './delta-outlet.js';
import { connectMcpToolsets } from '../capabilities/mcp-toolsets.js';
import type { MemoryBackend } from '../capabilities/memory-model.js';
import { openMemoryStore } from '../capabilities/open-memory-store.js';
import { ToolPolicy, ToolPolicyError } from '../capabilities/tool-policy.js';
import { OpenAIModels } from '../models/openai-models.js';
import type { RoleModels } from '../models/roles.js';
import { connectionOptions } from '../client/connection.js';
import { AesGcmPayloadCodec, EncryptionError, encryptedDataConverter } from '../client/encryption.js';
import { ConfigError, type HarnessConfig } from './config.js';
import { ACTIVATION_LIMIT, stickyCache, type StickyCache } from './capacity.js';
import { temporalSessionDirectory } from './session-directory.js';
import type { Tracing } from './tracing.js';
import {
  ENCRYPTED_WORKFLOW_MODULE,
  bundleEncrypts,
  bundleTraces,
  TRACING_WORKFLOW_MODULE,
} from './workflow-bundles.js';
import { sharedContractOptions } from './shared-contract.js';

const require = createRequire(import.meta.url);

/**
 * The failure converter that encodes messages and stack traces, for a worker that encrypts: beside
 * this file, in the sources and in `dist/worker/` (the build copies it).
 */
export const ENCODED_FAILURE_CONVERTER = require.resolve('./encoded-failure-converter.cjs');

/** The workflow sources, for a worker that bundles at start (tsx: `.ts`; the built `dist/`: `.js`). */
function workflowsSource(): string {
  try {
    return require.resolve('../workflows/index.ts');
  } catch {
    return require.resolve('../workflows/index.js');
  }
}

/** RoleModels built on their first call, so a fallback nobody needs costs nothing. */
function lazyModels(build: () => RoleModels): RoleModels {
  return {
    relevance: (request, call) => build().relevance(request, call),
    extract: (request, call) => build().extract(request, call),
    orchestrate: (request, call) => build().orchestrate(request, call),
    compact: (request, call) => build().compact(request, call),
    agentStep: (prompt, call) => build().agentStep(prompt, call),
    describe: () => build().describe(),
  };
}

export function createModels(config: HarnessConfig['models']): RoleModels {
  if (config.provider === 'openai') {
    return new OpenAIModels({
      ...(config.baseURL ? { baseURL: config.baseURL } : {}),
      ...(config.apiKey ? { apiKey: config.apiKey } : {}),
      models: config.byRole,
      profiles: config.profiles,
      maxTokens: config.maxTokens,
    });
  }
  return new LocalModels({ threads: config.localThreads ?? defaultScoringThreads() });
}

export interface BuiltWorker {
  worker: Worker;
  connection: NativeConnection;
  models: RoleModels;
  catalog: IndexedCatalog;
  catalogProblems: CatalogProblem[];
  mcp: McpCatalog | undefined;
  memories: MemoryBackend;
  /** The approval policy from HARNESS_TOOL_POLICY, when set. */
  toolPolicy: ToolPolicy | undefined;
  /** Where the Sessions' events are pushed live (in this process, or PostgreSQL with HARNESS_EVENTS_URL). */
  events: EventPublisher;
  /** Set when OTEL_EXPORTER_OTLP_ENDPOINT is: where spans go. */
  tracing: Tracing | undefined;
  /** The sticky cache size passed to the SDK, and why (worker/capacity.ts). */
  stickyCache: StickyCache;
  /** Stops MCP servers, closes the memory store and both connections, and flushes spans. */
  close(): Promise<void>;
}

/**
 * The worker's interceptors: the caller's, plus tracing's activity interceptors and, when the
 * workflows are bundled at start, its workflow module (a prebuilt bundle carries it already:
 * scripts/build-workflow-bundle.ts).
 */
function interceptorOptions(
  given: WorkerOptions['interceptors'],
  tracing: Tracing | undefined,
  bundlingAtStart: boolean,
  encrypted: boolean,
): Pick<WorkerOptions, 'interceptors'> {
  const modules = [...(encrypted ? [ENCRYPTED_WORKFLOW_MODULE] : []), ...(tracing ? [TRACING_WORKFLOW_MODULE] : [])];
  if (!tracing && modules.length === 0) return given ? { interceptors: given } : {};
  return {
    interceptors: {
      ...given,
      activity: [...(given?.activity ?? []), ...(tracing?.activityInterceptors ?? [])],
      ...(bundlingAtStart && modules.length > 0
        ? { workflowModules: [...(given?.workflowModules ?? []), ...modules] }
        : {}),
    },
  };
}

/** The SDK's `isolateExecutionTimeout`, which its typed options leave out (capacity.ts ACTIVATION_LIMIT). */
const activationLimit = { isolateExecutionTimeout: ACTIVATION_LIMIT } as Partial<WorkerOptions>;

/** Creates (but does not run) a worker. `workflowBundle` skips bundling when a prebuilt bundle exists. */
export async function createSessionWorker(
  config: HarnessConfig,
  overrides: Partial<Pick<WorkerOptions, 'workflowBundle' | 'interceptors' | 'debugMode'>> & {
    models?: RoleModels;
    catalog?: IndexedCatalog;
    /** Wraps the session directory (tests use it to stop a worker at a chosen point). */
    wrapSessions?: (sessions: SessionDirectory) => SessionDirectory;
    memories?: MemoryBackend;
    /** Where events are pushed (tests pass one to subscribe to); default from HARNESS_EVENTS_URL. */
    events?: EventPublisher;
    log?: (line: string) => void;
  } = {},
): Promise<BuiltWorker> {
  // Before anything starts: a worker whose policy cannot be read must not run tools without it.
  const toolPolicy = config.toolPolicyPath ? loadToolPolicy(config.toolPolicyPath) : undefined;
  let catalog = overrides.catalog;
  let catalogProblems: CatalogProblem[] = [];
  let mcp: McpCatalog | undefined;
  if (!catalog) {
    const loaded = loadCatalogDir(config.catalogDir);
    catalog = new IndexedCatalog(loaded.entries);
    catalogProblems = loaded.problems;
    if (config.mcp.configPath) {
      const connected = await connectMcpToolsets({
        configPath: config.mcp.configPath,
        catalog,
        baseEntries: loaded.entries,
        timeoutMs: config.mcp.timeoutMs,
        refreshIntervalMs: config.mcp.refreshIntervalMs,
        ...(overrides.log ? { log: overrides.log } : {}),
      });
      mcp = connected.mcp;
      catalogProblems = [...catalogProblems, ...connected.problems];
    }
  }
  let memories: MemoryBackend | undefined = overrides.memories;
  // Started first so it is shut down last: spans of the final activities and workflow tasks are
  // exported once the worker has drained.
  // Loaded only when wanted: the OpenTelemetry SDK adds seconds to a worker's start.
  const tracing = config.telemetry.otlpEndpoint
    ? (await import('./tracing.js')).startTracing({
        endpoint: config.telemetry.otlpEndpoint,
        serviceName: config.telemetry.serviceName,
      })
    : undefined;
  const opened: Array<() => Promise<void> | void> = [
    () => tracing?.shutdown(),
    () => mcp?.close(),
    () => (overrides.memories ? undefined : memories?.close()),
  ];
  let closed = false;
  const closeAll = async () => {
    if (closed) return;
    closed = true;
    for (const close of [...opened].reverse()) await close();
  };
  // With encryption on, event content must not leave the worker in the clear: the PostgreSQL feed
  // then carries only ids, and subscribers read the events through the codec (the events query).
  const events: EventPublisher =
    overrides.events ??
    (config.eventsUrl
      ? new PostgresEventFeed(config.eventsUrl, {
          contentFree: config.encryptionKeys.length > 0,
          // Deltas pushed through PostgreSQL carry a MAC under the first control key.
          controlKeys: config.policy.controlKeys,
          ...(overrides.log ? { log: overrides.log } : {}),
        })
      : new InProcessEventFeed());
  if (!overrides.events) opened.push(() => events.close());
  try {
    memories ??= await openMemoryStore({ url: config.memoryUrl, file: config.memoryDb });
    const models = overrides.models ?? createModels(config.models);
    if (!overrides.models && models instanceof LocalModels) opened.push(() => models.close());
    // The scoring threads load their models (about 2 s) while the worker connects and bundles; the
    // worker is returned, and so polls, only once they are ready. A pool that fails to load is
    // reported, not fatal: its tasks fail and are retried like any model failure.
    const warming = (models instanceof LocalModels ? models.ready() : Promise.resolve()).catch((err: unknown) => {
      overrides.log?.(`scoring threads failed to warm up: ${err instanceof Error ? err.message : String(err)}`);
    });
    // Helper roles over budget are answered by the local provider, built on first need.
    let fallback: LocalModels | undefined;
    const fallbackModels: RoleModels =
      models instanceof LocalModels
        ? models
        : lazyModels(() => {
            if (!fallback) {
              fallback = new LocalModels({ threads: config.models.localThreads ?? defaultScoringThreads() });
              const built = fallback;
              opened.push(() => built.close());
            }
            return fallback;
          });
    const connection = await NativeConnection.connect(connectionOptions(config.temporal));
    opened.push(() => connection.close());
    const clientConnection = await Connection.connect(connectionOptions(config.temporal));
    opened.push(() => clientConnection.close());
    const codec = config.encryptionKeys.length > 0 ? new AesGcmPayloadCodec(config.encryptionKeys) : undefined;
    const client = new Client({
      connection: clientConnection,
      namespace: config.temporal.namespace,
      ...(codec ? { dataConverter: encryptedDataConverter(codec) } : {}),
      ...(tracing ? { interceptors: { workflow: [tracing.clientInterceptor] } } : {}),
    });
    const directory = temporalSessionDirectory(client);
    const sessions = overrides.wrapSessions ? overrides.wrapSessions(directory) : directory;
    const bundle =
      overrides.workflowBundle ??
      (config.worker.workflowBundle ? { codePath: config.worker.workflowBundle } : undefined);
    const bundleCode = bundle ? ('code' in bundle ? bundle.code : readFileSync(bundle.codePath, 'utf8')) : undefined;
    if (codec && bundleCode !== undefined && !bundleEncrypts(bundleCode)) {
      // Refused, not warned: this bundle would put the goal of every Session a plain client starts
      // into a search attribute, where no codec reaches.
      throw new EncryptionError(
        `HARNESS_ENCRYPTION_KEYS is set but the workflow bundle lacks ${ENCRYPTED_WORKFLOW_MODULE} (npm run build writes dist/workflow-bundle-encrypted.js)`,
      );
    }
    if (tracing && bundleCode !== undefined && !bundleTraces(bundleCode)) {
      overrides.log?.(
        `tracing: the workflow bundle has no ${TRACING_WORKFLOW_MODULE}; only activity spans are exported (npm run build writes dist/workflow-bundle-traced.js)`,
      );
    }
    // Sized to the workflow thread's heap: the SDK's default cache outgrew it and killed the worker.
    const cache = await stickyCache(config.worker.maxCachedWorkflows);
    overrides.log?.(cache.line);
    const worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...(bundle
        ? { workflowBundle: bundle }
        : { workflowsPath: workflowsSource(), bundlerOptions: await sharedContractOptions() }),
      // Workflows in the main thread: the heap bench reads their heap there (bench/session-heap.ts).
      ...(overrides.debugMode ? { debugMode: true } : {}),
      // Activities (model calls) get this long to finish after SIGTERM; then they are cancelled.
      shutdownGraceTime: config.worker.shutdownGraceMs,
      ...(config.worker.maxConcurrentActivities
        ? { maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivities }
        : {}),
      ...(config.worker.maxConcurrentWorkflowTasks
        ? { maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTasks }
        : {}),
      maxCachedWorkflows: cache.size,
      // A loaded machine must not turn a long activation into a crash of the process (capacity.ts).
      ...activationLimit,
      // The payload codec runs here, outside the workflow sandbox; workflow code never sees ciphertext.
      // Failures are encoded too: an activity error can quote model output. A workflow bundled at
      // start gets the converter as well; a prebuilt bundle keeps the one it was built with. Around
      // it, a payload that cannot be decoded (or read) becomes a marker the Session records as a
      // rejection, instead of failing every retry of its workflow task.
      dataConverter: {
        payloadCodecs: [new UndecodableMarkingCodec(codec, overrides.log)],
        ...(codec ? { failureConverterPath: ENCODED_FAILURE_CONVERTER } : {}),
      },
      ...interceptorOptions(overrides.interceptors, tracing, !bundle, codec !== undefined),
      sinks: {
        ...tracing?.sinks,
        events: {
          publish: { fn: (_info, sessionId: string, event: SessionEvent) => events.publish(sessionId, event) },
        },
      } satisfies InjectedSinks<EventSinks> & Record<string, unknown>,
      // Sessions live long and change code only behind patched(), so they move to each new current
      // version (auto-upgrade) instead of pinning a months-long Session to the build that started it.
      ...(config.worker.deployment
        ? {
            workerDeploymentOptions: {
              useWorkerVersioning: true,
              version: { deploymentName: config.worker.deployment.name, buildId: config.worker.deployment.buildId },
              defaultVersioningBehavior: 'AUTO_UPGRADE' as const,
            },
          }
        : {}),
      activities: createActivities({
        models,
        understanding: config.models.understanding,
        fallbackModels,
        prices: config.accounting.prices,
        budgetMax: config.accounting.budgetMax,
        catalog,
        memories,
        recall: config.recall,
        policy: config.policy,
        sessions,
        deltas: deltaOutlet(events, client),
        remoteAgents: config.remoteAgents,
        ...(mcp ? { mcp } : {}),
        ...(toolPolicy ? { toolPolicy } : {}),
      }),
    });
    await warming;
    return {
      worker,
      connection,
      models,
      catalog,
      catalogProblems,
      mcp,
      memories,
      toolPolicy,
      events,
      tracing,
      stickyCache: cache,
      close: closeAll,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

function loadToolPolicy(path: string): ToolPolicy {
  try {
    return ToolPolicy.load(path);
  } catch (err) {
    if (err instanceof ToolPolicyError)
      throw new ConfigError(`Invalid configuration:\n  HARNESS_TOOL_POLICY: ${err.message}`);
    throw err;
  }
}
