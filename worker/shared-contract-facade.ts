/**
 * What the shared contract module (worker/shared-contract.ts) hands the workflow sandbox in place of
 * a contract module's exports: the same values, with every zod schema replaced by a frozen facade
 * that parses with it.
 *
 * The reusable V8 context deep-freezes what a preloaded module exports, and zod defines properties
 * lazily on its schemas ("Cannot define property …, object is not extensible"). A facade is two
 * functions that close over the schema: freezing them leaves the schema, which only those closures
 * reach, as zod needs it. Zod's parse state is its own lazily memoized, deterministic caches; nothing
 * of a workflow is kept in it, so one schema serves every workflow of the worker thread.
 */
import { z } from 'zod';

/** The part of a zod schema that workflow code may use: parsing. */
export interface SchemaFacade {
  parse(data: unknown): unknown;
  safeParse(data: unknown): unknown;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * A module's exports, or any value inside them, with zod schemas replaced by facades (the same
 * facade for the same schema). Functions, primitives and other objects pass as they are.
 */
export function shareable(value: unknown, facades = new Map<z.ZodType, SchemaFacade>()): unknown {
  if (value instanceof z.ZodType) {
    const schema = value;
    let facade = facades.get(schema);
    if (!facade) {
      facade = Object.freeze({
        parse: (data: unknown) => schema.parse(data),
        safeParse: (data: unknown) => schema.safeParse(data),
      });
      facades.set(schema, facade);
    }
    return facade;
  }
  if (Array.isArray(value)) return value.map((item) => shareable(item, facades));
  // A module namespace object has a null prototype; its members are copied like a plain object's.
  if (isPlainObject(value) || Object.prototype.toString.call(value) === '[object Module]') {
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value as object)) {
      copy[key] = shareable((value as Record<string, unknown>)[key], facades);
    }
    return copy;
  }
  return value;
}
