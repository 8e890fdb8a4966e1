/**
 * The worker's approval policy: ordered rules that decide, for each tool call the agent model makes,
 * whether it runs (`allow`), waits for a person (`approve`) or is refused (`deny`). A rule matches on
 * the tool (name and toolset, globs), its arguments (path prefixes, URL hosts, command names), the
 * Session kind and the tool's risk tags; every condition a rule names must hold. When several rules
 * match, deny beats approve and approve beats allow; among rules of the winning effect the first in
 * the file is the one recorded. When none matches, the toolset's own `requiresApproval` decides.
 *
 * Argument conditions read what the model wrote, so they are a tripwire, not a sandbox: a tool that
 * takes a path it does not show as an argument, or follows links, still needs its own checks.
 */
import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { RE2JS } from 're2js';
import { z } from 'zod';
import { SessionKind } from '../contract/activity-contract.js';
import { PolicyEffect, type PolicyDecision } from '../contract/transcript.js';
import { parseToolArguments } from './tool-arguments.js';

const text = () => z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') });
/** One string or a list of them, none empty. */
const Strings = z
  .union([text(), z.array(text(), { error: 'must be a string or a list of strings' })], {
    error: 'must be a string or a list of strings',
  })
  .transform((v) => (Array.isArray(v) ? v : [v]).map((s) => s.trim()))
  .refine((v) => v.length > 0, 'must not be empty')
  .refine((v) => v.every((s) => s.length > 0 && s.length <= 512), 'each entry must be 1-512 characters');

export const PolicyRule = z
  .object({
    /** Named in the call's record and in a denied call's error; `rule-<n>` (1-based) when absent. */
    id: text()
      .trim()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 letters, digits, _ . : or -')
      .optional(),
    effect: z.enum(PolicyEffect.options, { error: 'must be "allow", "approve" or "deny"' }),
    /** Why: shown to the model when the rule denies a call, and kept in the record. */
    reason: text().trim().min(1, 'must not be empty').max(500, 'must be at most 500 characters').optional(),
    /** Tool names (globs: `*`, `?`), as the toolset or MCP server declares them. */
    tool: Strings.optional(),
    /** Toolset ids (globs); `builtin` names the built-ins (`session_create_sub`, `memory_save`). */
    toolset: Strings.optional(),
    sessionKind: z.enum(SessionKind.options, { error: 'must be "top-level" or "sub-session"' }).optional(),
    /** Matches a tool that carries any of these risk tags (toolset file or MCP config `riskTags`). */
    riskTags: Strings.optional(),
    /**
     * Which arguments the path, host and command conditions read (top-level names or dotted paths).
     * Absent: every string that looks like a path (`pathPrefix`, `pathOutside`), every URL in any
     * string (`host`), and the `command`, `cmd`, `program`, `executable` and `shell` arguments (`command`).
     */
    arguments: Strings.optional(),
    /** Matches when any path argument lies under one of these prefixes (after normalising `.` and `..`). */
    pathPrefix: Strings.optional(),
    /** Matches when any path argument lies outside every one of these prefixes. */
    pathOutside: Strings.optional(),
    /** Matches when any URL argument's host matches one of these globs (`*.example.com`; case-insensitive). */
    host: Strings.optional(),
    /** Matches when any command in a command argument is one of these names (globs; `rm`, `git`). */
    command: Strings.optional(),
  })
  .strict();
export type PolicyRule = z.infer<typeof PolicyRule>;

export const ToolPolicyFile = z
  .object({
    $schema: z.string().optional(),
    rules: z
      .array(PolicyRule, { error: (issue) => (issue.input === undefined ? 'is required' : 'must be a list of rules') })
      .max(1000, 'must hold at most 1000 rules'),
  })
  .strict()
  .superRefine((file, ctx) => {
    const seen = new Map<string, number>();
    file.rules.forEach((rule, index) => {
      if (rule.id === undefined) return;
      const first = seen.get(rule.id);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['rules', index, 'id'],
          message: `"${rule.id}" is already the id of rules.${first}`,
        });
      }
      seen.set(rule.id, index);
    });
  });
