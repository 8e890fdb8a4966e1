/**
 * The built-in tools every agent turn is offered, declared like MCP tools from their zod schemas. `session_create_sub` is run
 * by the Session workflow (through createSubSession); `memory_save` by the runTool activity.
 */
import { z } from 'zod';
import { BUILTIN_TOOLS, CreateSubArgs, toolInputSchema } from '../contract/builtin-tools.js';
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
    inputSchema: toolInputSchema(CreateSubArgs),
    requiresApproval: false,
  },
  memory_save: {
    name: 'memory_save',
    description:
      'Remember a fact for later: scope "session" (default) for this session, "user" for every session of this user (the user approves a "user" save first).',
    inputSchema: toolInputSchema(MemorySaveArgs),
    requiresApproval: false,
  },
};
