/**
 * Turns a zod-derived JSON Schema into one OpenAI's strict structured outputs accept: every object
 * closed (`additionalProperties: false`) and every property required, an optional property becoming
 * nullable instead. Our output parsers read null as absent.
 */
type Schema = Record<string, unknown>;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function acceptsNull(schema: unknown): boolean {
  if (!isSchema(schema)) return false;
  if (schema.type === 'null') return true;
  return Array.isArray(schema.anyOf) && schema.anyOf.some(acceptsNull);
}

export function strictJsonSchema(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    // `$schema` is metadata some strict-mode validators refuse; `properties` is rebuilt below.
    if (key === '$schema' || (key === 'properties' && isSchema(value))) continue;
    if (Array.isArray(value)) out[key] = (value as unknown[]).map((v) => (isSchema(v) ? strictJsonSchema(v) : v));
    else if (isSchema(value)) out[key] = strictJsonSchema(value);
    else out[key] = value;
  }
  if (schema.type === 'object' && isSchema(schema.properties)) {
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    const properties: Schema = {};
    for (const [name, property] of Object.entries(schema.properties)) {
      const strict = isSchema(property) ? strictJsonSchema(property) : property;
      properties[name] = required.has(name) || acceptsNull(strict) ? strict : { anyOf: [strict, { type: 'null' }] };
    }
    out.properties = properties;
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  return out;
}
