/**
 * The model check of the worker's start and `harness doctor`: each configured role gets one small
 * request of the exact shape it will send (its profile's parameters, JSON mode and, for the agent,
 * a tool and the stream), and the endpoint's answer becomes a verdict. A refusal names the setting
 * that fixes it (models/model-errors.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../contract/failures.js';
import { toModelFailure } from './model-errors.js';
import type { OpenAIModels } from './openai-models.js';
import { ROLES, type Role } from './roles.js';

/** How long one check request may take by default. */
export const CHECK_TIMEOUT_MS = 30_000;

/** One role's check. */
export interface RoleCheck {
  role: Role;
  endpoint: string;
  model: string;
  /** The profile name and how it was chosen. */
  profile: string;
  /** The parameters the request carried besides model, messages and tools. */
  sent: string;
  /**
   * `ok`: the endpoint accepted the request; `answer-invalid`: it accepted it but the answer did not
   * fit the role's output (the model, not the request, is at fault); `refused`: it refused the
   * request's configuration; `failed`: anything else (unreachable, a bad key, a timeout).
   */
  verdict: 'ok' | 'answer-invalid' | 'refused' | 'failed';
  /** The provider's message and the fix, or what the answer got wrong; empty when ok. */
  detail: string;
  /** The failure type (contract/failures.ts) when the check did not pass; null when ok. */
  failure: string | null;
  /** Milliseconds to the first streamed text, or to the whole answer when nothing streamed; null when it failed. */
  firstTokenMs: number | null;
}

/** Checks every role that has a model, one at a time (a rate-limited endpoint sees one request at a time). */
export async function checkModels(
  models: OpenAIModels,
  modelByRole: Partial<Record<Role, string>>,
  timeoutMs = CHECK_TIMEOUT_MS,
): Promise<RoleCheck[]> {
  const out: RoleCheck[] = [];
  for (const role of ROLES) {
    const model = modelByRole[role];
    if (!model) continue;
    const resolved = models.profiles[role];
    const row = {
      role,
      endpoint: models.endpoint(),
      model,
      profile: `${resolved.name} (${resolved.source === 'detected' ? 'detected' : resolved.source})`,
      sent: models.requestShape(role),
    };
    try {
      const { firstTokenMs } = await models.probe(role, { timeoutMs, signal: AbortSignal.timeout(timeoutMs + 1_000) });
      out.push({ ...row, verdict: 'ok', detail: '', failure: null, firstTokenMs });
    } catch (err) {
      const failure = err instanceof ApplicationFailure ? err : toModelFailure(err, role);
      const verdict =
        failure.type === FAILURE.ModelConfigError
          ? 'refused'
          : failure.type === FAILURE.ModelInvalidOutput
            ? 'answer-invalid'
            : 'failed';
      out.push({ ...row, verdict, detail: failure.message, failure: failure.type ?? null, firstTokenMs: null });
    }
  }
  return out;
}

/** Whether every role answered (an invalid answer is the model's doing, not the request's): `harness doctor`'s exit code. */
export function checksPassed(checks: RoleCheck[]): boolean {
  return checks.every((c) => c.verdict === 'ok' || c.verdict === 'answer-invalid');
}

/**
 * The checks that stop a worker at start: a refused request, or another refusal (4xx: a bad key, an
 * unknown model). An endpoint that is down or slow does not: it may come up later, and calls retry.
 */
export function blockingChecks(checks: RoleCheck[]): RoleCheck[] {
  return checks.filter(
    (c) => c.verdict === 'refused' || (c.verdict === 'failed' && c.failure === FAILURE.ModelRequestRejected),
  );
}

/** One line per check for a log. */
export function checkLine(c: RoleCheck): string {
  const time = c.firstTokenMs === null ? '' : `, first token ${c.firstTokenMs} ms`;
  return `model check ${c.role}: ${c.verdict} (${c.model} at ${c.endpoint}, profile ${c.profile}, sent ${c.sent || 'nothing extra'}${time})${c.detail ? `: ${c.detail}` : ''}`;
}
