/**
 * The worker's approval policy: ordered rules that decide, for each tool call the agent model makes,
 * whether it runs (`allow`), waits for a person (`approve`) or is refused (`deny`). A rule matches on
 * the tool (name and toolset, globs), its arguments (path prefixes, URL hosts, command names), the
 * Session kind and the tool's risk tags; every condition a rule names must hold. When several rules
 * match, deny beats approve and approve beats allow; among rules of the winning effect the first in
 * the file is the one recorded. When none matches, the toolset's own `requiresApproval` decides.
 *
 * Argument conditions read what the model wrote, so they are a tripwire, not a sandbox: a tool that
 * takes a path it does not show as an argument, or follows links, still needs its own checks. They
 * read conservatively: a deny or approve rule's condition holds when any value it reads matches (or
 * cannot be read: an unresolved command word, arguments past the bounds); an allow rule's holds only
 * when every value it reads matches. An allow rule does not lift a toolset's own `requiresApproval`
 * unless its `toolset` names that toolset outright (see {@link ToolPolicy.liftsApproval}).
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { posix } from 'node:path';
import ipaddr from 'ipaddr.js';
import { RE2JS } from 're2js';
import { z } from 'zod';
import { SessionKind } from '../contract/activity-contract.js';
import { PolicyEffect, type PolicyDecision } from '../contract/transcript.js';
import { canonicalHost, hostAddresses, normaliseHost, type HostAddress } from '../contract/url-hosts.js';
import { analyseArgv, analyseCommandLine, type CommandAnalysis } from './command-line.js';
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
    /** Toolset ids (globs); `builtin` names the built-ins (`session_create_sub`, `memory_save`, `capabilities_*`, `propose_goal_change`). */
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
    /**
     * Matches when any path argument lies under one of these prefixes (after normalising `.`, `..`,
     * `\\`, `file:` URLs and Windows drive paths). `~`, `~user`, `$HOME` and `${HOME}` mean any home
     * folder: `~/.ssh` holds `/home/alice/.ssh`, `/root/.ssh`, `/Users/bob/.ssh` and `C:\\Users\\bob\\.ssh`.
     * A relative prefix (`.env`, `secrets/prod`) names segments found anywhere in a path (`app/.env`);
     * one written `./…` stays relative to where the tool runs.
     */
    pathPrefix: Strings.optional(),
    /** Matches when any path argument lies outside every one of these prefixes. */
    pathOutside: Strings.optional(),
    /** Compare paths ignoring case (for tools that reach case-insensitive file systems: Windows, macOS). */
    ignoreCase: z.boolean({ error: 'must be true or false' }).optional(),
    /**
     * Matches when any URL argument's host matches one of these: name globs (`*.example.com`;
     * case-insensitive), IP addresses or CIDR ranges (`169.254.0.0/16`, `fd00::/8`). Addresses
     * compare as numbers, whichever way the URL writes them (`0xA9FEA9FE`, `2852039166`,
     * `[::ffff:169.254.169.254]`).
     */
    host: Strings.optional(),
    /**
     * Matches when any command a command argument runs is one of these names (globs; `rm`, `git`):
     * through shells' `-c`, `env`, `sudo`, `xargs`, `timeout` and other prefixes, quotes and escapes.
     */
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
  host?: HostMatcher;
  command?: Glob;
  pathPrefix?: PathPrefix[];
  pathOutside?: PathPrefix[];
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
      ...(rule.host ? { host: new HostMatcher(rule.host) } : {}),
      ...(rule.command ? { command: new Glob(rule.command, false) } : {}),
      ...(rule.pathPrefix ? { pathPrefix: rule.pathPrefix.map((p) => pathPrefix(p, rule.ignoreCase ?? false)) } : {}),
      ...(rule.pathOutside
        ? { pathOutside: rule.pathOutside.map((p) => pathPrefix(p, rule.ignoreCase ?? false)) }
        : {}),
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

  /**
   * Whether `decision` (an allow) may lift the approval the call's toolset requires: only when the
   * rule's `toolset` names that toolset outright (no glob), so `tool: read_*` cannot waive the
   * approval a toolset demands for its `read_and_delete`.
   */
  liftsApproval(decision: PolicyDecision, toolset: string | null): boolean {
    if (decision.effect !== 'allow') return false;
    const named = this.rules[decision.index]?.rule.toolset;
    return named !== undefined && named.includes(toolset ?? 'builtin');
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
  const allow = rule.effect === 'allow';
  // A deny or approve rule holds when any value it reads matches; an allow rule when every one does.
  const holds = <T>(values: T[], test: (value: T) => boolean) =>
    allow ? values.length > 0 && values.every(test) : values.some(test);
  if (compiled.pathPrefix || compiled.pathOutside) {
    const paths = args.paths(named, rule.ignoreCase ?? false);
    // A relative path that climbs above its start with `..` cannot be placed: it may be anywhere, so
    // it counts as inside a deny or approve rule's prefixes and inside none of an allow rule's.
    // Relative prefixes match at any depth where that widens a deny or approve rule, and stay
    // anchored where that would widen an allow rule.
    const under = (p: NormalisedPath, prefixes: PathPrefix[], anywhere: boolean) =>
      p.escapes ? !allow : prefixes.some((prefix) => isUnder(p, prefix, anywhere));
    const prefix = compiled.pathPrefix;
    if (prefix && !holds(paths, (p) => under(p, prefix, !allow))) return false;
    const outside = compiled.pathOutside;
    if (outside && !holds(paths, (p) => p.escapes || !under(p, outside, allow))) return false;
  }
  if (compiled.host) {
    const host = compiled.host;
    if (!holds(args.hosts(named), (h) => host.test(h))) return false;
  }
  if (compiled.command) {
    const command = compiled.command;
    const { names, unresolved } = args.commands(named);
    // A command word that cannot be known might be any command.
    if (unresolved) {
      if (allow) return false;
    } else if (!holds(names, (c) => command.test(c))) return false;
  }
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
  /** The path as compared, and the same path with its home folder written `~` (and `~` expanded). */
  forms: string[];
  /** A relative path whose `..` climbs above where it starts. */
  escapes: boolean;
}

