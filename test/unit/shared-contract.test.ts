/**
 * The shared contract module (worker/shared-contract.ts): evaluated in a fresh V8 context and frozen
 * the way the SDK freezes a preloaded module, its schemas still parse, with the same results and
 * messages as the contract's own zod schemas.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createContext, runInContext } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONTROL_SIGNALS } from '../../contract/control-signals.js';
import { MessageInput, Settings } from '../../contract/messages.js';
import { SessionState } from '../../contract/state.js';
import { describeIssues } from '../../contract/text.js';
import { buildSharedContract, sharedContractModules } from '../../worker/shared-contract.js';

type Shared = Record<string, Record<string, unknown>>;
interface Facade {
  parse(data: unknown): unknown;
  safeParse(data: unknown): {
    success: boolean;
    data?: unknown;
    error?: { issues: Parameters<typeof describeIssues>[0]['issues'] };
  };
}

/** Object.freeze over everything reachable by own properties, as the SDK's reusable VM does. */
function deepFreeze(value: unknown, seen = new WeakSet<object>()): void {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) return;
  seen.add(value);
  for (const key of Reflect.ownKeys(value)) {
    try {
      deepFreeze((value as Record<PropertyKey, unknown>)[key], seen);
    } catch {
      // Some values cannot be frozen (typed arrays); the SDK skips them too.
    }
  }
  Object.freeze(value);
}

let shared: Shared;

beforeAll(async () => {
  const { code } = await buildSharedContract();
  const context = createContext({});
  const load = runInContext(`(function (module, exports) {\n${code}\n})`, context) as (
    module: { exports: unknown },
    exports: unknown,
  ) => void;
  const module = { exports: {} as unknown };
  load(module, module.exports);
  shared = module.exports as Shared;
  deepFreeze(shared);
}, 60_000);

const facade = (module: string, name: string) => shared[module]?.[name] as Facade;

describe('shared contract', () => {
  it('carries every contract module but those that import the SDK', () => {
    const modules = sharedContractModules();
    expect(modules).toContain('messages');
    expect(modules).toContain('state');
    expect(modules).not.toContain('api');
    expect(modules).not.toContain('search-attributes');
    expect(Object.keys(shared).sort()).toEqual(modules);
  });

  it('rejects with the same messages as the contract schemas, after being frozen', () => {
    for (const bad of [{ messageId: '', text: 'x' }, { messageId: 'a', text: '   ' }, { messageId: 'a' }, 42]) {
      const direct = MessageInput.safeParse(bad);
      const viaShared = facade('messages', 'MessageInput').safeParse(bad);
      expect(viaShared.success).toBe(false);
      expect(describeIssues(viaShared.error as never)).toBe(describeIssues(direct.error!));
    }
    expect(
      describeIssues(facade('messages', 'MessageInput').safeParse({ messageId: 'a', text: '   ' }).error as never),
    ).toBe('text: text must not be empty');
  });

  it('applies the same defaults and transforms', () => {
    expect(facade('messages', 'Settings').parse({})).toEqual(Settings.parse({}));
    expect(facade('messages', 'MessageInput').parse({ messageId: '  m1  ', text: 'hi' })).toEqual(
      MessageInput.parse({ messageId: '  m1  ', text: 'hi' }),
    );
    const v1 = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', 'fixtures', 'session-state.v1.json'), 'utf8'),
    ) as {
      schemaVersion: number;
    };
    const migrated = { ...v1, schemaVersion: 2 };
    const direct = SessionState.safeParse(migrated);
    const viaShared = facade('state', 'SessionState').safeParse(migrated);
    expect(direct.success).toBe(true);
    expect(viaShared.success).toBe(true);
    expect(viaShared.data).toEqual(direct.data);
  });

  it('keeps schemas inside rows of constants behind facades (control signals)', () => {
    const rows = shared['control-signals']?.CONTROL_SIGNALS as Record<string, { schema: Facade; idField: string }>;
    const bad = { commandId: 'c1', name: 'set-goals', args: {} };
    expect(describeIssues(rows.command!.schema.safeParse(bad).error as never)).toBe(
      describeIssues(CONTROL_SIGNALS.command.schema.safeParse(bad).error!),
    );
    expect(rows.command!.idField).toBe('commandId');
    expect(Object.isFrozen(rows.command!.schema)).toBe(true);
  });
});
