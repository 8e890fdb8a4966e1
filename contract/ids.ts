/**
 * Workflow ids of Sessions. The `session:` prefix is wire contract: it is written here and nowhere
 * else.
 *
 * Pure module: safe to import from workflow code.
 */
const PREFIX = 'session:';

/** The workflow id of a Session: `session:<sessionId>`. */
export function workflowIdFor(sessionId: string): string {
  return `${PREFIX}${sessionId}`;
}

/** The sessionId inside a Session's workflow id, or null when the id is not a Session's. */
export function sessionIdOf(workflowId: string): string | null {
  return workflowId.startsWith(PREFIX) && workflowId.length > PREFIX.length ? workflowId.slice(PREFIX.length) : null;
}
