/**
 * Registers the Session's search attributes on a namespace if they are missing. `start-dev`
 * registers its `--search-attribute` flags only when it first creates the namespace, so later
 * starts (and any real cluster) go through the operator API instead.
 */
import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';

const { temporal } = proto;
import { SEARCH_ATTRIBUTES } from '../contract/search-attributes.js';

const INDEXED_TYPE = {
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Text: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
} as const;

/** Adds missing search attributes; returns the names it added. */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !known.has(name));
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, INDEXED_TYPE[type]])),
  });
  return missing.map(([name]) => name);
}

/** `--search-attribute` flags for `temporal server start-dev`. */
export function devServerSearchAttributeFlags(): string[] {
  return Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]);
}
