/**
 * README.md's ```sh blocks as tests read them: each block under its heading, split into commands
 * (a line ending in `\` continues on the next), each command with the output the README shows for it
 * (the `#   ` comment lines right after it). Tests run the commands as written, so a README edit that
 * breaks one fails CI.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One command of a block, as `sh -c` runs it (its trailing `# comment` included: sh ignores it). */
export interface ReadmeCommand {
  text: string;
  /** The output lines the README shows under the command (its `#   ` lines, without the `#`), trimmed. */
  shows: string[];
}

export interface ReadmeBlock {
  /** The nearest heading above the block, without its `#` marks. */
  heading: string;
  /** 1-based line of the block's opening fence. */
  line: number;
  /** The block's first line: what the blocks table names it by. */
  first: string;
  commands: ReadmeCommand[];
}

export const README_PATH = join(import.meta.dirname, '..', '..', 'README.md');

/** Every ```sh block of the README, in order. */
export function readmeBlocks(text = readFileSync(README_PATH, 'utf8')): ReadmeBlock[] {
  const blocks: ReadmeBlock[] = [];
  const lines = text.split('\n');
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '');
    if (line.startsWith('```') && line.trim() !== '```sh') {
      // Another language's block: skip to its end, so a `# ` line in it is not taken for a heading.
      for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++);
      continue;
    }
    if (line.trim() !== '```sh') continue;
    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== '```'; i++) body.push(lines[i]!);
    blocks.push({ heading, line: start, first: body[0] ?? '', commands: commandsOf(body) });
  }
  return blocks;
}

function commandsOf(body: string[]): ReadmeCommand[] {
  const commands: ReadmeCommand[] = [];
  let pending = '';
  for (const line of body) {
    if (pending === '' && /^\s*#/.test(line)) {
      // A comment line under a command is output the README shows for it ("#   agent: ...").
      const shown = line.replace(/^\s*#/, '').trim();
      if (shown && commands.length > 0) commands.at(-1)!.shows.push(shown);
      continue;
    }
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    commands.push({ text: pending + line, shows: [] });
    pending = '';
  }
  return commands.filter((c) => c.text.trim() !== '');
}

/** The block under `heading` whose first line starts with `first`; throws when the README has none. */
export function readmeBlock(heading: string, first: string, blocks = readmeBlocks()): ReadmeBlock {
  const block = blocks.find((b) => b.heading === heading && b.first.startsWith(first));
  if (!block) throw new Error(`README.md has no sh block under "${heading}" starting with ${JSON.stringify(first)}`);
  return block;
}
