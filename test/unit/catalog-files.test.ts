import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalogDir, type LoadedCatalog } from '../../capabilities/catalog-files.js';

const skill = (front: string, body = '# Steps\n1. Do it.\n') => `---\n${front}\n---\n${body}`;

const tool = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `The ${name} tool.`,
  inputSchema: { type: 'object', properties: {} },
  ...extra,
});

/** A catalog folder with two good skills, two good toolsets and a file or folder for each way to break one. */
function writeCatalog(dir: string): void {
  const skills: Record<string, string | null> = {
    'good-skill': skill(
      'name: good-skill\ndescription: Summarise meeting transcripts. Use when asked for minutes.\nmetadata:\n  title: Good Skill\n  tags: meeting, minutes',
    ),
    'other-skill': skill('name: other-skill\ndescription: Plan trips.\nmetadata:\n  tags: [travel, trip]'),
    'no-description': skill('name: no-description'),
    'wrong-name': skill('name: not-the-folder\ndescription: Has the wrong name.'),
    'bad-yaml': skill('name: bad-yaml\ndescription: [unclosed'),
    'Bad--Name': skill('name: Bad--Name\ndescription: Breaks the id rules.'),
    'no-frontmatter': '# Just a body\n',
    'js-frontmatter':
      '---js\n{ name: (globalThis.catalogFilesEvaluated = true, "js-frontmatter"), description: "runs code" }\n---\nbody\n',
    'empty-folder': null,
    'tags-number': skill('name: tags-number\ndescription: Tags are a number.\nmetadata:\n  tags: 42'),
  };
  for (const [name, content] of Object.entries(skills)) {
    mkdirSync(join(dir, 'skills', name), { recursive: true });
    if (content !== null) writeFileSync(join(dir, 'skills', name, 'SKILL.md'), content);
  }
  // A folder where SKILL.md should be a file, and a symlink to nowhere.
  mkdirSync(join(dir, 'skills', 'skill-is-folder', 'SKILL.md'), { recursive: true });
  symlinkSync(join(dir, 'nowhere'), join(dir, 'skills', 'dangling-link'));
  // Hidden entries are not skills.
  mkdirSync(join(dir, 'skills', '.git'), { recursive: true });

  const toolsets: Record<string, string> = {
    'good-tools': JSON.stringify({ id: 'good-tools', name: 'Good', description: 'Works.', tools: [tool('do_it')] }),
    'guarded-tools': JSON.stringify({
      id: 'guarded-tools',
      name: 'Guarded',
      description: 'Every tool waits for approval; nobody runs them yet.',
      external: false,
      requiresApproval: true,
      riskTags: ['network'],
      tools: [tool('send_it'), tool('delete_it', { requiresApproval: false, riskTags: 'destructive, network' })],
    }),
    'bad-external': JSON.stringify({
      id: 'bad-external',
      name: 'B',
      description: 'B',
      external: 'yes',
      tools: [tool('b')],
    }),
    // Saved with a byte-order mark, as some Windows editors do.
    'bom-tools': `\uFEFF${JSON.stringify({ id: 'bom-tools', name: 'BOM', description: 'Has a BOM.', tags: 'a, b', tools: [tool('bom_tool', { requiresApproval: true })] })}`,
    'bad-json': '{ "id": "bad-json", ',
    'no-tools': JSON.stringify({ id: 'no-tools', name: 'None', description: 'No tools.' }),
    'bad-schema': JSON.stringify({
      id: 'bad-schema',
      name: 'Bad schema',
      description: 'Tool schema is not an object schema.',
      tools: [tool('ok_tool'), tool('bad_tool', { inputSchema: { type: 'string' } })],
    }),
    'id-mismatch': JSON.stringify({ id: 'something-else', name: 'X', description: 'Y', tools: [tool('x')] }),
    'duplicate-tools': JSON.stringify({
      id: 'duplicate-tools',
      name: 'D',
      description: 'D',
      tools: [tool('a'), tool('a')],
    }),
  };
  mkdirSync(join(dir, 'toolsets'), { recursive: true });
  for (const [name, content] of Object.entries(toolsets)) writeFileSync(join(dir, 'toolsets', `${name}.json`), content);
  writeFileSync(join(dir, 'toolsets', 'README.md'), 'not a toolset');
}

