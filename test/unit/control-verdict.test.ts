import { describe, expect, it } from 'vitest';
import { createPolicyActivities } from '../../activities/worker-policy.js';
import { signControl, type ControlKey } from '../../contract/control-signature.js';
import type { SessionState } from '../../contract/state.js';
import { REPLAY_WINDOW_PER_KIND, rememberSigned, replayRefusal } from '../../workflows/control/replay-window.js';

const k1: ControlKey = { id: 'k1', secret: new Uint8Array(32).fill(1) };
const k2: ControlKey = { id: 'k2', secret: new Uint8Array(32).fill(2) };
const at = 1_800_000_000_000;
const body = { commandId: 'c-1', name: 'pause' };
const request = (signature: unknown) => ({ kind: 'command' as const, sessionId: 's-1', payload: body, signature, at });

describe('checkControl: the worker judges by its configuration now', () => {
  it('without keys accepts anything, signed or not, and says signing is not required', async () => {
    const open = createPolicyActivities();
    expect(await open.checkControl(request(null))).toEqual({
      required: false,
      accepted: true,
      keyId: null,
      reason: null,
    });
  });

  it('with keys refuses unsigned, unknown-key, expired, too long-lived and tampered items, and names the key it accepted', async () => {
    const keyed = createPolicyActivities({ controlKeys: [k2], maxSignatureLifetimeMs: 60_000 });
    const check = (signature: unknown) => keyed.checkControl(request(signature));
    expect((await check(null)).reason).toMatch(/^unsigned command: this worker accepts only signed control/);
    expect((await check(signControl(k1, 'command', 's-1', body, at + 1_000))).reason).toMatch(
      /signed with key "k1", which is not one of this worker's control keys/,
    );
    expect((await check(signControl(k2, 'command', 's-1', body, at))).reason).toMatch(/expired at/);
    expect((await check(signControl(k2, 'command', 's-1', body, 8.64e15))).reason).toMatch(
      /longer than this worker's maximum signature lifetime of 60000 ms/,
    );
    expect((await check(signControl(k2, 'command', 's-2', body, at + 1_000))).reason).toMatch(/MAC does not match/);
    expect(await check(signControl(k2, 'command', 's-1', body, at + 60_000))).toEqual({
      required: true,
      accepted: true,
      keyId: 'k2',
      reason: null,
    });
  });
});

describe('the replay window', () => {
  it('refuses a MAC already used, forgets it once expired', () => {
    const window: SessionState['replayWindow'] = {};
    expect(replayRefusal(window, 'command', 'mac-a', at + 10)).toBeNull();
    rememberSigned(window, 'command', 'mac-a', at + 10, at);
    expect(replayRefusal(window, 'command', 'mac-a', at + 10)).toMatch(/already used/);
    // Another kind has its own window.
    expect(replayRefusal(window, 'approval', 'mac-a', at + 10)).toBeNull();
    rememberSigned(window, 'command', 'mac-b', at + 30, at + 20);
    expect(window['command']?.macs).toEqual([['mac-b', at + 30]]);
  });

  it('when full, drops the soonest to expire and refuses any signature expiring no later than it', () => {
    const window: SessionState['replayWindow'] = {};
    for (let i = 0; i <= REPLAY_WINDOW_PER_KIND; i++)
      rememberSigned(window, 'approval', `mac-${i}`, at + 1_000 + i, at);
    expect(window['approval']?.macs).toHaveLength(REPLAY_WINDOW_PER_KIND);
    expect(window['approval']?.floor).toBe(at + 1_000);
    // mac-0 was forgotten, yet its replay is still refused by the floor.
    expect(replayRefusal(window, 'approval', 'mac-0', at + 1_000)).toMatch(/may be a replay/);
    expect(replayRefusal(window, 'approval', 'mac-new', at + 5_000)).toBeNull();
  });
});
