/**
 * The check of an approver's edit to a waiting call's arguments, run as a local activity. It resolves
 * the edited call exactly as the agent step resolves a model's call (the same offers, the same
 * RE2-safe schema validator, the same approval policy), so an edit passes only what the model's own
 * call would have to pass, and a policy `deny` matching the edited arguments wins over the approval.
 */
import type { ApprovalEditActivities, ApprovalEditVerdict } from '../contract/activity-contract.js';
import { ToolArgumentValidator } from '../capabilities/tool-arguments.js';
import { resolveCalls, toolOffers } from './agent-step.js';
import type { ActivityDeps } from './deps.js';

const refused = (reason: string): ApprovalEditVerdict => ({ refused: reason, policy: null });

export function createApprovalEditActivities(
  deps: Pick<ActivityDeps, 'catalog' | 'toolPolicy' | 'remoteAgents'>,
): ApprovalEditActivities {
  const { catalog, toolPolicy } = deps;
  const validator = new ToolArgumentValidator();
  const riskTags = (toolset: string | null, tool: string) =>
    (toolset === null ? undefined : catalog.toolset(toolset)?.tools.find((t) => t.name === tool)?.riskTags) ?? [];
  return {
    checkApprovalEdit: (request) => {
      const offers = toolOffers(request.toolsets, catalog, true, deps.remoteAgents?.agents);
      const spec = offers.find((s) => s.tool === request.tool && s.toolset === request.toolset);
      if (!spec) {
        const where = request.toolset === null ? 'the built-ins' : `toolset "${request.toolset}"`;
        return Promise.resolve(
          refused(`${request.tool} is not among ${where} on this worker, so the edit cannot be checked`),
        );
      }
      const policy = toolPolicy ? { policy: toolPolicy, sessionKind: request.sessionKind, riskTags } : undefined;
      const [call] = resolveCalls(
        [{ callId: 'edit', name: spec.functionName, arguments: request.arguments }],
        [spec],
        validator,
        policy,
      );
      if (!call) return Promise.resolve(refused('the edit could not be resolved'));
      if (call.argumentError !== null) {
        return Promise.resolve(
          refused(`the edited arguments do not fit ${request.tool}'s input schema: ${call.argumentError}`),
        );
      }
      if (call.policy?.effect === 'deny') {
        const why = call.policy.reason ? ` (${call.policy.reason})` : '';
        return Promise.resolve({
          refused: `the edited call is denied by policy rule ${call.policy.rule}${why}`,
          policy: call.policy,
        });
      }
      return Promise.resolve({ refused: null, policy: call.policy });
    },
  };
}
