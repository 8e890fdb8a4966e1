/**
 * The `answerTool` update: a tool result that tells its sender whether it reached the waiting call.
 * It takes the same path as the `toolResult` signal (the Session's `control('toolResult')`, which
 * verifies and applies in order with the other control items) and fails with the reason when it
 * answered nothing. Its validator refuses a payload that does not fit ToolResultInput before it
 * reaches history, so no old history has one of these and registering it needs no patch.
 */
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { DESCRIPTIONS, answerToolUpdate } from '../../contract/api.js';
import { FAILURE } from '../../contract/failures.js';
import { ToolResultInput } from '../../contract/messages.js';
import { describeIssues } from '../../contract/text.js';

/** Delivers a tool result; resolves to why it answered nothing, else null. */
export type DeliverToolResult = (raw: unknown) => string | null | Promise<string | null>;

/** Sets the `answerTool` handler; call it with the other handlers, before the workflow's first await. */
export function registerToolResultUpdate(deliver: DeliverToolResult): void {
  setHandler(
    answerToolUpdate,
    async (raw) => {
      const why = await deliver(raw);
      if (why !== null) throw ApplicationFailure.nonRetryable(why, FAILURE.ToolResultRefused);
      return { callId: ToolResultInput.parse(raw).callId };
    },
    {
      description: DESCRIPTIONS.answerTool,
      validator: (raw) => {
        const parsed = ToolResultInput.safeParse(raw);
        if (!parsed.success) {
          throw ApplicationFailure.nonRetryable(
            `invalid tool result: ${describeIssues(parsed.error)}`,
            FAILURE.InvalidRequest,
          );
        }
      },
    },
  );
}
