/**
 * The worker's way to start Sessions (for `session_create_sub`): signal-with-start on the public
 * workflow id, so creating a Session and handing it its first message is one atomic call.
 */
import type { Client } from '@temporalio/client';
import type { SessionDirectory } from '../activities/index.js';
import { WORKFLOW_TYPE, messageSignal } from '../workflows/api.js';
import { workflowIdFor } from '../workflows/ids.js';

export function temporalSessionDirectory(client: Client): SessionDirectory {
  return {
    async startWithMessage({ start, taskQueue, message }) {
      await client.workflow.signalWithStart(WORKFLOW_TYPE, {
        workflowId: workflowIdFor(start.sessionId),
        taskQueue,
        args: [start],
        signal: messageSignal,
        signalArgs: [message],
        staticSummary: `Sub-session of ${start.parentSessionId ?? '?'}: ${message.text.slice(0, 120)}`,
      });
    },
  };
}
