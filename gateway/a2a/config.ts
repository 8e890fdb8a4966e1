/**
 * Which A2A agents the gateway serves, and what their agent cards say. Each agent is a kind of
 * Session: a name and description for the card, an optional Session goal every new Session of that
 * kind starts with, and the catalog skills it advertises. `HARNESS_A2A_AGENTS` names a JSON file of
 * them; without it the gateway serves one agent, `session`. The cards list the catalog's skills that
 * the gateway is given (`npm start` reads them from the worker's catalog folder; the gateway layer
 * does not read catalogs itself). Push notifications (push.ts) are on unless `HARNESS_A2A_PUSH=off`;
 * `HARNESS_A2A_PUSH_ALLOW_HOSTS` (comma-separated names or addresses) lets those webhook hosts through
 * the public-address guard.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { canonicalHost } from '../../contract/url-hosts.js';
import { AuthConfigError } from '../auth.js';
import type { PushSettings } from './push.js';

/** One A2A agent: a kind of Session. */
export const A2aAgentConfig = z
  .object({
    /** Its path segment: `/a2a/<id>`. */
    id: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'id: lowercase letters, digits and hyphens'),
    name: z.string().trim().min(1).max(200),
    description: z.string().trim().min(1).max(2000),
    /** The Session goal a new Session of this kind starts with (none: its first message sets it). */
    goal: z.string().trim().min(1).max(4000).optional(),
    /** Catalog skill ids the card lists (default: every skill in the catalog). */
    skills: z.array(z.string()).optional(),
  })
  .strict();
export type A2aAgentConfig = z.infer<typeof A2aAgentConfig>;

export const A2aAgentsFile = z
  .object({ agents: z.array(A2aAgentConfig).min(1, 'the file names no agent') })
  .strict()
  .refine((f) => new Set(f.agents.map((a) => a.id)).size === f.agents.length, 'agent ids must be unique');

/** A card's skill as the catalog describes it. */
export interface CardSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
}

/** What the gateway needs to serve A2A. */
export interface A2aSettings {
  agents: A2aAgentConfig[];
  /** The catalog's skills, for the cards. */
  skills: CardSkill[];
  /** The URL clients reach the gateway at, for the cards (default: the address it listens on). */
  publicUrl?: string;
  /** Push notifications (default: on, no host let through the guard). */
  push?: PushSettings;
}

/** The agent served when no file is given. */
export const DEFAULT_AGENT: A2aAgentConfig = {
  id: 'session',
  name: 'session-harness',
  description:
    'A durable agent Session: each message is a task input, judged against the Session goals, answered by an agent that recalls skills and tools from the catalog and waits for approval where policy says so.',
};

/**
 * HARNESS_A2A_AGENTS (a JSON file), HARNESS_A2A_PUBLIC_URL, HARNESS_A2A_PUSH and
 * HARNESS_A2A_PUSH_ALLOW_HOSTS; `skills` come from the caller.
 */
export function a2aSettingsFromEnv(env: NodeJS.ProcessEnv, skills: CardSkill[] = []): A2aSettings {
  const file = env.HARNESS_A2A_AGENTS?.trim();
  let agents = [DEFAULT_AGENT];
  if (file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new AuthConfigError(`HARNESS_A2A_AGENTS: cannot read ${file}: ${(err as Error).message}`);
    }
    const result = A2aAgentsFile.safeParse(parsed);
    if (!result.success) {
      const issue = result.error.issues[0];
      throw new AuthConfigError(`HARNESS_A2A_AGENTS: ${file}: ${issue?.path.join('.') || '(file)'}: ${issue?.message}`);
    }
    agents = result.data.agents;
  }
  const publicUrl = env.HARNESS_A2A_PUBLIC_URL?.trim();
  return {
    agents,
    skills,
    push: pushSettingsFromEnv(env),
    ...(publicUrl ? { publicUrl: publicUrl.replace(/\/+$/, '') } : {}),
  };
}

function pushSettingsFromEnv(env: NodeJS.ProcessEnv): PushSettings {
  const switched = env.HARNESS_A2A_PUSH?.trim().toLowerCase() || 'on';
  if (switched !== 'on' && switched !== 'off') {
    throw new AuthConfigError(`HARNESS_A2A_PUSH must be "on" or "off" (got ${JSON.stringify(env.HARNESS_A2A_PUSH)})`);
  }
  const allowHosts = (env.HARNESS_A2A_PUSH_ALLOW_HOSTS ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const bad = allowHosts.find((h) => canonicalHost(h) === null);
  if (bad !== undefined) {
    throw new AuthConfigError(`HARNESS_A2A_PUSH_ALLOW_HOSTS: ${JSON.stringify(bad)} is not a host name or address`);
  }
  return { enabled: switched === 'on', allowHosts };
}