export type ToolPolicyFile = z.infer<typeof ToolPolicyFile>;

/** A policy file that cannot be used; the message names the file and each bad field. */
export class ToolPolicyError extends Error {
  override name = 'ToolPolicyError';
}

/** One tool call as the policy sees it. */
export interface PolicyCall {
  tool: string;
  /** null for the built-ins. */
  toolset: string | null;
  /** The model's raw JSON arguments. */
  arguments: string;
  riskTags: readonly string[];
  /** null when the workflow did not say (it predates policies): rules naming a kind do not match. */
  sessionKind: SessionKind | null;
}

const STRENGTH: Record<PolicyEffect, number> = { allow: 0, approve: 1, deny: 2 };
const COMMAND_ARGUMENTS = ['command', 'cmd', 'program', 'executable', 'shell'];
/** Bounds on what one call's arguments can make the policy look at. */
const MAX_DEPTH = 8;
const MAX_STRINGS = 512;

interface CompiledRule {
  rule: PolicyRule;
  index: number;
  id: string;
  tool?: Glob;
  toolset?: Glob;
  riskTags?: Set<string>;
  host?: Glob;
  command?: Glob;
  pathPrefix?: string[];
  pathOutside?: string[];
}

/** Ordered allow/approve/deny rules, compiled once; {@link decide} is called for every resolved call. */
export class ToolPolicy {
  private readonly rules: CompiledRule[];

  constructor(file: ToolPolicyFile) {
    this.rules = file.rules.map((rule, index) => ({
      rule,
      index,
      id: rule.id ?? `rule-${index + 1}`,
      ...(rule.tool ? { tool: new Glob(rule.tool, false) } : {}),
      ...(rule.toolset ? { toolset: new Glob(rule.toolset, false) } : {}),
      ...(rule.riskTags ? { riskTags: new Set(rule.riskTags) } : {}),
      ...(rule.host ? { host: new Glob(rule.host.map(normaliseHost), true) } : {}),
      ...(rule.command ? { command: new Glob(rule.command, false) } : {}),
      ...(rule.pathPrefix ? { pathPrefix: rule.pathPrefix.map((p) => normalisePath(p).path) } : {}),
      ...(rule.pathOutside ? { pathOutside: rule.pathOutside.map((p) => normalisePath(p).path) } : {}),
    }));
  }

  /** Parses a policy object; throws ToolPolicyError naming `file` and each bad field. */
  static parse(raw: unknown, file: string): ToolPolicy {
    const parsed = ToolPolicyFile.safeParse(raw);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(file)'}: ${i.message}`);
      throw new ToolPolicyError(`${file}: invalid tool policy:\n  ${problems.join('\n  ')}`);
    }
    return new ToolPolicy(parsed.data);
  }

  /** Reads and parses a JSON policy file; throws ToolPolicyError when it cannot be read or used. */
  static load(path: string): ToolPolicy {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, 'utf8').replace(/^\uFEFF/, ''));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new ToolPolicyError(
        `${path}: ${code ? `cannot be read: ${code}` : `not valid JSON: ${(err as Error).message}`}`,
      );
    }
    return ToolPolicy.parse(raw, path);
  }

  get size(): number {
    return this.rules.length;
  }

  /** The decision for `call`, or null when no rule matches (the toolset's own flag then decides). */
  decide(call: PolicyCall): PolicyDecision | null {
    let best: CompiledRule | undefined;
    let args: ArgumentView | undefined;
    for (const compiled of this.rules) {
      if (best && STRENGTH[compiled.rule.effect] <= STRENGTH[best.rule.effect]) continue;
      args ??= new ArgumentView(call.arguments);
      if (matches(compiled, call, args)) best = compiled;
    }
    if (!best) return null;
    return { effect: best.rule.effect, rule: best.id, index: best.index, reason: best.rule.reason ?? null };
  }
}