describe('loadCatalogDir with broken files', () => {
  let dir: string;
  let loaded: LoadedCatalog;
  const problem = (file: string) => loaded.problems.filter((p) => p.file === file).map((p) => p.message);

  beforeAll(() => {
    dir = join(mkdtempSync(join(tmpdir(), 'catalog-files-')), 'catalog');
    writeCatalog(dir);
    loaded = loadCatalogDir(dir);
  });
  afterAll(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

  it('loads every good skill and toolset', () => {
    expect(loaded.entries.map((e) => `${e.kind}:${e.id}`).sort()).toEqual([
      'skill:good-skill',
      'skill:other-skill',
      'toolset:bom-tools',
      'toolset:good-tools',
      'toolset:guarded-tools',
    ]);
    const good = loaded.entries.find((e) => e.id === 'good-skill');
    expect(good).toMatchObject({
      name: 'Good Skill',
      tags: ['meeting', 'minutes'],
      source: 'catalog/skills/good-skill/SKILL.md',
    });
    expect(good?.kind === 'skill' && good.instructions()).toContain('1. Do it.');
    const bom = loaded.entries.find((e) => e.id === 'bom-tools');
    expect(bom).toMatchObject({ tags: ['a', 'b'], tools: [{ name: 'bom_tool', requiresApproval: true }] });
  });

  it('treats a toolset file as external unless it says otherwise, and applies a set-wide approval to every tool', () => {
    const byId = (id: string) => loaded.entries.find((e) => e.id === id);
    expect(byId('good-tools')).toMatchObject({ execution: 'external' });
    const guarded = byId('guarded-tools');
    expect(guarded?.kind === 'toolset' && guarded.execution).toBeUndefined();
    expect(guarded).toMatchObject({
      tools: [
        { name: 'send_it', requiresApproval: true },
        { name: 'delete_it', requiresApproval: true },
      ],
    });
  });

  it("gives each tool the set's risk tags and its own, for the approval policy", () => {
    const guarded = loaded.entries.find((e) => e.id === 'guarded-tools');
    expect(guarded?.kind === 'toolset' && guarded.tools.map((t) => [t.name, t.riskTags])).toEqual([
      ['send_it', ['network']],
      ['delete_it', ['network', 'destructive']],
    ]);
  });

  it('names the file and the field of each broken skill', () => {
    expect(problem('catalog/skills/no-description/SKILL.md')).toEqual(['description: is required']);
    expect(problem('catalog/skills/wrong-name/SKILL.md')).toEqual([
      'name: must match the folder name "wrong-name" (got "not-the-folder")',
    ]);
    expect(problem('catalog/skills/bad-yaml/SKILL.md')).toEqual([
      expect.stringMatching(/^frontmatter is not valid YAML/),
    ]);
    expect(problem('catalog/skills/Bad--Name/SKILL.md')).toEqual([expect.stringMatching(/^name: must be lowercase/)]);
    expect(problem('catalog/skills/no-frontmatter/SKILL.md')).toEqual([
      expect.stringMatching(/^frontmatter is missing/),
    ]);
    expect(problem('catalog/skills/empty-folder/SKILL.md')).toEqual(['SKILL.md is missing']);
    expect(problem('catalog/skills/dangling-link/SKILL.md')).toEqual(['SKILL.md is missing']);
    expect(problem('catalog/skills/skill-is-folder/SKILL.md')).toEqual(['cannot be read: EISDIR']);
    expect(problem('catalog/skills/tags-number/SKILL.md')).toEqual([
      'metadata.tags: must be a comma-separated string or a list of strings',
    ]);
  });

  it('refuses JavaScript frontmatter without evaluating it', () => {
    expect(problem('catalog/skills/js-frontmatter/SKILL.md')).toEqual([
      'frontmatter must be YAML (the first line is "---js")',
    ]);
    expect((globalThis as { catalogFilesEvaluated?: boolean }).catalogFilesEvaluated).toBeUndefined();
  });

  it('names the file and the field of each broken toolset', () => {
    expect(problem('catalog/toolsets/bad-json.json')).toEqual([expect.stringMatching(/^not valid JSON/)]);
    expect(problem('catalog/toolsets/no-tools.json')).toEqual(['tools: is required']);
    expect(problem('catalog/toolsets/bad-schema.json')).toEqual(['tools.1.inputSchema.type: must be "object"']);
    expect(problem('catalog/toolsets/id-mismatch.json')).toEqual([
      'id: must match the file name "id-mismatch" (got "something-else")',
    ]);
    expect(problem('catalog/toolsets/duplicate-tools.json')).toEqual(['tools: tool names must be unique']);
    expect(problem('catalog/toolsets/bad-external.json')).toEqual(['external: must be true or false']);
  });

  it('reports nothing else: hidden folders and non-JSON files are not catalog entries', () => {
    const files = new Set(loaded.problems.map((p) => p.file));
    expect(files.size).toBe(16);
    expect([...files].some((f) => f.includes('.git') || f.endsWith('README.md'))).toBe(false);
  });

  it('reports a missing catalog folder', () => {
    const missing = join(dir, 'does-not-exist');
    expect(loadCatalogDir(missing)).toEqual({
      entries: [],
      problems: [{ file: missing, message: 'catalog folder does not exist' }],
    });
  });
});

describe('the demo catalog', () => {
  it('loads 30 skills and 18 toolsets without problems', () => {
    const loaded = loadCatalogDir('catalog');
    expect(loaded.problems).toEqual([]);
    expect(loaded.entries.filter((e) => e.kind === 'skill')).toHaveLength(30);
    expect(loaded.entries.filter((e) => e.kind === 'toolset')).toHaveLength(18);
  });
});
