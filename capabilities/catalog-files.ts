/**
 * Loads a catalog folder: Agent Skills (`skills/<id>/SKILL.md` with YAML frontmatter) and ToolSets
 * (`toolsets/<id>.json`, tools in MCP's shape plus `requiresApproval`). A broken file is reported
 * with its path and field, and the rest of the catalog still loads.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import matter from 'gray-matter';
import { z } from 'zod';
import type { CatalogEntry, SkillEntry, ToolsetEntry } from './catalog.js';

/** A string field whose error says whether it was missing or of the wrong type. */
const text = () => z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') });

/** Agent Skills name rules, shared by toolset ids: no leading, trailing or doubled hyphen. */
export const CapId = text()
  .max(64, 'must be at most 64 characters')
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be lowercase letters and digits in hyphen-separated words');

const Tags = z
  .union([z.string(), z.array(z.string())], { error: 'must be a comma-separated string or a list of strings' })
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((t) => t.trim()).filter(Boolean));

export const SkillFrontmatter = z.object({
  name: CapId,
  description: text().trim().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters'),
  metadata: z
    .object(
      { title: text().trim().min(1, 'must not be empty').optional(), tags: Tags.optional() },
      { error: 'must be a mapping' },
    )
    .catchall(z.unknown())
    .optional(),
});

export const ToolDeclarationSchema = z.object({
  name: text().regex(/^[A-Za-z0-9_.-]{1,128}$/, 'must be 1-128 letters, digits, _ . or -'),
  description: text().trim().min(1, 'must not be empty'),
  inputSchema: z
    .object(
      { type: z.literal('object', { error: 'must be "object"' }) },
      {
        error: (issue) => (issue.input === undefined ? 'is required' : 'must be a JSON Schema object'),
      },
    )
    .catchall(z.unknown()),
  requiresApproval: z.boolean({ error: 'must be true or false' }).default(false),
  /** Labels the worker's approval policy matches on (`writes-files`, `network`). */
  riskTags: Tags.default([]),
});

export const ToolsetFile = z.object({
  id: CapId,
  name: text().trim().min(1, 'must not be empty'),
  description: text().trim().min(1, 'must not be empty'),
  tags: Tags.default([]),
  /**
   * A file only declares tools, so a backend service runs them and answers with the `toolResult`
   * signal. `false` says nobody does (yet): calls then get an error result rather than a wait.
   */
  external: z.boolean({ error: 'must be true or false' }).default(true),
  /** Every tool of the set needs the user's approval, whatever the tool itself says. */
  requiresApproval: z.boolean({ error: 'must be true or false' }).default(false),
  /** Risk tags every tool of the set carries, besides its own. */
  riskTags: Tags.default([]),
  tools: z
    .array(ToolDeclarationSchema, {
      error: (issue) => (issue.input === undefined ? 'is required' : 'must be a list of tools'),
    })
    .min(1, 'must list at least one tool')
    .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, 'tool names must be unique'),
});

export interface CatalogProblem {
  file: string;
  message: string;
}

export interface LoadedCatalog {
  entries: CatalogEntry[];
  problems: CatalogProblem[];
}

function zodProblems(file: string, error: z.ZodError): CatalogProblem[] {
  return error.issues.map((issue) => ({
    file,
    message: issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message,
  }));
}

