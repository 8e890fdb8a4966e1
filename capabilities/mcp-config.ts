/**
 * The MCP config file: the common `mcpServers` shape naming stdio and streamable-HTTP servers, parsed
 * and checked entry by entry. A bad entry is reported and skipped, so one typo does not take every
 * other server down; `${VAR}` references are expanded here, so secrets stay out of the file.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import type { CatalogProblem } from './catalog-files.js';

const text = () => z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') });
const stringMap = () => z.record(z.string(), text(), { error: 'must be an object of string values' });
const Tags = z
  .union([z.string(), z.array(z.string())], { error: 'must be a comma-separated string or a list of strings' })
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((t) => t.trim()).filter(Boolean));

/** Keys every server entry may carry besides how to reach it. Unknown keys (other clients') are ignored. */
const CommonFields = {
  /** Every tool of this server needs the user's approval. */
  requiresApproval: z.boolean({ error: 'must be true or false' }).default(false),
  /** These tools need the user's approval. */
  approvalRequired: z.array(text(), { error: 'must be a list of tool names' }).default([]),
  /** Risk tags every tool of this server carries, for the worker's approval policy. */
  riskTags: Tags.default([]),
  /** Risk tags of single tools, by tool name, besides the server's. */
  toolRiskTags: z.record(z.string(), Tags, { error: 'must be an object of tool names to tags' }).default({}),
  /** The toolset's name, description and tags in the catalog; by default from the server itself. */
  title: text().trim().min(1, 'must not be empty').optional(),
  description: text().trim().min(1, 'must not be empty').optional(),
  tags: Tags.default([]),
  /** Bound on starting (or reaching) the server and listing its tools. */
  timeoutMs: z
    .number({ error: 'must be a number' })
    .int('must be a whole number of milliseconds')
    .min(100, 'must be at least 100')
    .max(300_000, 'must be at most 300000')
    .optional(),
  /** Bound on one tool call; `timeoutMs` when absent (starting a server can be quicker than its work). */
  toolTimeoutMs: z
    .number({ error: 'must be a number' })
    .int('must be a whole number of milliseconds')
    .min(100, 'must be at least 100')
    .max(3_600_000, 'must be at most 3600000')
    .optional(),
  disabled: z.boolean({ error: 'must be true or false' }).default(false),
};

export const McpStdioServer = z.object({
  type: z.literal('stdio', { error: 'must be "stdio" for a server with a command' }).optional(),
  command: text().trim().min(1, 'must not be empty'),
  args: z.array(text(), { error: 'must be a list of strings' }).default([]),
  env: stringMap().default({}),
  /** Relative to the config file's folder. */
  cwd: text().optional(),
  ...CommonFields,
});
export type McpStdioServer = z.infer<typeof McpStdioServer>;

export const McpHttpServer = z.object({
  type: z
    .enum(['http', 'streamable-http', 'streamableHttp'], { error: 'must be "http" for a server with a url' })
    .optional(),
  /** Checked as a URL after `${VAR}` references are expanded. */
  url: text().trim().min(1, 'must not be empty'),
  headers: stringMap().default({}),
  ...CommonFields,
});
export type McpHttpServer = z.infer<typeof McpHttpServer>;

export type McpServerConfig = McpStdioServer | McpHttpServer;

export interface McpServerDefinition {
  /** The key under `mcpServers`. */
  name: string;
  /** `mcp-<name>`, normalised to the catalog id rules. */
  id: string;
  config: McpServerConfig;
}

export interface ParsedMcpConfig {
  servers: McpServerDefinition[];
  problems: CatalogProblem[];
}

/** `mcp-<name>` under the catalog id rules: lowercase words joined by single hyphens, at most 64 characters. */
export function mcpToolsetId(name: string): string {
  const words = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  // A name with no ASCII letters or digits still needs a stable, distinct id.
  const base = words === '' ? createHash('sha256').update(name).digest('hex').slice(0, 12) : words;
  return `mcp-${base}`.slice(0, 64).replace(/-+$/, '');
}

