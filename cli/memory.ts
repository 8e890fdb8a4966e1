/**
 * `harness memory add | list | rm`: the memory items Sessions recall, in the worker's store: SQLite
 * (found by the worker's own rule, memoryDbPath, so both open the same file) or the shared
 * PostgreSQL store named by `--url` / HARNESS_MEMORY_URL.
 */
import { Option, type Command } from 'commander';
import type * as MemoryStoreModule from '../capabilities/memory-store.js';
import { clip } from '../contract/text.js';
import type { CommandContext } from './context.js';
import { collect, positiveInt } from './options.js';
import { NotFoundError } from './run.js';

interface ListOptions {
  scope?: string;
  tag?: string;
  limit: number;
  json?: boolean;
}

export function addMemoryCommands(program: Command, { line }: CommandContext): void {
  const memory = program
    .command('memory')
    .description('manage memory items the Sessions can recall')
    .option(
      '--db <file>',
      "memory database (default: the worker's: $HARNESS_MEMORY_DB, else $HARNESS_DATA_DIR/memory.db, else .data/memory.db)",
    )
    .addOption(new Option('--url <url>', 'shared PostgreSQL memory store (instead of --db)').env('HARNESS_MEMORY_URL'));

  /** Opens the store named by `--db` or the worker's rule, runs `fn`, and closes it. */
  const withStore = async <T>(
    cmd: Command,
    fn: (memories: MemoryStoreModule.MemoryBackend, store: typeof MemoryStoreModule) => Promise<T>,
  ): Promise<T> => {
    // Loaded on use: the native SQLite driver is not needed by any other command.
    const [store, { openMemoryStore }, { memoryDbPath }] = await Promise.all([
      import('../capabilities/memory-store.js'),
      import('../capabilities/open-memory-store.js'),
      import('../worker/config.js'),
    ]);
    const { db, url } = cmd.optsWithGlobals<{ db?: string; url?: string }>();
    const memories = await openMemoryStore({ url, file: db ?? memoryDbPath(process.env) });
    try {
      return await fn(memories, store);
    } finally {
      await memories.close();
    }
  };

  memory
    .command('add')
    .description('add a memory item')
    .argument('<text>', 'memory text')
    .option('--tag <tag>', 'tag (repeatable)', collect, [])
    .option('--scope <scope>', 'global, session:<id> or user:<id>', 'global')
    .action(async (text: string, opts: { tag: string[]; scope: string }, cmd: Command) => {
      await withStore(cmd, async (memories, store) => {
        const item = await memories.add({ text, tags: opts.tag, scope: store.parseMemoryScope(opts.scope) });
        line(`added memory ${item.id} (${store.formatMemoryScope(item.scope)})`);
      });
    });

  memory
    .command('list')
    .description('list memory items')
    .option('--scope <scope>', 'only this scope: global, session:<id> or user:<id>')
    .option('--tag <tag>', 'only items with this tag')
    .addOption(new Option('--limit <n>', 'most items').argParser(positiveInt).default(100))
    .option('--json', 'print as JSON')
    .action(async (opts: ListOptions, cmd: Command) => {
      await withStore(cmd, async (memories, store) => {
        const items = await memories.list({
          limit: opts.limit,
          ...(opts.scope !== undefined ? { scope: store.parseMemoryScope(opts.scope) } : {}),
          ...(opts.tag !== undefined ? { tag: opts.tag } : {}),
        });
        if (opts.json) return line(JSON.stringify(items, null, 2));
        if (items.length === 0) return line('no memory items');
        for (const item of items) {
          const tags = item.tags.length > 0 ? ` [${item.tags.join(', ')}]` : '';
          line(`${item.id}\t${store.formatMemoryScope(item.scope)}\t${clip(item.text, 100)}${tags}`);
        }
      });
    });

  memory
    .command('rm')
    .description('remove a memory item')
    .argument('<id>', 'memory id')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      await withStore(cmd, async (memories) => {
        if (!(await memories.remove(id))) throw new NotFoundError(`no memory item ${id}`);
        line(`removed memory ${id}`);
      });
    });
}
