/**
 * A real MCP server (stdio) that converts Markdown files in a workspace folder: `markdown_to_docx`
 * writes a Word file, `markdown_to_html` an HTML page, each next to its source. Every conversion
 * appends one line to `<workspace>/.conversions.log` (time, tool, source, target, bytes, call id), so a
 * run can be checked from outside.
 *
 *   DOC_CONVERT_WORKSPACE=./.data/workspace npx tsx examples/doc-convert-mcp/server.ts
 *
 * Paths are relative to the workspace (default: `./workspace` under the current folder), and a path
 * that leads out of it is refused.
 */
import { appendFile, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { marked } from 'marked';
import { z } from 'zod';
import { markdownToDocx } from './markdown-docx.js';

const workspace = resolve(process.env.DOC_CONVERT_WORKSPACE ?? 'workspace');

/** A workspace path made absolute; throws when it leaves the workspace. */
function inWorkspace(path: string): string {
  const absolute = resolve(workspace, path);
  const inside = relative(workspace, absolute);
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
    throw new Error(`"${path}" is outside the workspace ${workspace}`);
  }
  return absolute;
}

function withExtension(path: string, extension: string): string {
  return join(path, '..', `${basename(path, extname(path))}${extension}`);
}

async function convert(
  tool: string,
  /** The caller's id for this call (session-harness sends it in `_meta`), logged so a repeat is visible. */
  callId: string,
  inputPath: string,
  outputPath: string | undefined,
  extension: string,
  render: (markdown: string, title: string) => Promise<{ bytes: Buffer; details: Record<string, unknown> }>,
) {
  try {
    const source = inWorkspace(inputPath);
    const target = inWorkspace(outputPath ?? withExtension(inputPath, extension));
    const markdown = await readFile(source, 'utf8');
    const { bytes, details } = await render(markdown, basename(source, extname(source)));
    await mkdir(join(target, '..'), { recursive: true });
    await writeFile(target, bytes);
    const size = (await stat(target)).size;
    const shown = relative(workspace, target);
    await appendFile(
      join(workspace, '.conversions.log'),
      `${new Date().toISOString()}\t${tool}\t${relative(workspace, source)}\t${shown}\t${size}\t${callId}\n`,
    );
    const structured = { outputPath: shown, bytes: size, ...details };
    return {
      content: [{ type: 'text' as const, text: `Wrote ${shown} (${size} bytes) from ${inputPath}.` }],
      structuredContent: structured,
    };
  } catch (err) {
    const reason =
      (err as NodeJS.ErrnoException).code === 'ENOENT' ? `${inputPath} does not exist` : (err as Error).message;
    return { content: [{ type: 'text' as const, text: `Conversion failed: ${reason}` }], isError: true };
  }
}

function callIdOf(meta: Record<string, unknown> | undefined): string {
  const id = meta?.['session-harness/callId'];
  return typeof id === 'string' ? id : '-';
}

const paths = {
  inputPath: z.string().min(1).describe('Workspace path of the source Markdown file, e.g. "guide.md".'),
  outputPath: z
    .string()
    .min(1)
    .optional()
    .describe('Workspace path to write (default: the input name with the new extension).'),
};

const server = new McpServer(
  { name: 'doc-convert', title: 'Document conversion (demo)', version: '1.0.0' },
  { instructions: `Converts Markdown files in the workspace ${workspace} to Word (.docx) and HTML.` },
);

server.registerTool(
  'markdown_to_docx',
  {
    title: 'Markdown to Word',
    description:
      'Convert a Markdown file in the workspace to a Word .docx file next to it (headings, lists, tables, code).',
    inputSchema: paths,
    outputSchema: {
      outputPath: z.string(),
      bytes: z.number(),
      headings: z.number(),
      paragraphs: z.number(),
      listItems: z.number(),
      tables: z.number(),
      codeBlocks: z.number(),
    },
  },
  ({ inputPath, outputPath }, extra) =>
    convert('markdown_to_docx', callIdOf(extra._meta), inputPath, outputPath, '.docx', async (markdown, title) => {
      const { docx, stats } = await markdownToDocx(markdown, title);
      return { bytes: docx, details: { ...stats } };
    }),
);

server.registerTool(
  'markdown_to_html',
  {
    title: 'Markdown to HTML',
    description: 'Convert a Markdown file in the workspace to a standalone HTML page next to it.',
    inputSchema: paths,
  },
  ({ inputPath, outputPath }, extra) =>
    convert('markdown_to_html', callIdOf(extra._meta), inputPath, outputPath, '.html', async (markdown, title) => {
      const body = await marked.parse(markdown);
      const safeTitle = title.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
      const page = `<!doctype html>\n<html><head><meta charset="utf-8"><title>${safeTitle}</title></head>\n<body>\n${body}</body></html>\n`;
      return { bytes: Buffer.from(page, 'utf8'), details: {} };
    }),
);

await server.connect(new StdioServerTransport());
// The client closing stdin means "stop".
process.stdin.on('end', () => process.exit(0));