function matches(compiled: CompiledRule, call: PolicyCall, args: ArgumentView): boolean {
  const { rule } = compiled;
  if (compiled.tool && !compiled.tool.test(call.tool)) return false;
  if (compiled.toolset && !compiled.toolset.test(call.toolset ?? 'builtin')) return false;
  if (rule.sessionKind !== undefined && rule.sessionKind !== call.sessionKind) return false;
  if (compiled.riskTags && !call.riskTags.some((t) => compiled.riskTags?.has(t))) return false;
  const named = rule.arguments;
  const readsArguments = Boolean(compiled.pathPrefix || compiled.pathOutside || compiled.host || compiled.command);
  // Arguments too large or deep to read in full cannot prove a deny or approve rule does not apply.
  if (readsArguments && rule.effect !== 'allow' && args.exceedsBounds()) return true;
  if (compiled.pathPrefix || compiled.pathOutside) {
    const paths = args.paths(named);
    // A relative path that climbs above its start with `..` cannot be placed: it may be anywhere, so
    // it counts as inside a deny or approve rule's prefixes and inside none of an allow rule's.
    const under = (p: NormalisedPath, prefixes: string[]) =>
      p.escapes ? rule.effect !== 'allow' : prefixes.some((prefix) => isUnder(p.path, prefix));
    if (compiled.pathPrefix && !paths.some((p) => under(p, compiled.pathPrefix ?? []))) return false;
    if (compiled.pathOutside && !paths.some((p) => p.escapes || !under(p, compiled.pathOutside ?? []))) return false;
  }
  if (compiled.host && !args.hosts(named).some((h) => compiled.host?.test(h))) return false;
  if (compiled.command && !args.commands(named).some((c) => compiled.command?.test(c))) return false;
  return true;
}

/** Shell-style globs (`*` any run, `?` one character) matched by RE2, so no pattern can backtrack. */
class Glob {
  private readonly patterns: RE2JS[];
  constructor(globs: string[], caseInsensitive: boolean) {
    const flags = caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0;
    this.patterns = globs.map((glob) =>
      RE2JS.compile(
        glob
          .split(/([*?])/)
          .map((part) => (part === '*' ? '.*' : part === '?' ? '.' : part === '' ? '' : RE2JS.quote(part)))
          .join(''),
        flags | RE2JS.DOTALL,
      ),
    );
  }
  test(value: string): boolean {
    return this.patterns.some((p) => p.matches(value));
  }
}

interface NormalisedPath {
  path: string;
  /** A relative path whose `..` climbs above where it starts. */
  escapes: boolean;
}

/**
 * A path with `\` read as `/`, `file:` URLs as their path, `.` and `..` resolved and no trailing
 * slash. An absolute path cannot climb above `/`; a relative one that does is marked `escapes`.
 */
export function normalisePath(value: string): NormalisedPath {
  let raw = value.trim();
  if (/^file:/i.test(raw)) {
    try {
      raw = decodeURIComponent(new URL(raw).pathname);
    } catch {
      // Not a URL after all: judged as written.
    }
  }
  raw = raw.replace(/\\/g, '/');
  const normal = posix.normalize(raw === '' ? '.' : raw);
  const path = normal.length > 1 ? normal.replace(/\/+$/, '') : normal;
  return { path, escapes: path === '..' || path.startsWith('../') };
}