/** A rule's path prefix as compared. */
interface PathPrefix {
  path: string;
  /** Relative and not written `./…`: its segments may be found anywhere in a path. */
  segments: boolean;
}

/** Home folders as paths write them, each followed by `/` or the end: all read as `~`. */
const HOME_FORMS = [
  /^\$\{?HOME\}?(?=\/|$)/,
  /^~[A-Za-z0-9._-]*(?=\/|$)/,
  /^\/home\/[^/]+(?=\/|$)/,
  /^\/root(?=\/|$)/,
  /^\/Users\/[^/]+(?=\/|$)/i,
  /^\/[a-z]:\/(users|documents and settings)\/[^/]+(?=\/|$)/i,
];

/**
 * A path with `\` read as `/`, `file:` URLs as their path, Windows drive paths as `/c:/…` and UNC
 * paths as `//server/…` (absolute either way), `.` and `..` resolved and no trailing slash. An
 * absolute path cannot climb above `/`; a relative one that does is marked `escapes`. Besides the
 * path itself, `forms` holds it with its home folder written `~`, and with `~` expanded to this
 * worker's home, so `~/.ssh` meets `/home/alice/.ssh` and `$HOME/.ssh` either way round.
 */
export function normalisePath(value: string, ignoreCase = false): NormalisedPath {
  let raw = value.trim();
  if (/^file:/i.test(raw)) {
    try {
      raw = decodeURIComponent(new URL(raw).pathname);
    } catch {
      // Not a URL after all: judged as written.
    }
  }
  raw = raw.replace(/\\/g, '/');
  // Win32 namespaces (`\\?\C:\…`, `\\.\C:\…`) name the same files as the path after them.
  raw = raw.replace(/^\/\/[?.]\/(?=[A-Za-z]:)/, '');
  let unc = false;
  if (/^[A-Za-z]:(\/|$)/.test(raw)) raw = `/${raw.slice(0, 1).toLowerCase()}${raw.slice(1)}`;
  else if (/^\/[A-Za-z]:(\/|$)/.test(raw)) raw = `/${raw.slice(1, 2).toLowerCase()}${raw.slice(2)}`;
  else if (/^\/\/[^/]/.test(raw)) unc = true;
  const normal = posix.normalize(raw === '' ? '.' : raw);
  let path = normal.length > 1 ? normal.replace(/\/+$/, '') : normal;
  if (ignoreCase) path = path.toLowerCase();
  // `\\server\share` is a UNC path on Windows, and `//etc` is `/etc` on POSIX: both are kept.
  const forms = unc ? [path.startsWith('//') ? path : `/${path}`, path.replace(/^\/+/, '/')] : [path];
  const home = HOME_FORMS.find((form) => form.test(path));
  if (home) {
    const tilde = path.replace(home, '~');
    if (tilde !== path) forms.push(tilde);
    const own = ignoreCase ? homedir().toLowerCase() : homedir();
    if (own.startsWith('/')) forms.push(`${own}${tilde.slice(1)}`);
  }
  return { forms, escapes: path === '..' || path.startsWith('../') };
}

