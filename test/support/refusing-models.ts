/**
 * Role models for the model-fault scenario's worker process: every request goes to the configured
 * (scripted) endpoint, except one whose text carries `[<role>:refused]` for its own role, which goes
 * to HARNESS_TEST_REFUSED_PORT on 127.0.0.1, where nothing listens: a real connection refused, seen by
 * the real `openai` client. The tag rides in the goal or message every role sees, so only the tagged
 * role's call is refused.
 */
import type { HarnessConfig } from '../../worker/config.js';
import { createModels } from '../../worker/create-worker.js';
import type { Role, RoleModels } from '../../models/roles.js';

export function refusingModels(config: HarnessConfig['models'], refusedPort: number): RoleModels {
  const good = createModels(config);
  const dead = createModels({ ...config, baseURL: `http://127.0.0.1:${refusedPort}/v1` });
  const pick = (role: Role, request: unknown) => (JSON.stringify(request).includes(`[${role}:refused]`) ? dead : good);
  return {
    relevance: (r, c) => pick('relevance', r).relevance(r, c),
    extract: (r, c) => pick('extraction', r).extract(r, c),
    orchestrate: (r, c) => pick('orchestration', r).orchestrate(r, c),
    compact: (r, c) => pick('compaction', r).compact(r, c),
    agentStep: (p, c) => pick('agent', p).agentStep(p, c),
    describe: () => good.describe(),
  };
}
