/**
 * The worker's way to hand messages to Sessions (routing and `session_create_sub`) and to send a
 * sub-session's reply back to its parent (`subSessionReply`). Hand-overs use the `submit` update, so the receiver's answer comes back: a refused hand-over (queue full, closed
 * Session, invalid message) is an error the sending Session records, never a silent drop.
 */
import { FAILURE } from '../contract/failures.js';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { SessionDirectory } from '../activities/deps.js';
import { WORKFLOW_TYPE, subSessionReplyUpdate, submitUpdate } from '../contract/api.js';
import { workflowIdFor } from '../contract/ids.js';
import type { SessionWorkflow } from '../contract/api.js';

/** A receiver that refused or cannot take a message: retrying will not help. */
function refused(sessionId: string, err: unknown): ApplicationFailure {
  const why = err instanceof WorkflowUpdateFailedError ? (err.cause?.message ?? err.message) : (err as Error).message;
  return ApplicationFailure.nonRetryable(`session ${sessionId} refused the message: ${why}`, FAILURE.HandOverRefused);
}

const isRefusal = (err: unknown) =>
  err instanceof WorkflowUpdateFailedError ||
  err instanceof WorkflowNotFoundError ||
  err instanceof WorkflowExecutionAlreadyStartedError;

export function temporalSessionDirectory(client: Client): SessionDirectory {
  return {
    async submitWithStart({ start, taskQueue, message }) {
      const startWorkflowOperation = new WithStartWorkflowOperation<SessionWorkflow>(WORKFLOW_TYPE, {
        workflowId: workflowIdFor(start.sessionId),
        taskQueue,
        args: [start],
        // A running sub-session takes the message; a finished one is not silently started again.
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        staticSummary: `Sub-session of ${start.parentSessionId ?? '?'}: ${message.text.slice(0, 120)}`,
      });
      try {
        return await client.workflow.executeUpdateWithStart(submitUpdate, {
          args: [message],
          startWorkflowOperation,
        });
      } catch (err) {
        throw isRefusal(err) ? refused(start.sessionId, err) : err;
      }
    },

    async submit({ sessionId, message }) {
      try {
        return await client.workflow.getHandle(workflowIdFor(sessionId)).executeUpdate(submitUpdate, {
          args: [message],
        });
      } catch (err) {
        throw isRefusal(err) ? refused(sessionId, err) : err;
      }
    },

    async reply({ sessionId, reply }) {
      try {
        // The update id repeats on a retried activity, so the server answers a re-delivery from the
        // first outcome; the parent's own de-duplication covers a re-delivery after continue-as-new.
        return await client.workflow.getHandle(workflowIdFor(sessionId)).executeUpdate(subSessionReplyUpdate, {
          args: [reply],
          updateId: `subSessionReply:${reply.sessionId}:${reply.seq}`,
        });
      } catch (err) {
        throw isRefusal(err) ? refused(sessionId, err) : err;
      }
    },
  };
}