function pathPrefix(value: string, ignoreCase: boolean): PathPrefix {
  const trimmed = value.trim().replace(/\\/g, '/');
  const normal = normalisePath(value, ignoreCase);
  // A rule names a home folder as `~`, whichever way it was written.
  const path = normal.forms.find((f) => f.startsWith('~')) ?? normal.forms[0] ?? '.';
  const anchored = /^(\.{1,2}(\/|$)|\/|~|\$)/.test(trimmed) || /^[A-Za-z]:/.test(trimmed);
  return { path, segments: !anchored && path !== '.' };
}

/**
 * Whether `path` is `prefix` or inside it, by whole segments (`/etc` does not hold `/etcetera`).
 * With `anywhere`, a relative prefix may also start at any segment of the path (`.env` in `app/.env`).
 */
function isUnder(path: NormalisedPath, prefix: PathPrefix, anywhere: boolean): boolean {
  return path.forms.some((form) => {
    if (prefix.path === '/') return form.startsWith('/');
    if (prefix.path === '.') return !form.startsWith('/') && !form.startsWith('~');
    if (form === prefix.path || form.startsWith(`${prefix.path}/`)) return true;
    return anywhere && prefix.segments && `/${form}/`.includes(`/${prefix.path}/`);
  });
}

function looksLikePath(value: string): boolean {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return /^file:/i.test(value);
  return /^(\/|~|\.)/.test(value) || /[\\/]/.test(value);
}

/** Schemes whose URLs Node's URL parser (and fetch) read a host from even without `//` (`http:host`). */
const SPECIAL_SCHEME = /(?:^|[^A-Za-z0-9+.-])((?:https?|wss?|ftp):)/gi;

/**
 * The hosts of the URLs in `value`, as Node's URL parser (the one fetch uses) reads them: so
 * `http:host`, `http:\\host\`, `HTTP://Host.` and numeric addresses (`http://2852039166/`,
 * `0xA9.0376.0xA9FE`) give the host fetch would reach. A URL may start anywhere in a word
 * (`--url=http://…`); a word with `://` and another scheme gives that URL's host. With `bare` (a
 * named argument), a word that is only a host (`example.com`, `db:5432`, `10.0.0.1`) counts too.
 */
