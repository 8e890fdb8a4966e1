/**
 * The built-in tools every agent turn is offered, declared like MCP tools from their zod schemas. `session_create_sub` is run
 * by the Session workflow (through createSubSession); `memory_save` by the runTool activity; the
 * `capabilities_*` tools by the Session workflow (a search through the searchCapabilities activity).
 */
import { z } from 'zod';
import {
  BUILTIN_TOOLS,
  CapabilitiesSearchArgs,
  CapabilityChangeArgs,
  CreateSubArgs,
  ProposeGoalChangeArgs,
  toolInputSchema,
} from '../contract/builtin-tools.js';
import type { ToolDeclaration } from './catalog.js';
import { MAX_MEMORY_TEXT } from './memory-store.js';

export type BuiltinTool = (typeof BUILTIN_TOOLS)[number];

export function isBuiltinTool(name: string): name is BuiltinTool {
  return (BUILTIN_TOOLS as readonly string[]).includes(name);
}

/** `memory_save` arguments; `scope` defaults to the Session. */
export const MemorySaveArgs = z
  .object({
    text: z.string().trim().min(1).max(MAX_MEMORY_TEXT).describe('What to remember.'),
    scope: z.enum(['session', 'user']).default('session'),
  })
  .strict();

export const BUILTIN_DECLARATIONS: Record<BuiltinTool, ToolDeclaration> = {
  session_create_sub: {
    name: 'session_create_sub',
    description:
      'Hand a request that belongs to a different task to a new sub-session, which prepares its own goals and tools. ' +
      'Pass the request text and its resource references verbatim; you get the new session id back.',
    inputSchema: toolInputSchema(CreateSubArgs.omit({ agent: true })),
    requiresApproval: false,
  },
  memory_save: {
    name: 'memory_save',
    description:
      'Remember a fact for later: scope "session" (default) for this session, "user" for every session of this user (the user approves a "user" save first).',
    inputSchema: toolInputSchema(MemorySaveArgs),
    requiresApproval: false,
  },
  capabilities_search: {
    name: 'capabilities_search',
    description:
      'Search the capability catalog (Skills, toolsets with their tools, and memories) when the loaded tools cannot do the next step. ' +
      'Returns what fits, each with its kind, id and whether it is loaded; load one with capabilities_load.',
    inputSchema: toolInputSchema(CapabilitiesSearchArgs),
    requiresApproval: false,
  },
  capabilities_load: {
    name: 'capabilities_load',
    description:
      'Load a Skill, toolset or memory that capabilities_search found in this turn. Its instructions or tools are in your next step. ' +
      'Loads and unloads are limited per turn.',
    inputSchema: toolInputSchema(CapabilityChangeArgs),
    requiresApproval: false,
  },
  capabilities_unload: {
    name: 'capabilities_unload',
    description: 'Unload a loaded Skill, toolset or memory that the task no longer needs.',
    inputSchema: toolInputSchema(CapabilityChangeArgs),
    requiresApproval: false,
  },
  propose_goal_change: {
    name: 'propose_goal_change',
    description:
      "Change this session's goal when the user has confirmed that the session's responsibility itself changes " +
      '(after you asked them about a conflicting or unclear request). Quote their confirming words. ' +
      'A person approves the change before it is committed; do not use it for details of the current work.',
    inputSchema: toolInputSchema(ProposeGoalChangeArgs),
    requiresApproval: true,
  },
};

/**
 * `session_create_sub` as offered: without remote agents, its declaration above (no `agent`); with
 * them, an `agent` argument that must name one, and the description listing each.
 */
export function createSubDeclaration(remote: ReadonlyArray<{ name: string; description?: string }>): ToolDeclaration {
  const base = BUILTIN_DECLARATIONS.session_create_sub;
  const [first, ...rest] = remote.map((a) => a.name);
  if (first === undefined) return base;
  const listed = remote.map((a) => `${a.name}${a.description ? ` (${a.description})` : ''}`).join('; ');
  return {
    ...base,
    description:
      `${base.description} Or pass agent to send the request to a remote A2A agent instead; its answer is the result of this call. ` +
      `Remote agents: ${listed}.`,
    inputSchema: toolInputSchema(
      CreateSubArgs.extend({
        agent: z
          .enum([first, ...rest])
          .optional()
          .describe('A remote A2A agent to send the request to (its answer is the result of this call).'),
      }),
    ),
  };
}
