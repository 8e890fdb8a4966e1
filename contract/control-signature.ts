/**
 * Signed control: the signature that approvals, tool results, commands and a message's user identity
 * carry when a worker is configured with control keys (HARNESS_CONTROL_KEYS), and the one canonical
 * form it is computed over. The client signs with it and the worker's `verifyControl` local activity
 * checks it; the workflow never sees a key.
 *
 * The MAC is HMAC-SHA256 (`@noble/hashes`, pure JavaScript) over the UTF-8 bytes of
 *
 *     session-harness/control/v1 \n <kind> \n <sessionId> \n <expiresAt> \n <canonical JSON of the payload>
 *
 * where `kind` is `approval`, `toolResult`, `command`, `message` or `subSessionReply`, `expiresAt` is
 * epoch ms in decimal, and the payload is the signal's payload as its schema parses it, without
 * `signature` (for a message: `{ messageId, text, resources, from }`, resources `[]` when absent, plus
 * `routed` and `note` when the message carries them). Canonical JSON has
 * object keys sorted by code unit, no whitespace, and no `undefined` members; the MAC is base64url
 * without padding.
 *
 * Pure module: safe to import from workflow code.
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { z } from 'zod';

/** The signature a signed control payload carries in its `signature` field. */
export const ControlSignature = z
  .object({
    keyId: z.string().min(1).max(64),
    /** Epoch ms after which the signature is refused (workflow time). */
    expiresAt: z.number().int().positive(),
    /** base64url HMAC-SHA256 of the signing input. */
    mac: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'mac must be 43 base64url characters (HMAC-SHA256)'),
  })
  .strict();
export type ControlSignature = z.infer<typeof ControlSignature>;

/**
 * What can be signed: the control signals that act on a Session, a message's identity (and, for a
 * hand-over, its route and note), and a sub-session's reply to its parent (signed by the worker).
 */
export type SignedKind = 'approval' | 'toolResult' | 'command' | 'message' | 'subSessionReply';

/** A control key: its id (named in signatures) and its secret bytes. */
export interface ControlKey {
  id: string;
  secret: Uint8Array;
}

/** How long a signature the client makes stays valid unless told otherwise. */
export const DEFAULT_SIGNATURE_TTL_MS = 15 * 60_000;

/** JSON with sorted object keys and no undefined members: the same bytes for the same value everywhere. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The payload without its signature, as it is signed. */
export function unsigned(payload: Record<string, unknown>): Record<string, unknown> {
  const { signature: _signature, ...rest } = payload;
  return rest;
}

/**
 * The part of a message that is signed: what it says, who says it, and, when present, the route and
 * the note a hand-over carries (a message without them signs as it always did, so a signature made
 * before `routed` and `note` were covered still holds for a message that has neither).
 */
export function messageSigningPayload(message: {
  messageId: string;
  text: string;
  resources?: unknown[] | null;
  from?: unknown;
  routed?: unknown;
  note?: string | null;
}): Record<string, unknown> {
  return {
    messageId: message.messageId,
    text: message.text,
    resources: message.resources ?? [],
    from: message.from ?? null,
    // Absent members are left out of the canonical JSON (undefined), not signed as null.
    routed: message.routed ?? undefined,
    note: message.note ?? undefined,
  };
}

/** The exact text the MAC covers. */
export function signingInput(kind: SignedKind, sessionId: string, expiresAt: number, payload: unknown): string {
  return `session-harness/control/v1\n${kind}\n${sessionId}\n${expiresAt}\n${canonicalJson(payload)}`;
}

/** SHA-256 of a text's UTF-8 bytes, as lowercase hex (an approval's `argumentsHash`). */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/** base64url HMAC-SHA256 of the signing input under `secret`. */
export function controlMac(secret: Uint8Array, input: string): string {
  const bytes = hmac(sha256, secret, utf8ToBytes(input));
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Signs a payload (without `signature`) for one Session until `expiresAt`. */
export function signControl(
  key: ControlKey,
  kind: SignedKind,
  sessionId: string,
  payload: Record<string, unknown>,
  expiresAt: number,
): ControlSignature {
  return { keyId: key.id, expiresAt, mac: controlMac(key.secret, signingInput(kind, sessionId, expiresAt, payload)) };
}

export class ControlKeyError extends Error {
  override name = 'ControlKeyError';
}

/**
 * Parses `keyId:base64secret,keyId2:base64secret2` (the first signs, all verify). Secrets are at
 * least 32 bytes; errors never quote them.
 */
export function parseControlKeys(text: string, variable = 'HARNESS_CONTROL_KEYS'): ControlKey[] {
  const keys: ControlKey[] = [];
  for (const [i, part] of text.split(',').entries()) {
    const entry = part.trim();
    if (entry === '') continue;
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon).trim() : '';
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) {
      throw new ControlKeyError(
        `${variable}: entry ${i + 1} must be keyId:base64secret (keyId of letters, digits, ".", "_", "-")`,
      );
    }
    let secret: Uint8Array;
    try {
      secret = Uint8Array.from(atob(entry.slice(colon + 1).trim()), (c) => c.charCodeAt(0));
    } catch {
      throw new ControlKeyError(`${variable}: the secret of key "${id}" is not base64`);
    }
    if (secret.length < 32) {
      throw new ControlKeyError(
        `${variable}: the secret of key "${id}" has ${secret.length} bytes; at least 32 are needed`,
      );
    }
    if (keys.some((k) => k.id === id)) throw new ControlKeyError(`${variable}: key id "${id}" appears twice`);
    keys.push({ id, secret });
  }
  if (keys.length === 0) throw new ControlKeyError(`${variable}: no key given`);
  return keys;
}
