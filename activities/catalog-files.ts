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

const CapId = z
  .string({ error: 'must be a string' })
  .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be lowercase letters, digits and hyphens (at most 64)');

const Tags = z
  .union([z.string(), z.array(z.string())])
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((t) => t.trim()).filter(Boolean));

export const SkillFrontmatter = z.object({
  name: CapId,
  description: z.string({ error: 'is required' }).trim().min(1, 'must not be empty').max(1024),
  metadata: z
    .object({ title: z.string().trim().min(1).optional(), tags: Tags.optional() })
    .catchall(z.unknown())
    .optional(),
});

export const ToolDeclarationSchema = z.object({
  name: z.string({ error: 'is required' }).regex(/^[A-Za-z0-9_.-]{1,128}$/, 'must be 1-128 letters, digits, _ . or -'),
  description: z.string({ error: 'is required' }).trim().min(1, 'must not be empty'),
  inputSchema: z.object({ type: z.literal('object', { error: 'must be "object"' }) }).catchall(z.unknown()),
  requiresApproval: z.boolean().default(false),
});

export const ToolsetFile = z.object({
  id: CapId,
  name: z.string({ error: 'is required' }).trim().min(1),
  description: z.string({ error: 'is required' }).trim().min(1, 'must not be empty'),
  tags: Tags.default([]),
  tools: z
    .array(ToolDeclarationSchema)
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

function loadSkill(root: string, folder: string): SkillEntry | CatalogProblem[] {
  const file = join(folder, 'SKILL.md');
  const shown = relative(root, file) || file;
  if (!existsSync(file)) return [{ file: shown, message: 'SKILL.md is missing' }];
  let parsed: matter.GrayMatterFile<string>;
  try {
    // gray-matter caches by content; a fresh options object keeps a broken file from poisoning the cache.
    parsed = matter(readFileSync(file, 'utf8'), {});
  } catch (err) {
    return [{ file: shown, message: `frontmatter is not valid YAML: ${(err as Error).message.split('\n')[0]}` }];
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
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
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
  return { kind: 'toolset', ...parsed.data, source: shown };
}

function listDir(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
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
    if (statSync(folder).isDirectory()) collect(loadSkill(root, folder));
  }
  for (const name of listDir(join(dir, 'toolsets'))) {
    if (name.endsWith('.json')) collect(loadToolset(root, join(dir, 'toolsets', name)));
  }
  return { entries, problems };
}
