/**
 * The demo MCP server (examples/doc-convert-mcp) as a real stdio process: it reads and writes only
 * inside its workspace judged by real paths, so a symbolic link inside the workspace that points out
 * is refused like `../`, and no conversion overwrites or redirects its own log or writes into its code.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let root: string;
let workspace: string;
let outside: string;
let client: Client;
const started: Client[] = [];

async function startServer(folder: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'examples/doc-convert-mcp/server.ts'],
    env: { ...(process.env as Record<string, string>), DOC_CONVERT_WORKSPACE: folder },
    stderr: 'inherit',
  });
  const connected = new Client({ name: 'demo-mcp-workspace-test', version: '1.0.0' });
  await connected.connect(transport);
  started.push(connected);
  return connected;
}

const log = () => readFileSync(join(workspace, '.conversions.log'), 'utf8');

/** One `markdown_to_html` call: whether it failed, and the text the caller sees. */
async function toHtml(inputPath: string, outputPath?: string): Promise<{ isError: boolean; text: string }> {
  const result = await client.callTool({
    name: 'markdown_to_html',
    arguments: outputPath === undefined ? { inputPath } : { inputPath, outputPath },
  });
  const content = result.content as { type: string; text?: string }[];
  return { isError: result.isError === true, text: content.map((c) => c.text ?? '').join('\n') };
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'demo-mcp-workspace-'));
  workspace = join(root, 'workspace');
  outside = join(root, 'outside');
  mkdirSync(workspace);
  mkdirSync(outside);
  writeFileSync(join(workspace, 'guide.md'), '# Guide\n\nInside.\n');
  writeFileSync(join(outside, 'secret.md'), '# Secret\n\nsk-live-do-not-read\n');
  writeFileSync(join(outside, 'victim.html'), 'untouched');
  symlinkSync(join(outside, 'secret.md'), join(workspace, 'leak.md'));
  symlinkSync(outside, join(workspace, 'out-link'));
  symlinkSync(join(outside, 'victim.html'), join(workspace, 'escape.html'));
  symlinkSync(join(outside, 'created.html'), join(workspace, 'dangling.html'));
  symlinkSync(join(workspace, 'guide.md'), join(workspace, 'alias.md'));

  client = await startServer(workspace);
});

afterAll(async () => {
  for (const c of started) await c.close();
  rmSync(root, { recursive: true, force: true });
});

describe('the demo MCP server workspace', () => {
  it('still follows a link that stays inside the workspace', async () => {
    const result = await toHtml('alias.md');
    expect(result).toMatchObject({ isError: false, text: expect.stringContaining('Wrote alias.html') });
    expect(readFileSync(join(workspace, 'alias.html'), 'utf8')).toContain('<h1>Guide</h1>');
    expect(log()).toMatch(/\tmarkdown_to_html\tguide\.md\talias\.html\t\d+\t-\n$/);
  });

  it('refuses to read through a link that points out of the workspace', async () => {
    const result = await toHtml('leak.md', 'leak.html');
    expect(result).toMatchObject({
      isError: true,
      text: expect.stringContaining('"leak.md" is outside the workspace'),
    });
    expect(result.text).not.toContain('sk-live');
    expect(existsSync(join(workspace, 'leak.html'))).toBe(false);
  });

  it('refuses to write through a linked folder, without creating folders outside', async () => {
    const file = await toHtml('guide.md', 'out-link/guide.html');
    const folder = await toHtml('guide.md', 'out-link/new/guide.html');
    expect(file).toMatchObject({ isError: true, text: expect.stringContaining('is outside the workspace') });
    expect(folder).toMatchObject({ isError: true, text: expect.stringContaining('is outside the workspace') });
    expect(existsSync(join(outside, 'guide.html'))).toBe(false);
    expect(existsSync(join(outside, 'new'))).toBe(false);
  });

  it('refuses to write through a linked file, present or dangling', async () => {
    const present = await toHtml('guide.md', 'escape.html');
    const dangling = await toHtml('guide.md', 'dangling.html');
    expect(present).toMatchObject({ isError: true, text: expect.stringContaining('is outside the workspace') });
    expect(dangling).toMatchObject({ isError: true, text: expect.stringContaining('symbolic link') });
    expect(readFileSync(join(outside, 'victim.html'), 'utf8')).toBe('untouched');
    expect(existsSync(join(outside, 'created.html'))).toBe(false);
  });

  it('refuses to overwrite its own log, or to append to it through a link', async () => {
    const before = log();
    const overwrite = await toHtml('guide.md', '.conversions.log');
    expect(overwrite).toMatchObject({
      isError: true,
      text: expect.stringContaining('".conversions.log" is a file of the doc-convert server itself'),
    });
    expect(log()).toBe(before);

    unlinkSync(join(workspace, '.conversions.log'));
    symlinkSync(join(outside, 'victim.html'), join(workspace, '.conversions.log'));
    const redirected = await toHtml('guide.md', 'logged.html');
    expect(redirected).toMatchObject({ isError: true, text: expect.stringContaining('not a regular file') });
    expect(readFileSync(join(outside, 'victim.html'), 'utf8')).toBe('untouched');
    expect(existsSync(join(workspace, 'logged.html'))).toBe(false);
  });

  it('refuses to write into its own code folder when the workspace contains it', async () => {
    const examples = resolve('examples');
    const written = [join(examples, 'doc-convert-mcp', 'server.html'), join(examples, '.conversions.log')];
    try {
      const own = await startServer(examples);
      const result = await own.callTool({
        name: 'markdown_to_html',
        arguments: { inputPath: 'doc-convert-mcp/server.ts', outputPath: 'doc-convert-mcp/server.html' },
      });
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toContain('is a file of the doc-convert server itself');
      expect(written.filter((path) => existsSync(path))).toEqual([]);
    } finally {
      // Without the guard the call above writes into the repository: leave it as it was.
      for (const path of written) rmSync(path, { force: true });
    }
  });
});
