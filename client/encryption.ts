/**
 * Payload encryption: an AES-256-GCM PayloadCodec with key ids, so keys can be rotated without
 * losing old histories. `HARNESS_ENCRYPTION_KEYS=id1:base64key,id2:base64key` — the first key
 * encrypts, every listed key decrypts. Backend services, the worker and the CLI all use this module,
 * so whatever one of them writes the others can read.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import {
  DefaultFailureConverter,
  METADATA_ENCODING_KEY,
  defaultPayloadConverter,
  type LoadedDataConverter,
  type Payload,
  type PayloadCodec,
} from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

/** The `encoding` metadata value of an encrypted payload (the same as Temporal's encryption samples). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata key naming the key that encrypted a payload. */
export const KEY_ID_METADATA = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** One AES-256 key and the id written next to every payload it encrypts. */
export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/** A bad `HARNESS_ENCRYPTION_KEYS` value, or a payload that no configured key can open. */
export class EncryptionError extends Error {
  override name = 'EncryptionError';
}

/**
 * Parses `id1:base64key,id2:base64key`. Throws EncryptionError for a missing id, a key that is not
 * 32 bytes, or a repeated id. The key text is never put into an error message.
 */
export function parseEncryptionKeys(value: string): EncryptionKey[] {
  const keys = value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part, index) => {
      const colon = part.indexOf(':');
      const id = colon > 0 ? part.slice(0, colon).trim() : '';
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) {
        throw new EncryptionError(
          `HARNESS_ENCRYPTION_KEYS entry ${index + 1}: expected id:base64key with an id of letters, digits, . _ -`,
        );
      }
      const key = Buffer.from(part.slice(colon + 1).trim(), 'base64');
      if (key.length !== KEY_BYTES) {
        throw new EncryptionError(
          `HARNESS_ENCRYPTION_KEYS key "${id}" is ${key.length} bytes; AES-256 needs ${KEY_BYTES} (openssl rand -base64 32)`,
        );
      }
      return { id, key };
    });
  const ids = new Set<string>();
  for (const { id } of keys) {
    if (ids.has(id)) throw new EncryptionError(`HARNESS_ENCRYPTION_KEYS names key "${id}" twice`);
    ids.add(id);
  }
  return keys;
}

/**
 * Encrypts every payload with the first key; decrypts with whichever key the payload names.
 * Payloads that were never encrypted pass through decode unchanged, so turning encryption on keeps
 * older histories readable.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;
  private readonly current: EncryptionKey;

  constructor(keys: readonly EncryptionKey[]) {
    const first = keys[0];
    if (!first) throw new EncryptionError('AesGcmPayloadCodec needs at least one key');
    this.current = first;
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** The id of the key new payloads are encrypted with. */
  get currentKeyId(): string {
    return this.current.id;
  }

  encode(payloads: Payload[]): Promise<Payload[]> {
    return settle(() => payloads.map((payload) => this.encrypt(payload)));
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return settle(() => payloads.map((payload) => this.decrypt(payload)));
  }

  private encrypt(payload: Payload): Payload {
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA]: Buffer.from(this.current.id),
      },
      data: sealed,
    };
  }

  private decrypt(payload: Payload): Payload {
    const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
    if (!encoding || Buffer.from(encoding).toString() !== ENCRYPTED_ENCODING) return payload;
    const idBytes = payload.metadata?.[KEY_ID_METADATA];
    const id = idBytes ? Buffer.from(idBytes).toString() : '';
    const key = this.byId.get(id);
    if (!key) {
      // Thrown, not passed through: a worker must not run a workflow on ciphertext. Adding the key
      // to HARNESS_ENCRYPTION_KEYS and restarting lets the retried workflow task succeed.
      throw new EncryptionError(`payload encrypted with key "${id}", which HARNESS_ENCRYPTION_KEYS does not list`);
    }
    const sealed = Buffer.from(payload.data ?? new Uint8Array());
    if (sealed.length < IV_BYTES + TAG_BYTES) throw new EncryptionError('encrypted payload is truncated');
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new EncryptionError(
        `payload failed authentication with key "${id}" (tampered, or a different key of that id)`,
      );
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}

/** Runs `fn` and turns a throw into a rejection, as callers of a PayloadCodec expect. */
function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

/** The codec `HARNESS_ENCRYPTION_KEYS` describes, or undefined when it is unset or empty. */
export function codecFromEnv(env: NodeJS.ProcessEnv = process.env): AesGcmPayloadCodec | undefined {
  const value = env.HARNESS_ENCRYPTION_KEYS?.trim();
  return value ? new AesGcmPayloadCodec(parseEncryptionKeys(value)) : undefined;
}

/**
 * The client-side data converter for a codec: payloads through the codec, and failure messages and
 * stack traces moved into an encoded payload too, since an activity error can quote user text.
 */
export function encryptedDataConverter(codec: PayloadCodec): LoadedDataConverter {
  return {
    payloadConverter: defaultPayloadConverter,
    payloadCodecs: [codec],
    failureConverter: new DefaultFailureConverter({ encodeCommonAttributes: true }),
  };
}
