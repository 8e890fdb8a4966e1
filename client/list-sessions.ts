/**
 * `SessionClient.list`: Sessions from Temporal visibility, read through the Session search
 * attributes, so a listing needs no worker and no query per Session.
 */
import type { Client } from '@temporalio/client';
import { sessionIdOf } from '../contract/ids.js';
import { SessionGoalKey, SessionParentKey, SessionStageKey, SessionStatusKey } from '../contract/search-attributes.js';
import type { SessionSummary } from './types.js';

/** Up to `limit` Sessions matching the visibility `query`, in the order visibility returns them. */
export async function listSessions(client: Client, query: string, limit: number): Promise<SessionSummary[]> {
  const rows: SessionSummary[] = [];
  for await (const info of client.workflow.list({ query, pageSize: Math.min(limit, 1000) })) {
    const attrs = info.typedSearchAttributes;
    rows.push({
      sessionId: sessionIdOf(info.workflowId) ?? info.workflowId,
      workflowId: info.workflowId,
      runId: info.runId,
      executionStatus: info.status.name,
      status: attrs.get(SessionStatusKey) ?? null,
      stage: attrs.get(SessionStageKey) ?? null,
      goal: attrs.get(SessionGoalKey) ?? null,
      parent: attrs.get(SessionParentKey) ?? null,
      taskQueue: info.taskQueue,
      startTime: info.startTime,
      closeTime: info.closeTime ?? null,
    });
    if (rows.length >= limit) break;
  }
  return rows;
}
