/** What the activities are built from: the worker hands in real objects, tests the same objects pointed at local fakes. */
import type { CapabilityCatalog, RecallOptions } from '../capabilities/catalog.js';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import type { MemoryBackend, MemoryRecall } from '../capabilities/memory-store.js';
import type { RoleModels } from '../models/roles.js';
import type { PolicyConfig } from './worker-policy.js';
import type { MessageInput, SessionStart, Recorded } from '../contract/messages.js';

/** Hands messages to Sessions (routing, `session_create_sub`); the worker implements it with a Temporal client. */
export interface SessionDirectory {
  /** Update-with-start `submit`: the receiver's answer, or a non-retryable `HandOverRefused` failure. */
  submitWithStart(args: { start: SessionStart; taskQueue: string; message: MessageInput }): Promise<Recorded>;
  /** `submit` to a running Session: its answer, or a non-retryable `HandOverRefused` failure. */
  submit(args: { sessionId: string; message: MessageInput }): Promise<Recorded>;
}

export interface ActivityDeps {
  models: RoleModels;
  catalog: CapabilityCatalog;
  /** Recall and loaded memories; `add` as well for the `memory_save` tool. */
  memories?: MemoryRecall & Partial<Pick<MemoryBackend, 'add'>>;
  recall?: Partial<RecallOptions>;
  sessions?: SessionDirectory;
  /** The worker's live MCP connections, which run `mcp` tool calls. */
  mcp?: Pick<McpCatalog, 'callTool'>;
  /** How often runTool heartbeats while a tool runs; a third of the heartbeat timeout when that is shorter. */
  heartbeatEveryMs?: number;
  /** Caps on Session settings and the agent task queues allowed; unset: DEFAULT_WORKER_POLICY. */
  policy?: PolicyConfig;
}
