/**
 * CPU profiles of bench scenarios, taken in-process with the inspector (the worker runs in this
 * process, so workflow code, activities and the SDK's bridge all show). Each profile is written as a
 * `.cpuprofile` (open it in Chrome DevTools) and summarised as the top functions by self time.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** Top functions by self time, with their share of all samples. */
export function topFunctions(profile: { nodes: ProfileNode[] }, limit = 15): Array<{ fn: string; pct: number }> {
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    total += hits;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^.*\/(node_modules\/)?/, '');
    const key = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + hits);
  }
  return [...byFunction.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([fn, hits]) => ({ fn, pct: Number(((100 * hits) / Math.max(1, total)).toFixed(1)) }));
}

/** Runs `work`, profiling it when `dir` is set. */
export async function profiled<T>(dir: string | undefined, name: string, work: () => Promise<T>): Promise<T> {
  if (!dir) return work();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    console.log(`  top self time during ${name}:`);
    for (const { fn, pct } of topFunctions(profile)) {
      console.log(`    ${pct.toFixed(1).padStart(5)}%  ${fn}`);
    }
  }
}
