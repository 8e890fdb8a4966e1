/**
 * Tool-call arguments against a tool's JSON Schema (its MCP `inputSchema`). Ajv is the validator the
 * MCP SDK itself uses for tool output, so the same dialects and formats are understood on both sides;
 * the dialect follows the schema's `$schema` (draft-07 unless it names 2019-09 or 2020-12).
 *
 * Schemas come from MCP servers, which we do not trust: a `pattern` such as `^(a+)+$` would make the
 * JavaScript engine backtrack for minutes on one short argument and hold the worker's event loop. Patterns
 * therefore run on RE2 (re2js, linear time); a pattern RE2 cannot express (backreferences, lookarounds)
 * makes the schema uncompilable, with the reason kept for {@link ToolArgumentValidator.schemaProblem}.
 * A schema the worker cannot compile is a schema it cannot enforce, so every call against it is
 * refused with that reason rather than passed to the server unchecked.
 */
import { Ajv, type CodeOptions, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { RE2JS } from 're2js';

/** ajv-formats is CommonJS; under NodeNext its default import is the module object, callable at runtime. */
const addFormats = formats as unknown as (ajv: Ajv | Ajv2019 | Ajv2020) => void;

/** Arguments as the model sent them, parsed; an empty string means "no arguments" (some servers send it). */
export function parseToolArguments(text: string): { value: Record<string, unknown> } | { error: string } {
  if (text.trim() === '') return { value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `arguments are not valid JSON (${(err as Error).message})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { error: 'arguments must be a JSON object' };
  }
  return { value: value as Record<string, unknown> };
}

const MAX_CACHED = 256;
const MAX_MESSAGE = 600;

/**
 * Ajv's `code.regExp` engine backed by RE2: `pattern` and `patternProperties` match in time linear in
 * the input. Throws, naming the pattern, when RE2 cannot compile it. Ajv passes the flag `u` only; RE2
 * always matches by code point, which is what `u` asks for.
 */
export const re2RegExp: NonNullable<CodeOptions['regExp']> = Object.assign(
  (pattern: string, _flags: string) => {
    try {
      // translateRegExp maps ECMAScript-only spellings (`\u00e9`, `(?<name>`) to RE2's.
      return RE2JS.compile(RE2JS.translateRegExp(pattern));
    } catch (err) {
      throw new Error(
        `pattern ${JSON.stringify(pattern).slice(0, 200)} is not supported by the linear-time (RE2) matcher: ` +
          `${(err as Error).message} (backreferences and lookarounds are refused so no pattern can stall the worker)`,
      );
    }
  },
  // Only read by ajv's standalone code generation, which is not used here.
  { code: 're2RegExp' },
);

function options() {
  // Schemas come from any MCP server: tolerate keywords ajv does not know, and do not refuse a schema
  // because it fails its own meta-schema; a schema that cannot be compiled at all refuses its calls.
  return { strict: false, validateSchema: false, allErrors: true, code: { regExp: re2RegExp } } as const;
}

/** Compiles each distinct schema once and keeps the most recent ones. */
export class ToolArgumentValidator {
  private readonly draft7 = new Ajv(options());
  private readonly draft2019 = new Ajv2019(options());
  private readonly draft2020 = new Ajv2020(options());
  /** A compiled validator, or why the schema could not be compiled. */
  private readonly compiled = new Map<string, ValidateFunction | string>();

  constructor() {
    for (const ajv of [this.draft7, this.draft2019, this.draft2020]) addFormats(ajv);
  }

  /**
   * Why `text` is not a valid argument object for `schema`, or null when it is. A schema that cannot be
   * compiled (a `pattern` RE2 refuses, a keyword ajv cannot build) cannot be enforced, so no arguments
   * pass it: the call is refused with the reason instead of reaching the tool unchecked.
   */
  check(schema: Record<string, unknown>, text: string): string | null {
    const parsed = parseToolArguments(text);
    if ('error' in parsed) return parsed.error;
    const validate = this.validator(schema);
    if (typeof validate === 'string')
      return `the tool's input schema cannot be enforced, so the call was refused (${validate})`;
    if (validate(parsed.value)) return null;
    const ajv = this.dialect(schema);
    return ajv.errorsText(validate.errors, { dataVar: 'arguments' }).slice(0, MAX_MESSAGE);
  }

  /**
   * Why `schema` cannot be enforced (it could not be compiled, e.g. a `pattern` RE2 refuses), or null
   * when it can. Every call against such a schema is refused by {@link check}.
   */
  schemaProblem(schema: Record<string, unknown>): string | null {
    const validate = this.validator(schema);
    return typeof validate === 'string' ? validate : null;
  }

  private validator(schema: Record<string, unknown>): ValidateFunction | string {
    const key = JSON.stringify(schema);
    const cached = this.compiled.get(key);
    if (cached !== undefined) {
      this.compiled.delete(key);
      this.compiled.set(key, cached);
      return cached;
    }
    let validate: ValidateFunction | string;
    try {
      // Without its `$id`, two servers' schemas with one id cannot collide in ajv's registry.
      const { $id: _id, ...anonymous } = schema;
      validate = this.dialect(schema).compile(anonymous);
    } catch (err) {
      validate = `the input schema could not be compiled: ${(err as Error).message}`.slice(0, MAX_MESSAGE);
    }
    this.compiled.set(key, validate);
    if (this.compiled.size > MAX_CACHED) this.compiled.delete(this.compiled.keys().next().value as string);
    return validate;
  }

  private dialect(schema: Record<string, unknown>): Ajv | Ajv2019 | Ajv2020 {
    const uri = typeof schema.$schema === 'string' ? schema.$schema : '';
    if (uri.includes('2020-12')) return this.draft2020;
    if (uri.includes('2019-09')) return this.draft2019;
    return this.draft7;
  }
}
