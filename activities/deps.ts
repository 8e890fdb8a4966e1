/** What the activities are built from: the worker hands in real objects, tests the same objects pointed at local fakes. */
import type { CapabilityCatalog, RecallOptions } from '../capabilities/catalog.js';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import type { MemoryBackend, MemoryRecall } from '../capabilities/memory-store.js';
import type { ToolPolicy } from '../capabilities/tool-policy.js';
import type { RoleModels } from '../models/roles.js';
import type {
  MessageInput,
  SessionStart,
  Recorded,
  SubSessionReply,
  SubSessionReplyResult,
} from '../contract/messages.js';
import type { PriceTable } from '../models/prices.js';
import type { Budget } from '../contract/usage.js';
import type { PolicyConfig } from './worker-policy.js';
import type { DeltaOutlet } from './agent-deltas.js';
import type { RemoteAgents } from './remote-agent.js';

/** How the worker understands an input: relevance and task terms in one model call, or in two. */
export const UNDERSTANDING_MODES = ['combined', 'separate'] as const;
export type Understanding = (typeof UNDERSTANDING_MODES)[number];

/** Hands messages to Sessions (routing, `session_create_sub`) and replies back to parents; the worker implements it with a Temporal client. */
export interface SessionDirectory {
  /** Update-with-start `submit`: the receiver's answer, or a non-retryable `HandOverRefused` failure. */
  submitWithStart(args: { start: SessionStart; taskQueue: string; message: MessageInput }): Promise<Recorded>;
  /** `submit` to a running Session: its answer, or a non-retryable `HandOverRefused` failure. */
  submit(args: { sessionId: string; message: MessageInput }): Promise<Recorded>;
  /** `subSessionReply` to a parent Session: its answer, or a non-retryable `HandOverRefused` failure. */
  reply(args: { sessionId: string; reply: SubSessionReply }): Promise<SubSessionReplyResult>;
}

export interface ActivityDeps {
  models: RoleModels;
  /** The local provider, which answers helper roles once a budget is exhausted (the worker always sets it). */
  fallbackModels?: RoleModels;
  /** Prices per model that turn tokens into cost (`HARNESS_MODEL_PRICES`); a model without one has no cost. */
  prices?: PriceTable;
  /** The worker's maximum budget (`HARNESS_MAX_*` budget variables): it holds whatever a Session set. */
  budgetMax?: Budget;
  catalog: CapabilityCatalog;
  /**
   * `combined` (default): the relevance activity also extracts the message's task terms in the same
   * model call when the provider can (RoleModels.understand), and a new phase skips the extraction
   * call; `separate`: relevance and extraction are two calls (`HARNESS_UNDERSTANDING`).
   */
  understanding?: Understanding;
  /** Recall and loaded memories; `add` as well for the `memory_save` tool. */
  memories?: MemoryRecall & Partial<Pick<MemoryBackend, 'add'>>;
  recall?: Partial<RecallOptions>;
  sessions?: SessionDirectory;
  /** The worker's live MCP connections, which run `mcp` tool calls. */
  mcp?: Pick<McpCatalog, 'callTool'>;
  /** The worker's approval policy (`HARNESS_TOOL_POLICY`); absent: the toolsets' `requiresApproval` decides. */
  toolPolicy?: ToolPolicy;
  /** How often runTool heartbeats while a tool runs; a third of the heartbeat timeout when that is shorter. */
  heartbeatEveryMs?: number;
  /** Caps on Session settings and the agent task queues allowed; unset: DEFAULT_WORKER_POLICY. */
  policy?: PolicyConfig;
  /** Remote A2A agents `session_create_sub` may name (`HARNESS_A2A_REMOTE_AGENTS`); absent: none. */
  remoteAgents?: RemoteAgents;
  /** Where the agent step streams its text as `agent.delta` events; absent: it streams none. */
  deltas?: DeltaOutlet;
}
