/**
 * A real MCP server (stdio) that converts Markdown files in a workspace folder: `markdown_to_docx`
 * writes a Word file, `markdown_to_html` an HTML page, each next to its source; `write_markdown`
 * writes a Markdown file the agent composed (the first phase of the source article's example). Every conversion
 * appends one line to `<workspace>/.conversions.log` (time, tool, source, target, bytes, call id), so a
 * run can be checked from outside.
 *
 *   DOC_CONVERT_WORKSPACE=./.data/workspace npx tsx examples/doc-convert-mcp/server.ts
 *
 * Paths are relative to the workspace (default: `./workspace` under the current folder). They are
 * checked after symbolic links are resolved (fs.realpath), so a link inside the workspace that points
 * out of it is refused like `../`; so are writes to the server's own files (its log and its code).
 */
import { constants } from 'node:fs';
import { appendFile, lstat, mkdir, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { marked } from 'marked';
import { z } from 'zod';
import { markdownToDocx } from './markdown-docx.js';

// Real paths from the start: every later check compares real paths with real paths.
await mkdir(resolve(process.env.DOC_CONVERT_WORKSPACE ?? 'workspace'), { recursive: true });
const workspace = await realpath(resolve(process.env.DOC_CONVERT_WORKSPACE ?? 'workspace'));
const conversionsLog = join(workspace, '.conversions.log');
/** The server's own code: never a conversion target, even when the workspace contains it. */
const serverDirectory = await realpath(dirname(fileURLToPath(import.meta.url)));
/** Opening with O_NOFOLLOW refuses a symbolic link planted where a file will be written. */
const WRITE = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;
const APPEND = constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_NOFOLLOW;

function isWithin(folder: string, path: string): boolean {
  const inside = relative(folder, path);
  return inside !== '' && !inside.startsWith('..') && !isAbsolute(inside);
}

/**
 * The real path `path` names: its deepest existing ancestor resolved through symbolic links, joined
 * with the parts that do not exist yet. Throws when that leaves the workspace.
 */
async function inWorkspace(path: string): Promise<string> {
  const absolute = resolve(workspace, path);
  const missing: string[] = [];
  let existing = absolute;
  let real: string | undefined;
  while (real === undefined) {
    try {
      real = join(await realpath(existing), ...missing);
    } catch (err) {
      // ENOENT also covers a dangling link: it stays among the missing parts and O_NOFOLLOW refuses it.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(existing) === existing) throw err;
      missing.unshift(basename(existing));
      existing = dirname(existing);
    }
  }
  if (!isWithin(workspace, real)) throw new Error(`"${path}" is outside the workspace ${workspace}`);
  return real;
}

/** The real path to write for `path`, its folders created; throws for a path outside or a file of the server. */
async function writableTarget(path: string): Promise<string> {
  const refuseOwn = (real: string) => {
    if (real === conversionsLog || isWithin(serverDirectory, real)) {
      throw new Error(`"${path}" is a file of the doc-convert server itself`);
    }
  };
  const planned = await inWorkspace(path);
  refuseOwn(planned);
  await mkdir(dirname(planned), { recursive: true });
  // Again now that the folders exist: a link among them must not have led the writes elsewhere.
  const target = join(await realpath(dirname(planned)), basename(planned));
  if (!isWithin(workspace, target)) throw new Error(`"${path}" is outside the workspace ${workspace}`);
  refuseOwn(target);
  return target;
}

/** The log must be a plain file of the workspace: a link there would send the appends elsewhere. */
async function checkLog(): Promise<void> {
  const info = await lstat(conversionsLog).catch(() => undefined);
  if (info && !info.isFile()) throw new Error('the conversions log is not a regular file; nothing was converted');
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
    await checkLog();
    const source = await inWorkspace(inputPath);
    const markdown = await readFile(source, 'utf8');
    const target = await writableTarget(outputPath ?? withExtension(inputPath, extension));
    const { bytes, details } = await render(markdown, basename(source, extname(source)));
    await writeFile(target, bytes, { flag: WRITE });
    const size = (await stat(target)).size;
    const shown = relative(workspace, target);
    await appendFile(
      conversionsLog,
      `${new Date().toISOString()}\t${tool}\t${relative(workspace, source)}\t${shown}\t${size}\t${callId}\n`,
      { flag: APPEND },
    );
    const structured = { outputPath: shown, bytes: size, ...details };
    return {
      content: [{ type: 'text' as const, text: `Wrote ${shown} (${size} bytes) from ${inputPath}.` }],
      structuredContent: structured,
    };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT'
        ? `${inputPath} does not exist`
        : code === 'ELOOP'
          ? 'the target is a symbolic link, which this server does not write through'
          : (err as Error).message;
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

server.registerTool(
  'write_markdown',
  {
    title: 'Write a Markdown file',
    description:
      'Write (create or replace) a Markdown file in the workspace, e.g. a guide the task asks for. Report the path you chose.',
    inputSchema: {
      path: z
        .string()
        .min(1)
        .regex(/\.(md|markdown)$/i, 'must end in .md or .markdown')
        .describe('Workspace path of the Markdown file to write, e.g. "comfyui-guide.md".'),
      content: z.string().describe('The whole Markdown text.'),
    },
    outputSchema: { path: z.string(), bytes: z.number() },
  },
  async ({ path, content }) => {
    try {
      const target = await writableTarget(path);
      await writeFile(target, content, { flag: WRITE });
      const shown = relative(workspace, target);
      const bytes = (await stat(target)).size;
      return {
        content: [{ type: 'text' as const, text: `Wrote ${shown} (${bytes} bytes).` }],
        structuredContent: { path: shown, bytes },
      };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const reason =
        code === 'ELOOP'
          ? 'the target is a symbolic link, which this server does not write through'
          : (err as Error).message;
      return { content: [{ type: 'text' as const, text: `Write failed: ${reason}` }], isError: true };
    }
  },
);

await server.connect(new StdioServerTransport());
// The client closing stdin means "stop".
process.stdin.on('end', () => process.exit(0));