/** Whether `path` is `prefix` or inside it, by whole segments (`/etc` does not hold `/etcetera`). */
function isUnder(path: string, prefix: string): boolean {
  if (prefix === '/' || prefix === '.') return prefix === '/' ? path.startsWith('/') : !path.startsWith('/');
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** A host as compared: lowercase, no trailing dot. */
function normaliseHost(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}

function looksLikePath(value: string): boolean {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return /^file:/i.test(value);
  return /^(\/|~|\.)/.test(value) || /[\\/]/.test(value);
}

/** The hosts of the URLs in `value`: the whole string, or any whitespace-separated word with `://`. */
function urlHosts(value: string, bare: boolean): string[] {
  const words = value.includes(' ') || value.includes('\n') ? value.split(/\s+/) : [value];
  const hosts: string[] = [];
  for (const word of words) {
    const candidate = word.replace(/^[("'<[]+|[)"'>\],.;:!?]+$/g, '');
    if (candidate.includes('://')) {
      try {
        const { hostname } = new URL(candidate);
        if (hostname) hosts.push(normaliseHost(hostname));
      } catch {
        // Not a URL: no host.
      }
    } else if (bare && /^[A-Za-z0-9.-]+(:\d+)?$/.test(candidate)) {
      // A named host argument may be a bare host name (`example.com`, `db:5432`).
      hosts.push(normaliseHost(candidate.replace(/:\d+$/, '')));
    }
  }
  return hosts;
}

/**
 * The command names in a command line: the first word of each part separated by `;`, `&&`, `||`,
 * `|`, `&`, a newline or a command substitution, after `sudo`, `env` and `NAME=value` prefixes,
 * without its folder (`/bin/rm` is `rm`).
 */
export function commandNames(line: string): string[] {
  const names: string[] = [];
  for (const part of line.split(/;|&&|\|\||\||&|\n|\$\(|`/)) {
    const words = part.trim().split(/\s+/).filter(Boolean);
    let i = 0;
    while (i < words.length && (/^(sudo|env|exec|nohup|command)$/.test(words[i] ?? '') || /^\w+=/.test(words[i] ?? '')))
      i++;
    const word = words[i]?.replace(/^["'(]+|["')]+$/g, '');
    if (word) names.push(word.split(/[\\/]/).pop() ?? word);
  }
  return names;
}

/** The call's arguments, parsed once, read by each rule as it needs. */
class ArgumentView {
  private readonly value: Record<string, unknown>;
  private oversized: boolean | undefined;
  constructor(text: string) {
    const parsed = parseToolArguments(text);
    // Arguments that are not a JSON object are an argument error, finished before the call could run.
    this.value = 'value' in parsed ? parsed.value : {};
  }

  /** Whether the arguments hold more strings, or deeper ones, than the policy reads. */
  exceedsBounds(): boolean {
    this.oversized ??= strings(this.value, MAX_STRINGS + 1).length > MAX_STRINGS || depth(this.value) > MAX_DEPTH;
    return this.oversized;
  }

  paths(named: string[] | undefined): NormalisedPath[] {
    const values = named ? this.at(named) : strings(this.value).filter(looksLikePath);
    return values.map(normalisePath);
  }

  hosts(named: string[] | undefined): string[] {
    return (named ? this.at(named) : strings(this.value)).flatMap((v) => urlHosts(v, named !== undefined));
  }

  commands(named: string[] | undefined): string[] {
    const keys = named ?? COMMAND_ARGUMENTS;
    const names: string[] = [];
    for (const key of keys) {
      const value = lookup(this.value, key);
      // An argv list names its command first; a string is a command line.
      if (Array.isArray(value) && typeof value[0] === 'string') names.push(...commandNames(value[0]));
      else names.push(...strings(value).flatMap(commandNames));
    }
    return names;
  }

  private at(named: string[]): string[] {
    return named.flatMap((key) => strings(lookup(this.value, key)));
  }
}

function lookup(value: unknown, dotted: string): unknown {
  let at: unknown = value;
  for (const key of dotted.split('.')) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** How deeply `value` nests, counted up to one past the bound. */
function depth(value: unknown, at = 0): number {
  if (at > MAX_DEPTH || typeof value !== 'object' || value === null) return at;
  let deepest = at;
  for (const item of Object.values(value)) deepest = Math.max(deepest, depth(item, at + 1));
  return deepest;
}

/** Every string in `value` (nested objects and lists too), within the depth and count bounds. */
function strings(value: unknown, limit = MAX_STRINGS): string[] {
  const found: string[] = [];
  const visit = (v: unknown, depth: number) => {
    if (found.length >= limit || depth > MAX_DEPTH) return;
    if (typeof v === 'string') found.push(v);
    else if (Array.isArray(v)) for (const item of v) visit(item, depth + 1);
    else if (typeof v === 'object' && v !== null) for (const item of Object.values(v)) visit(item, depth + 1);
  };
  visit(value, 0);
  return found;
}