function urlHosts(value: string, bare: boolean): string[] {
  const hosts: string[] = [];
  const add = (url: string) => {
    try {
      const { hostname } = new URL(url);
      if (hostname) hosts.push(normaliseHost(hostname));
    } catch {
      // Not a URL: no host (fetch refuses it too).
    }
  };
  for (const match of value.matchAll(SPECIAL_SCHEME)) {
    const start = (match.index ?? 0) + match[0].length - (match[1]?.length ?? 0);
    // The URL runs to the next space or quote; a bracketed IPv6 host keeps its brackets. The URL
    // parser drops tabs and newlines inside a URL, so the part up to one counts as well as past it.
    const url = value.slice(start).split(/[ \f\v"'<>`]/)[0] ?? '';
    add(url);
    const line = url.split(/\s/)[0] ?? '';
    if (line !== url) add(line);
    // Prose may close a bracket or end a sentence right after the URL.
    const trimmed = url.replace(/[)}\],.;:!?]+$/, '');
    if (trimmed !== url) add(trimmed);
  }
  for (const word of value.split(/\s+/)) {
    const candidate = word.replace(/^[("'<[]+|[)"'>\],.;:!?]+$/g, '');
    if (candidate.includes('://') && !/(?:https?|wss?|ftp):/i.test(candidate)) add(candidate);
    else if (bare && /^[A-Za-z0-9.:_-]+$/.test(candidate)) {
      // A named argument may be a bare host (`example.com`, `db:5432`, `::1`): read as a URL would be.
      add(`http://${candidate.split(':').length > 2 ? `[${candidate}]` : candidate}/`);
    }
  }
  return hosts;
}

/**
 * A rule's `host` list: name globs, and addresses or CIDR ranges compared as numbers. A rule's
 * address goes through the URL parser too, so it may be written any way a URL could write it.
 */
class HostMatcher {
  private readonly names: Glob | undefined;
  private readonly ranges: Array<[HostAddress, number]> = [];

  constructor(entries: string[]) {
    const names: string[] = [];
    for (const entry of entries) {
      const range = cidr(entry) ?? single(entry);
      if (range) this.ranges.push(range);
      else names.push(normaliseHost(entry));
    }
    this.names = names.length > 0 ? new Glob(names, true) : undefined;
  }

  test(host: string): boolean {
    if (this.names?.test(host)) return true;
    return hostAddresses(host).some((address) =>
      this.ranges.some(([base, bits]) => base.kind() === address.kind() && address.match(base, bits)),
    );
  }
}

function cidr(entry: string): [HostAddress, number] | undefined {
  if (!entry.includes('/')) return undefined;
  try {
    return ipaddr.parseCIDR(normaliseHost(entry));
  } catch {
    return undefined;
  }
}

function single(entry: string): [HostAddress, number] | undefined {
  if (/[*?]/.test(entry)) return undefined;
  const parsed = canonicalHost(entry);
  if (parsed === null) return undefined;
  const [address] = hostAddresses(parsed);
  return address ? [address, address.kind() === 'ipv4' ? 32 : 128] : undefined;
}

/** The command names in a command line (see command-line.ts), for callers that want names only. */
export function commandNames(line: string): string[] {
  return analyseCommandLine(line).names;
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

  paths(named: string[] | undefined, ignoreCase: boolean): NormalisedPath[] {
    const values = named ? this.at(named) : strings(this.value).filter(looksLikePath);
    // A value with spaces may be a command line or prose naming paths: each word that looks like
    // one is a path too (the whole value still counts, for a file name with spaces).
    const words = values.flatMap((v) => (/\s/.test(v) ? v.split(/\s+/).filter(looksLikePath) : []));
    return [...values, ...words].map((v) => normalisePath(v, ignoreCase));
  }

  hosts(named: string[] | undefined): string[] {
    return (named ? this.at(named) : strings(this.value)).flatMap((v) => urlHosts(v, named !== undefined));
  }

  commands(named: string[] | undefined): CommandAnalysis {
    const keys = named ?? COMMAND_ARGUMENTS;
    const found: CommandAnalysis = { names: [], unresolved: false };
    const merge = (analysis: CommandAnalysis) => {
      found.names.push(...analysis.names);
      found.unresolved ||= analysis.unresolved;
    };
    for (const key of keys) {
      const value = lookup(this.value, key);
      // An argv list is one command's words (`["sh", "-c", "rm x"]`); a string is a command line.
      if (Array.isArray(value) && value.length > 0 && value.every((w) => typeof w === 'string')) {
        merge(analyseArgv(value));
      } else if (Array.isArray(value) && value.length > 0) {
        // A list holding other than strings: what runs cannot be read from it.
        found.unresolved = true;
      } else for (const line of strings(value)) merge(analyseCommandLine(line));
    }
    return found;
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
