/**
 * The built-in tools every agent turn is offered, declared like MCP tools. `session_create_sub` is run
 * by the Session workflow (through createSubSession); `memory_save` by the runTool activity.
 */
import { z } from 'zod';
import { BUILTIN_TOOLS } from '../contract/transcript.js';
import type { ToolDeclaration } from './catalog.js';
import { MAX_MEMORY_TEXT } from './memory-store.js';

export type BuiltinTool = (typeof BUILTIN_TOOLS)[number];

export function isBuiltinTool(name: string): name is BuiltinTool {
  return (BUILTIN_TOOLS as readonly string[]).includes(name);
}

/** `memory_save` arguments; `scope` defaults to the Session. */
export const MemorySaveArgs = z.object({
  text: z.string().trim().min(1).max(MAX_MEMORY_TEXT),
  scope: z.enum(['session', 'user']).default('session'),
});

/** `session_create_sub` arguments: the request handed over verbatim. */
export const CreateSubArgs = z.object({
  text: z.string().min(1),
  resources: z
    .array(z.object({ uri: z.string().min(1), title: z.string().optional(), mimeType: z.string().optional() }))
    .default([]),
});

export const BUILTIN_DECLARATIONS: Record<BuiltinTool, ToolDeclaration> = {
  session_create_sub: {
    name: 'session_create_sub',
    description:
      'Hand a request that belongs to a different task to a new sub-session, which prepares its own goals and tools. ' +
      'Pass the request text and its resource references verbatim; you get the new session id back.',
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1, description: 'The request, verbatim.' },
        resources: {
          type: 'array',
          description: 'Resource references that came with the request.',
          items: {
            type: 'object',
            properties: {
              uri: { type: 'string', minLength: 1 },
              title: { type: 'string' },
              mimeType: { type: 'string' },
            },
            required: ['uri'],
            additionalProperties: false,
          },
        },
      },
      required: ['text'],
      additionalProperties: false,
    },
    requiresApproval: false,
  },
  memory_save: {
    name: 'memory_save',
    description:
      'Remember a fact for later: scope "session" (default) for this session, "user" for every session of this user.',
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1, maxLength: MAX_MEMORY_TEXT, description: 'What to remember.' },
        scope: { type: 'string', enum: ['session', 'user'], default: 'session' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    requiresApproval: false,
  },
};
