import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  controlMac,
  parseControlKeys,
  signControl,
  signingInput,
} from '../../contract/control-signature.js';
import { DEFAULT_WORKER_POLICY } from '../../contract/worker-policy.js';
import { createPolicyActivities } from '../../activities/worker-policy.js';

const key = { id: 'k1', secret: new Uint8Array(32).fill(1) };

describe('the signed form', () => {
  it('is canonical: key order and undefined members do not change it', () => {
    expect(canonicalJson({ b: 1, a: [{ d: undefined, c: 'x' }], e: null })).toBe('{"a":[{"c":"x"}],"b":1,"e":null}');
    expect(signingInput('approval', 's-1', 5, { approved: true, approvalId: 'a' })).toBe(
      'session-harness/control/v1\napproval\ns-1\n5\n{"approvalId":"a","approved":true}',
    );
  });

  it('is HMAC-SHA256 as node computes it, base64url without padding', async () => {
    const { createHmac } = await import('node:crypto');
    const input = signingInput('command', 's-1', 99, { commandId: 'c', name: 'pause' });
    expect(controlMac(key.secret, input)).toBe(createHmac('sha256', key.secret).update(input).digest('base64url'));
  });

  it('verifies on the worker only for the same Session, payload and key', async () => {
    const activities = createPolicyActivities({ controlKeys: [key] });
    const payload = { approvalId: '2:1:call_1', approved: true };
    const signature = signControl(key, 'approval', 's-1', payload, 1_000);
    const verify = (sessionId: string, p: Record<string, unknown>) =>
      activities.verifyControl({ kind: 'approval', sessionId, payload: p, signature });
    expect(await verify('s-1', payload)).toEqual({ valid: true, reason: null });
    expect((await verify('s-2', payload)).valid).toBe(false);
    expect((await verify('s-1', { ...payload, approved: false })).valid).toBe(false);
    expect(await activities.workerPolicy()).toEqual({ ...DEFAULT_WORKER_POLICY, signedControl: true, keyIds: ['k1'] });
  });
});

describe('parseControlKeys', () => {
  it('reads keyId:base64 pairs and never quotes a secret in its errors', () => {
    const secret = Buffer.alloc(32, 9).toString('base64');
    expect(parseControlKeys(`a:${secret}, b:${secret}`).map((k) => k.id)).toEqual(['a', 'b']);
    const short = Buffer.alloc(8, 9).toString('base64');
    expect(() => parseControlKeys(`a:${short}`)).toThrow('the secret of key "a" has 8 bytes; at least 32 are needed');
    for (const bad of [`:${secret}`, `a:${secret},a:${secret}`, '']) {
      expect(() => parseControlKeys(bad)).toThrow(/^HARNESS_CONTROL_KEYS: /);
      try {
        parseControlKeys(bad);
      } catch (err) {
        expect((err as Error).message).not.toContain(secret);
      }
    }
  });
});
