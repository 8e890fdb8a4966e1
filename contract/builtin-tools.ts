/**
 * The built-in tools offered to every agent turn, run by the Session itself (never by an MCP server),
 * and the arguments of the one the workflow runs. The zod schema is the declaration: the JSON Schema
 * the model is offered is derived from it, and the workflow parses the call's arguments with it.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import { STATEMENT_CHARS } from './goals.js';
import { ResourceRef } from './messages.js';
import { DelegationMode } from './state.js';

/**
 * The built-ins with which the agent finds and changes its own capabilities mid-phase: a search over
 * the same recall the Session prepares a phase with, and loads and unloads applied as a capability diff.
 */
export const CAPABILITY_TOOLS = ['capabilities_search', 'capabilities_load', 'capabilities_unload'] as const;
export type CapabilityTool = (typeof CAPABILITY_TOOLS)[number];

/**
 * The built-in with which the agent proposes a new session goal once the user confirmed it. Offered
 * only in a `conflict` or `uncertain` turn and the turn after; it waits for approval by default.
 */
export const GOAL_TOOL = 'propose_goal_change';

/** Built-in tools: offered to agent turns, run by the Session itself (never by an MCP server). */
export const BUILTIN_TOOLS = ['session_create_sub', 'memory_save', ...CAPABILITY_TOOLS, GOAL_TOOL] as const;

export function isCapabilityTool(name: string): name is CapabilityTool {
  return (CAPABILITY_TOOLS as readonly string[]).includes(name);
}

/** `session_create_sub` arguments: the request handed over verbatim. */
export const CreateSubArgs = z
  .object({
    text: z.string().min(1).describe('The request, verbatim.'),
    resources: z.array(ResourceRef).default([]).describe('Resource references that came with the request.'),
    mode: DelegationMode.default('collaborate').describe(
      'collaborate (default): the sub-session answers back and you continue this request with its answer; notify: its answer is only recorded.',
    ),
    agent: z
      .string()
      .min(1)
      .optional()
      .describe('A configured remote A2A agent to send the request to; its answer is the result of this call.'),
  })
  .strict();
export type CreateSubArgs = z.infer<typeof CreateSubArgs>;

/** `capabilities_search` arguments: what the agent needs, in its own words. */
export const CapabilitiesSearchArgs = z
  .object({
    query: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .describe('What you need, in task terms: "weather forecast", "convert markdown to word".'),
  })
  .strict();
export type CapabilitiesSearchArgs = z.infer<typeof CapabilitiesSearchArgs>;

/** The kinds the agent loads and unloads, as `capabilities_search` names them. */
export const CapabilityKind = z.enum(['skill', 'toolset', 'memory']);
export type CapabilityKind = z.infer<typeof CapabilityKind>;

/** `capabilities_load` / `capabilities_unload` arguments: one capability by kind and id. */
export const CapabilityChangeArgs = z
  .object({
    kind: CapabilityKind.describe('The kind, as capabilities_search listed it.'),
    id: z.string().trim().min(1).max(200).describe('The id, as capabilities_search listed it (or as loaded).'),
  })
  .strict();
export type CapabilityChangeArgs = z.infer<typeof CapabilityChangeArgs>;

/** `propose_goal_change` arguments: the new session goal, and the user's words that confirmed it. */
export const ProposeGoalChangeArgs = z
  .object({
    goal: z
      .string()
      .trim()
      .min(1)
      .max(STATEMENT_CHARS)
      .describe('The new session goal: one imperative line stating the task the user confirmed.'),
    confirmation: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .describe("The user's confirming words, quoted exactly from their message."),
  })
  .strict();
export type ProposeGoalChangeArgs = z.infer<typeof ProposeGoalChangeArgs>;

/** A tool's MCP-style `inputSchema`, derived from its zod schema (what a caller may send). */
export function toolInputSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(schema, { io: 'input' });
  return inputSchema;
}
