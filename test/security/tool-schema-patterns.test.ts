/**
 * MCP servers write the JSON Schemas that tool-call arguments are checked against, inside the worker.
 * A backtracking `pattern` must not let one short argument hold the worker's event loop: patterns run on
 * RE2, and a pattern RE2 cannot express makes the schema unenforceable: every call against it is refused
 * with the reason (never compiled by the backtracking engine, never passed to the server unchecked).
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { resolveCalls, toolOffers } from '../../activities/agent-step.js';
import { re2RegExp, ToolArgumentValidator } from '../../capabilities/tool-arguments.js';
import type { PendingCall } from '../../contract/state.js';
import { nextAction } from '../../workflows/agent/tool-calls.js';

const EVIL = 'a'.repeat(39) + '!';
const nested = (pattern: string) => ({
  type: 'object',
  properties: { name: { type: 'string', pattern } },
  required: ['name'],
});

describe('tool schema patterns', () => {
  it('refuse a backreference that plain ajv would compile, and say why', () => {
    const schema = nested('^(a)\\1$');
    // The backtracking engine accepts it: this is what the guard replaces.
    expect(() => new Ajv({ strict: false }).compile(schema)).not.toThrow();
    expect(() => new Ajv({ strict: false, code: { regExp: re2RegExp } }).compile(schema)).toThrow(
      /pattern "\^\(a\)\\\\1\$" is not supported by the linear-time \(RE2\) matcher/,
    );

    const validator = new ToolArgumentValidator();
    expect(validator.schemaProblem(schema)).toMatch(/^the input schema could not be compiled: pattern .*\\\\1/);
    // Not enforceable, so refused: before, such a call reached the MCP server unchecked.
    expect(validator.check(schema, JSON.stringify({ name: 'ab' }))).toMatch(
      /^the tool's input schema cannot be enforced, so the call was refused \(the input schema could not be compiled: pattern .*RE2/,
    );
    expect(validator.check(schema, '[]')).toBe('arguments must be a JSON object');
  });

  it('decide a catastrophic-backtracking pattern by RE2', () => {
    const validator = new ToolArgumentValidator();
    // Checked first, so that without the guard this test fails here instead of backtracking below.
    expect(validator.schemaProblem(nested('(a)\\1'))).toMatch(/RE2/);
    const schema = nested('^(a+)+$');
    // On JavaScript's engine this one call backtracks 2^39 times; RE2 answers in linear time.
    expect(validator.check(schema, JSON.stringify({ name: EVIL }))).toMatch(
      /arguments\/name must match pattern "\^\(a\+\)\+\$"/,
    );
    expect(validator.check(schema, JSON.stringify({ name: 'aaaa' }))).toBeNull();
    expect(validator.schemaProblem(schema)).toBeNull();
  });

  it('apply RE2 to patternProperties and to every dialect', () => {
    const validator = new ToolArgumentValidator();
    const keys = { type: 'object', patternProperties: { '^(x+)+$': { type: 'number' } } };
    expect(validator.check(keys, '{"xxx":"not a number"}')).toMatch(/arguments\/xxx must be number/);
    const draft2020 = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...nested('(?=a)a') };
    expect(validator.schemaProblem(draft2020)).toMatch(/not supported by the linear-time \(RE2\) matcher/);
  });

  it('keep ECMAScript spellings that RE2 also expresses', () => {
    const validator = new ToolArgumentValidator();
    const schema = nested('^(?<word>\\p{Lu}\\w*)\\u00e9$');
    expect(validator.schemaProblem(schema)).toBeNull();
    expect(validator.check(schema, JSON.stringify({ name: 'Café' }))).toBeNull();
    expect(validator.check(schema, JSON.stringify({ name: 'cafe' }))).toMatch(/must match pattern/);
  });
});

describe('a schema RE2 cannot compile', () => {
  it('refuses the call with a tool error the model sees, and never runs it', () => {
    const toolset = {
      kind: 'toolset' as const,
      id: 'mcp-files',
      name: 'files',
      description: 'Files.',
      tags: [],
      source: 'mcp:files',
      execution: 'mcp' as const,
      tools: [{ name: 'read', description: 'Read.', inputSchema: nested('^(a)\\1$'), requiresApproval: false }],
    };
    const tools = toolOffers(['mcp-files'], { toolset: (id) => (id === toolset.id ? toolset : undefined) });
    const [call] = resolveCalls(
      [{ callId: 'c1', name: 'read', arguments: JSON.stringify({ name: 'aa' }) }],
      tools,
      new ToolArgumentValidator(),
    );
    expect(call?.argumentError).toMatch(/input schema cannot be enforced, so the call was refused/);
    const pending: PendingCall = {
      ...call!,
      state: 'new',
      requestedAt: null,
      output: null,
      result: null,
      approval: null,
      originalArguments: null,
      editedBy: null,
    };
    // Before, the arguments passed unchecked and the next action was to run the call on the MCP server.
    expect(nextAction(pending)).toEqual({
      kind: 'finish',
      status: 'error',
      output: expect.stringMatching(/^invalid arguments for read: the tool's input schema cannot be enforced/),
    });
  });
});