/** The file's text, or why it could not be read (a folder named like the file, no permission). */
function readText(file: string): string | { error: string } {
  try {
    // Editors on Windows save a byte-order mark, which JSON.parse rejects.
    return readFileSync(file, 'utf8').replace(/^\uFEFF/, '');
  } catch (err) {
    return { error: `cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
  }
}

const refuseEngine = (): never => {
  throw new Error('only YAML frontmatter is allowed');
};
/**
 * gray-matter picks the frontmatter language from the first line (`---js`) and evaluates JavaScript
 * frontmatter with `eval`: a skill folder from anywhere would run code in the worker. YAML only.
 * A fresh options object also keeps gray-matter's by-content cache out of the way.
 */
const matterOptions = () => ({ engines: { javascript: refuseEngine, coffee: refuseEngine } });

function loadSkill(root: string, folder: string): SkillEntry | CatalogProblem[] {
  const file = join(folder, 'SKILL.md');
  const shown = relative(root, file) || file;
  if (!existsSync(file)) return [{ file: shown, message: 'SKILL.md is missing' }];
  const source = readText(file);
  if (typeof source !== 'string') return [{ file: shown, message: source.error }];
  const language = source.startsWith('---') ? matter.language(source).name.toLowerCase() : '';
  if (language !== '' && language !== 'yaml' && language !== 'yml') {
    return [{ file: shown, message: `frontmatter must be YAML (the first line is "---${language}")` }];
  }
  let parsed: matter.GrayMatterFile<string>;
  try {
    parsed = matter(source, matterOptions());
  } catch (err) {
    return [{ file: shown, message: `frontmatter is not valid YAML: ${(err as Error).message.split('\n')[0]}` }];
  }
  if (parsed.matter.trim() === '') {
    return [{ file: shown, message: 'frontmatter is missing: the file must start with a "---" YAML block' }];
  }
  const front = SkillFrontmatter.safeParse(parsed.data);
  if (!front.success) return zodProblems(shown, front.error);
  const folderName = folder.split(/[\\/]/).pop();
  if (front.data.name !== folderName) {
    return [{ file: shown, message: `name: must match the folder name "${folderName}" (got "${front.data.name}")` }];
  }
  const body = parsed.content;
  return {
    kind: 'skill',
    id: front.data.name,
    name: front.data.metadata?.title ?? front.data.name,
    description: front.data.description,
    tags: front.data.metadata?.tags ?? [],
    source: shown,
    instructions: () => body,
  };
}

function loadToolset(root: string, file: string): ToolsetEntry | CatalogProblem[] {
  const shown = relative(root, file) || file;
  const source = readText(file);
  if (typeof source !== 'string') return [{ file: shown, message: source.error }];
  let raw: unknown;
  try {
    raw = JSON.parse(source);
  } catch (err) {
    return [{ file: shown, message: `not valid JSON: ${(err as Error).message}` }];
  }
  const parsed = ToolsetFile.safeParse(raw);
  if (!parsed.success) return zodProblems(shown, parsed.error);
  const expected = file
    .split(/[\\/]/)
    .pop()
    ?.replace(/\.json$/, '');
  if (parsed.data.id !== expected) {
    return [{ file: shown, message: `id: must match the file name "${expected}" (got "${parsed.data.id}")` }];
  }
  const { external, requiresApproval, riskTags, tools, ...rest } = parsed.data;
  return {
    kind: 'toolset',
    ...rest,
    tools: tools.map((tool) => ({
      ...tool,
      requiresApproval: requiresApproval || tool.requiresApproval,
      riskTags: [...new Set([...riskTags, ...tool.riskTags])],
    })),
    ...(external ? { execution: 'external' as const } : {}),
    source: shown,
  };
}

/** Names in `dir`, sorted, without hidden ones (`.git`, `.DS_Store`). */
function listDir(dir: string): string[] {
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => !name.startsWith('.'))
        .sort()
    : [];
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    // A dangling symlink: SKILL.md is then reported missing rather than the whole load failing.
    return true;
  }
}

/** Loads every skill and toolset under `dir`; `problems` names each file that could not be loaded. */
export function loadCatalogDir(dir: string): LoadedCatalog {
  const entries: CatalogEntry[] = [];
  const problems: CatalogProblem[] = [];
  if (!existsSync(dir)) return { entries, problems: [{ file: dir, message: 'catalog folder does not exist' }] };
  const root = join(dir, '..');
  const collect = (result: CatalogEntry | CatalogProblem[]) => {
    if (Array.isArray(result)) problems.push(...result);
    else entries.push(result);
  };
  for (const name of listDir(join(dir, 'skills'))) {
    const folder = join(dir, 'skills', name);
    if (isDirectory(folder)) collect(loadSkill(root, folder));
  }
  for (const name of listDir(join(dir, 'toolsets'))) {
    if (name.endsWith('.json')) collect(loadToolset(root, join(dir, 'toolsets', name)));
  }
  return { entries, problems };
}
