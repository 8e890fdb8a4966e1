/**
 * The sticky cache's size: HARNESS_MAX_CACHED_WORKFLOWS parsing, the rule that sizes it from the
 * workflow thread's heap limit, and the start-up line. The worker process that lives by it is
 * test/sticky-cache.test.ts.
 */
import { getHeapStatistics } from 'node:v8';
import { noopMetricMeter } from '@temporalio/common';
import { DefaultLogger, type WorkerOptions } from '@temporalio/worker';
import { compileWorkerOptions } from '@temporalio/worker/lib/worker-options.js';
import { describe, expect, it } from 'vitest';
import {
  ACTIVATION_LIMIT,
  HEAP_FRACTION,
  SESSION_HEAP_MIB,
  THREAD_BASE_MIB,
  cacheSizeFor,
  stickyCache,
  workflowThreadHeapLimit,
} from '../../worker/capacity.js';
import { ConfigError, loadConfig } from '../../worker/config.js';

const MIB = 1024 * 1024;

describe('HARNESS_MAX_CACHED_WORKFLOWS', () => {
  it('is unset by default, takes 0 (no cache) or a size of at least 2, and refuses 1', () => {
    expect(loadConfig({}).worker.maxCachedWorkflows).toBeUndefined();
    expect(loadConfig({ HARNESS_MAX_CACHED_WORKFLOWS: '0' }).worker.maxCachedWorkflows).toBe(0);
    expect(loadConfig({ HARNESS_MAX_CACHED_WORKFLOWS: '250' }).worker.maxCachedWorkflows).toBe(250);
    expect(() => loadConfig({ HARNESS_MAX_CACHED_WORKFLOWS: '1' })).toThrow(/HARNESS_MAX_CACHED_WORKFLOWS: must be 0/);
    expect(() => loadConfig({ HARNESS_MAX_CACHED_WORKFLOWS: 'lots' })).toThrow(ConfigError);
  });
});

describe('the computed cache', () => {
  it('fits its Sessions, with headroom, in what the heap has beyond the thread’s base', () => {
    for (const limitMib of [240, 1_072, 2_096, 4_144, 16_432]) {
      const size = cacheSizeFor(limitMib * MIB);
      expect(THREAD_BASE_MIB + size * SESSION_HEAP_MIB).toBeLessThanOrEqual(
        THREAD_BASE_MIB + (limitMib - THREAD_BASE_MIB) * HEAP_FRACTION,
      );
      // Not needlessly small either: one more Session would pass the budget.
      expect(THREAD_BASE_MIB + (size + 1) * SESSION_HEAP_MIB).toBeGreaterThan(
        THREAD_BASE_MIB + (limitMib - THREAD_BASE_MIB) * HEAP_FRACTION,
      );
    }
    expect(cacheSizeFor(4_144 * MIB)).toBe(708);
    // A heap too small for the rule still caches a few Sessions.
    expect(cacheSizeFor(64 * MIB)).toBe(10);
  });

  it('reads the heap limit in a worker thread, which gets the main thread’s', async () => {
    expect(await workflowThreadHeapLimit()).toBe(getHeapStatistics().heap_size_limit);
  });

  it('says what it chose and why', async () => {
    const computed = await stickyCache(undefined);
    expect(computed.configured).toBe(false);
    expect(computed.size).toBe(cacheSizeFor(computed.heapLimitBytes));
    expect(computed.line).toMatch(
      new RegExp(
        `^sticky cache: ${computed.size} Sessions, ~${SESSION_HEAP_MIB} MB each, heap limit \\d+\\.\\d\\d GB$`,
      ),
    );
    const set = await stickyCache(300);
    expect(set).toMatchObject({ size: 300, configured: true });
    expect(set.line).toContain('300 Sessions (HARNESS_MAX_CACHED_WORKFLOWS)');
    expect((await stickyCache(0)).line).toMatch(/^sticky cache: off \(HARNESS_MAX_CACHED_WORKFLOWS\)/);
  });
});

describe('ACTIVATION_LIMIT', () => {
  it('reaches the SDK: its untyped isolateExecutionTimeout replaces the 5 s default', () => {
    const compile = (extra: Partial<WorkerOptions>) =>
      compileWorkerOptions({ taskQueue: 'q', ...extra }, new DefaultLogger('ERROR'), noopMetricMeter);
    expect(compile({}).isolateExecutionTimeoutMs).toBe(5_000);
    const limited = compile({ isolateExecutionTimeout: ACTIVATION_LIMIT } as Partial<WorkerOptions>);
    expect(limited.isolateExecutionTimeoutMs).toBe(30_000);
  });
});
