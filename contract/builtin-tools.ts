/**
 * The built-in tools offered to every agent turn, run by the Session itself (never by an MCP server),
 * and the arguments of the one the workflow runs. The zod schema is the declaration: the JSON Schema
 * the model is offered is derived from it, and the workflow parses the call's arguments with it.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import { ResourceRef } from './messages.js';

/** Built-in tools: offered to every agent turn, run by the Session itself (never by an MCP server). */
export const BUILTIN_TOOLS = ['session_create_sub', 'memory_save'] as const;

/** `session_create_sub` arguments: the request handed over verbatim. */
export const CreateSubArgs = z
  .object({
    text: z.string().min(1).describe('The request, verbatim.'),
    resources: z.array(ResourceRef).default([]).describe('Resource references that came with the request.'),
  })
  .strict();
export type CreateSubArgs = z.infer<typeof CreateSubArgs>;

/** A tool's MCP-style `inputSchema`, derived from its zod schema (what a caller may send). */
export function toolInputSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(schema, { io: 'input' });
  return inputSchema;
}
