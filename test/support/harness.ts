/**
 * What workflow tests share: a real worker on a unique task queue against the run's dev server,
 * role models pointed at the scripted model server, and small helpers to drive a Session.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, type InjectedSinks } from '@temporalio/worker';
import { InProcessEventFeed } from '../../client/event-feeds.js';
import type { EventPublisher, EventSinks, SessionEvent } from '../../contract/events.js';
import { inject } from 'vitest';
import { IndexedCatalog } from '../../capabilities/catalog.js';
import { loadCatalogDir } from '../../capabilities/catalog-files.js';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { OpenAIModels } from '../../models/openai-models.js';
import type { Role, RoleModels } from '../../models/roles.js';
import { decisionsQuery, messageSignal, snapshotQuery } from '../../contract/api.js';
import type { DecisionRecord } from '../../contract/state.js';
import type { SessionInput } from '../../contract/api.js';
import type { MessageInput } from '../../contract/messages.js';
import { temporalSessionDirectory } from '../../worker/session-directory.js';
import { deltaOutlet } from '../../worker/delta-outlet.js';
import type { RecordedRequest, ScriptedModelServer } from './model-server.js';

// Activity failures are the point of many tests; keep the worker's log to errors.
Runtime.install({ logger: new DefaultLogger('ERROR') });

export const uniqueId = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/** The demo catalog, loaded once per test file. */
let demoCatalog: IndexedCatalog | undefined;
export function catalog(): IndexedCatalog {
  demoCatalog ??= new IndexedCatalog(loadCatalogDir('catalog').entries);
  return demoCatalog;
}

/** Model names the scripted server answers per role. */
export const MODEL: Record<Role, string> = {
  relevance: 'relevance-model',
  extraction: 'extraction-model',
  orchestration: 'orchestration-model',
  compaction: 'compaction-model',
  agent: 'agent-model',
};

export function scriptedModels(
  server: ScriptedModelServer,
  roles: readonly Role[] = Object.keys(MODEL) as Role[],
): RoleModels {
  const models: Partial<Record<Role, string>> = {};
  for (const role of roles) models[role] = MODEL[role];
  return new OpenAIModels({ baseURL: server.baseURL, apiKey: 'test', models, jsonMode: 'json_object' });
}

/** The JSON the activity put in a recorded request's user message. */
export function userJson<T = Record<string, unknown>>(request: RecordedRequest): T {
  const user = request.messages.find((m) => m.role === 'user');
  return JSON.parse(user?.content ?? '{}') as T;
}

export interface TestWorker {
  client: Client;
  taskQueue: string;
  /** The feed this worker's Sessions push their events to. */
  events: EventPublisher;
  stop(): Promise<void>;
}

/** A real worker on its own task queue; `stop` drains it and closes its connections. */
export async function startWorker(options: {
  models: RoleModels;
  catalog?: IndexedCatalog;
  taskQueue?: string;
  /** Live MCP connections for `mcp` tool calls (runTool). */
  mcp?: ActivityDeps['mcp'];
  /** The memory store that recall reads and `memory_save` writes. */
  memories?: ActivityDeps['memories'];
  /** Workflow code other than the suite's bundle (for example a faulty deploy). */
  workflowBundle?: { code: string };
  /** The worker's approval policy (HARNESS_TOOL_POLICY). */
  toolPolicy?: ActivityDeps['toolPolicy'];
  /** The local provider that answers helper roles over budget. */
  fallbackModels?: RoleModels;
  /** The worker's caps on Session settings and allowed agent task queues (default: DEFAULT_WORKER_POLICY). */
  policy?: ActivityDeps['policy'];
  /** Where the workflow pushes its events live (a new in-process feed by default). */
  events?: EventPublisher;
  /** Relevance and task terms in one call (default) or two (HARNESS_UNDERSTANDING). */
  understanding?: ActivityDeps['understanding'];
  /** Remote A2A agents `session_create_sub` may name (HARNESS_A2A_REMOTE_AGENTS). */
  remoteAgents?: ActivityDeps['remoteAgents'];
}): Promise<TestWorker> {
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const taskQueue = options.taskQueue ?? uniqueId('tq');
  const nativeConnection = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const events = options.events ?? new InProcessEventFeed();
  const worker = await Worker.create({
    sinks: {
      events: { publish: { fn: (_info, sessionId: string, event: SessionEvent) => events.publish(sessionId, event) } },
    } satisfies InjectedSinks<EventSinks>,
    connection: nativeConnection,
    namespace,
    taskQueue,
    workflowBundle: options.workflowBundle ?? { code: readFileSync(inject('workflowBundlePath'), 'utf8') },
    activities: createActivities({
      models: options.models,
      ...(options.understanding ? { understanding: options.understanding } : {}),
      ...(options.fallbackModels ? { fallbackModels: options.fallbackModels } : {}),
      catalog: options.catalog ?? catalog(),
      sessions: temporalSessionDirectory(client),
      deltas: deltaOutlet(events, client),
      ...(options.mcp ? { mcp: options.mcp } : {}),
      ...(options.memories ? { memories: options.memories } : {}),
      ...(options.toolPolicy ? { toolPolicy: options.toolPolicy } : {}),
      ...(options.policy ? { policy: options.policy } : {}),
      ...(options.remoteAgents ? { remoteAgents: options.remoteAgents } : {}),
    }),
  });
  const running = worker.run();
  return {
    client,
    taskQueue,
    events,
    async stop() {
      worker.shutdown();
      await running;
      await nativeConnection.close();
      await connection.close();
    },
  };
}

export async function startSession(
  w: Pick<TestWorker, 'client' | 'taskQueue'>,
  start: Partial<SessionInput> & { sessionId?: string } = {},
): Promise<WorkflowHandle> {
  const sessionId = start.sessionId ?? uniqueId('s');
  return w.client.workflow.start('session', {
    workflowId: `session:${sessionId}`,
    taskQueue: w.taskQueue,
    args: [{ ...start, sessionId }],
  });
}

let counter = 0;
export function message(text: string, extra: Partial<MessageInput> = {}): MessageInput {
  return { messageId: `m-${++counter}-${randomUUID().slice(0, 6)}`, text, ...extra };
}

export async function send(
  handle: WorkflowHandle,
  text: string,
  extra: Partial<MessageInput> = {},
): Promise<MessageInput> {
  const m = message(text, extra);
  await handle.signal(messageSignal, m);
  return m;
}

/** Polls `read` until `done` holds, or fails with the last value seen. */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await read();
    if (done(last)) return last;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the Session is idle with a decision record for `seq`, and returns that record. */
export async function decided(handle: WorkflowHandle, seq: number, timeoutMs = 30_000): Promise<DecisionRecord> {
  await waitFor(
    () => handle.query(snapshotQuery),
    (s) => s.stage === 'Idle' && (s.lastDecision?.seq ?? 0) >= seq,
    timeoutMs,
  );
  const record = (await handle.query(decisionsQuery)).find((d) => d.seq === seq);
  if (!record) throw new Error(`no decision record for seq ${seq}`);
  return record;
}