const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${VAR}` and `${VAR:-default}` in command, args, env, cwd, url and headers with values from
 * `env`, so secrets (API tokens in headers) stay out of the file. Names each field that refers to an unset
 * variable without a default.
 */
function expandEnv(config: McpServerConfig, env: NodeJS.ProcessEnv, field: string): string[] {
  const missing: string[] = [];
  const expand = (value: string, where: string) =>
    value.replace(ENV_REFERENCE, (whole, name: string, fallback: string | undefined) => {
      const found = env[name] ?? fallback;
      if (found === undefined) missing.push(`${field}.${where}: refers to \${${name}}, which is not set`);
      return found ?? whole;
    });
  const expandMap = (map: Record<string, string>, where: string) => {
    for (const key of Object.keys(map)) map[key] = expand(map[key] ?? '', `${where}.${key}`);
  };
  if ('command' in config) {
    config.command = expand(config.command, 'command');
    config.args = config.args.map((arg, i) => expand(arg, `args.${i}`));
    expandMap(config.env, 'env');
    if (config.cwd !== undefined) config.cwd = expand(config.cwd, 'cwd');
  } else {
    config.url = expand(config.url, 'url');
    expandMap(config.headers, 'headers');
  }
  return missing;
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Parses a config object. Each bad server entry is reported (`file`, field path and reason) and
 * skipped; the others are kept. `baseDir` resolves relative `cwd` values.
 */
export function parseMcpConfig(
  raw: unknown,
  file: string,
  options: { baseDir?: string; env?: NodeJS.ProcessEnv } = {},
): ParsedMcpConfig {
  const servers: McpServerDefinition[] = [];
  const problems: CatalogProblem[] = [];
  const problem = (message: string) => problems.push({ file, message });
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problem('must be a JSON object with an "mcpServers" object');
    return { servers, problems };
  }
  const entries = (raw as { mcpServers?: unknown }).mcpServers;
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) {
    problem(`mcpServers: ${entries === undefined ? 'is required' : 'must be an object of named servers'}`);
    return { servers, problems };
  }
  const byId = new Map<string, string>();
  for (const [name, entry] of Object.entries(entries as Record<string, unknown>)) {
    const field = `mcpServers.${name}`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      problem(`${field}: must be an object`);
      continue;
    }
    const type = (entry as { type?: unknown }).type;
    if (type === 'sse') {
      problem(`${field}.type: "sse" (the deprecated HTTP+SSE transport) is not supported; use a streamable HTTP url`);
      continue;
    }
    const schema = 'command' in entry ? McpStdioServer : 'url' in entry ? McpHttpServer : undefined;
    if (!schema) {
      problem(`${field}: needs "command" (a stdio server) or "url" (a streamable HTTP server)`);
      continue;
    }
    const parsed = schema.safeParse(entry);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problem(`${[field, ...issue.path.map(String)].join('.')}: ${issue.message}`);
      continue;
    }
    const config = parsed.data;
    if (config.disabled) continue;
    const missing = expandEnv(config, options.env ?? process.env, field);
    if (missing.length > 0) {
      for (const message of missing) problem(message);
      continue;
    }
    if ('url' in config && !isHttpUrl(config.url)) {
      problem(`${field}.url: must be an http:// or https:// URL`);
      continue;
    }
    if ('command' in config && config.cwd !== undefined) config.cwd = resolve(options.baseDir ?? '.', config.cwd);
    const id = mcpToolsetId(name);
    const taken = byId.get(id);
    if (taken !== undefined) {
      problem(`${field}: its toolset id "${id}" is already used by mcpServers.${taken}; rename one of them`);
      continue;
    }
    byId.set(id, name);
    servers.push({ name, id, config });
  }
  return { servers, problems };
}

/** Reads and parses a config file; an unreadable or non-JSON file is one problem and no servers. */
export function loadMcpConfigFile(path: string, options: { env?: NodeJS.ProcessEnv } = {}): ParsedMcpConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8').replace(/^\uFEFF/, ''));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const message = code ? `cannot be read: ${code}` : `not valid JSON: ${(err as Error).message}`;
    return { servers: [], problems: [{ file: path, message }] };
  }
  return parseMcpConfig(raw, path, { baseDir: dirname(resolve(path)), ...options });
}
