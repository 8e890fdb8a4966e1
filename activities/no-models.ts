/**
 * RoleModels for a worker with no model provider: every helper role reports "not configured", so
 * inputs are still recorded and processed through the documented fallbacks, and the agent turn is
 * skipped with that reason. No reply or score is invented.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from './model-errors.js';
import { ROLES, type Role, type RoleModels } from './roles.js';

const WHY =
  'no model provider configured (set OPENAI_API_KEY and HARNESS_MODEL, or OPENAI_BASE_URL for a keyless server)';

function notConfigured(role: Role): never {
  throw ApplicationFailure.nonRetryable(`${role}: ${WHY}`, FailureType.NotConfigured);
}

export class NoModels implements RoleModels {
  describe(): Record<Role, string> {
    return Object.fromEntries(ROLES.map((r) => [r, 'not configured'])) as Record<Role, string>;
  }
  relevance(): never {
    return notConfigured('relevance');
  }
  extract(): never {
    return notConfigured('extraction');
  }
  orchestrate(): never {
    return notConfigured('orchestration');
  }
  compact(): never {
    return notConfigured('compaction');
  }
  agent() {
    return Promise.resolve({ skipped: `agent: ${WHY}` });
  }
}
