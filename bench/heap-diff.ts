/**
 * What grew between two heap snapshots, by constructor: for the capacity scenario's snapshots of the
 * workflow thread (`--capacity-snapshots <dir>`), which objects a cached Session keeps per input.
 *
 *     npx tsx bench/heap-diff.ts <dir>/after-10.heapsnapshot <dir>/after-100.heapsnapshot [--top 25] [--per 90]
 *
 * Nodes are grouped by type and name (an object's constructor, a closure's function name, `string`,
 * `array`, ...); for each group it prints the difference in count and self size, largest growth
 * first, and with `--per n` the growth divided by n (e.g. Sessions × inputs between the two).
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { isEntryPoint } from '../worker/entry-point.js';

export interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

export interface Group {
  count: number;
  bytes: number;
}

/** Count and self size of a snapshot's nodes, by `type name` (names of strings and numbers left out). */
export function groupNodes(snapshot: HeapSnapshot): Map<string, Group> {
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const groups = new Map<string, Group>();
  const { nodes, strings } = snapshot;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]!] ?? '?';
    // A string's or a number's name is its value: grouped by type alone.
    const named = !['string', 'concatenated string', 'sliced string', 'number', 'heap number'].includes(type);
    const name = named ? (strings[nodes[i + nameAt]!] ?? '').slice(0, 60) : '';
    const key = named ? `${type} ${name}` : type;
    const group = groups.get(key) ?? { count: 0, bytes: 0 };
    group.count++;
    group.bytes += nodes[i + sizeAt]!;
    groups.set(key, group);
  }
  return groups;
}

export interface GroupDiff extends Group {
  key: string;
}

/** Every group's growth from `before` to `after`, largest byte growth first. */
export function diffGroups(before: Map<string, Group>, after: Map<string, Group>): GroupDiff[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys]
    .map((key) => {
      const a = before.get(key) ?? { count: 0, bytes: 0 };
      const b = after.get(key) ?? { count: 0, bytes: 0 };
      return { key, count: b.count - a.count, bytes: b.bytes - a.bytes };
    })
    .sort((x, y) => y.bytes - x.bytes);
}

const load = (path: string) => groupNodes(JSON.parse(readFileSync(path, 'utf8')) as HeapSnapshot);

if (isEntryPoint(import.meta.url)) {
  const program = new Command('heap-diff')
    .argument('<before>', 'heap snapshot file')
    .argument('<after>', 'heap snapshot file')
    .option('--top <n>', 'groups to print', (v) => Number(v), 25)
    .option('--per <n>', 'also divide the growth by n (e.g. Sessions × inputs in between)', (v) => Number(v))
    .action((beforePath: string, afterPath: string, opts: { top: number; per?: number }) => {
      const diff = diffGroups(load(beforePath), load(afterPath));
      const total = diff.reduce((sum, d) => sum + d.bytes, 0);
      const per = opts.per;
      const line = (bytes: number, count: number, key: string) =>
        `${String(bytes).padStart(11)} ${String(count).padStart(8)}` +
        (per ? ` ${(bytes / per).toFixed(0).padStart(9)} ${(count / per).toFixed(2).padStart(8)}` : '') +
        `  ${key}`;
      process.stdout.write(
        `${'bytes'.padStart(11)} ${'count'.padStart(8)}` +
          (per ? ` ${'bytes/n'.padStart(9)} ${'count/n'.padStart(8)}` : '') +
          '  type constructor\n',
      );
      for (const d of diff.slice(0, opts.top)) process.stdout.write(`${line(d.bytes, d.count, d.key)}\n`);
      const count = diff.reduce((sum, d) => sum + d.count, 0);
      process.stdout.write(`${line(total, count, 'all nodes')}\n`);
      // Compiled code grows as functions get hot and is shared by every workflow: not a Session's own.
      const data = diff.filter((d) => !d.key.startsWith('code'));
      const dataBytes = data.reduce((sum, d) => sum + d.bytes, 0);
      const dataCount = data.reduce((sum, d) => sum + d.count, 0);
      process.stdout.write(`${line(dataBytes, dataCount, 'all but code')}\n`);
    });
  program.parse();
}
