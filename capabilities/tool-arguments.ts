/**
 * Tool-call arguments against a tool's JSON Schema (its MCP `inputSchema`). Ajv is the validator the
 * MCP SDK itself uses for tool output, so the same dialects and formats are understood on both sides;
 * the dialect follows the schema's `$schema` (draft-07 unless it names 2019-09 or 2020-12).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

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

function options() {
  // Schemas come from any MCP server: tolerate keywords ajv does not know, and do not refuse a schema
  // because it fails its own meta-schema; a schema that cannot be compiled at all is not enforced.
  return { strict: false, validateSchema: false, allErrors: true } as const;
}

/** Compiles each distinct schema once and keeps the most recent ones. */
export class ToolArgumentValidator {
  private readonly draft7 = new Ajv(options());
  private readonly draft2019 = new Ajv2019(options());
  private readonly draft2020 = new Ajv2020(options());
  private readonly compiled = new Map<string, ValidateFunction | null>();

  constructor() {
    for (const ajv of [this.draft7, this.draft2019, this.draft2020]) addFormats(ajv);
  }

  /** Why `text` is not a valid argument object for `schema`, or null when it is. */
  check(schema: Record<string, unknown>, text: string): string | null {
    const parsed = parseToolArguments(text);
    if ('error' in parsed) return parsed.error;
    const validate = this.validator(schema);
    if (!validate || validate(parsed.value)) return null;
    const ajv = this.dialect(schema);
    return ajv.errorsText(validate.errors, { dataVar: 'arguments' }).slice(0, MAX_MESSAGE);
  }

  private validator(schema: Record<string, unknown>): ValidateFunction | null {
    const key = JSON.stringify(schema);
    const cached = this.compiled.get(key);
    if (cached !== undefined) {
      this.compiled.delete(key);
      this.compiled.set(key, cached);
      return cached;
    }
    let validate: ValidateFunction | null;
    try {
      // Without its `$id`, two servers' schemas with one id cannot collide in ajv's registry.
      const { $id: _id, ...anonymous } = schema;
      validate = this.dialect(schema).compile(anonymous);
    } catch {
      validate = null;
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
