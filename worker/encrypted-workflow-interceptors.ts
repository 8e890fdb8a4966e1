/**
 * A workflow interceptor module that every bundle an encrypting worker runs must carry (it runs in
 * the workflow sandbox: it imports only @temporalio/workflow). It turns `goalSearchAttribute` off in
 * the start argument, and in the state a continued run carries, whichever client started the
 * Session: search attributes are visibility data no payload codec reaches, so with encryption on the
 * Session's goal never goes there.
 */
import { patched, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

/** The name webpack gives this module in a bundle, so a worker can tell whether a bundle carries it. */
export const ENCRYPTED_INTERCEPTORS_MARKER = 'worker/encrypted-workflow-interceptors';

function clampSettings(holder: unknown): void {
  if (typeof holder !== 'object' || holder === null) return;
  const settings = (holder as { settings?: unknown }).settings;
  if (typeof settings === 'object' && settings !== null) {
    (settings as { goalSearchAttribute?: boolean }).goalSearchAttribute = false;
  } else if (settings === undefined) {
    (holder as { settings?: unknown }).settings = { goalSearchAttribute: false };
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      execute(input, next) {
        const start = input.args[0] as { carried?: unknown } | undefined;
        // Runs that began before this patch replay as they ran (their goal stays in SessionGoal until
        // they continue as new); every run after it keeps the goal out (workflows/patches.ts).
        if (start && patched('goal-attribute-off-when-encrypted')) {
          clampSettings(start);
          clampSettings(start.carried);
        }
        return next(input);
      },
    },
  ],
});
