import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  EncryptionError,
  KEY_ID_METADATA,
  codecFromEnv,
  parseEncryptionKeys,
} from '../../client/encryption.js';

const key = () => randomBytes(32).toString('base64');
const text = (p: Payload) => Buffer.from(p.data ?? new Uint8Array()).toString();
const SECRET = 'Research ComfyUI for ACME-internal project Falcon';

describe('parseEncryptionKeys', () => {
  it('reads id:base64 pairs in order, the first being the one that encrypts', () => {
    const [a, b] = [key(), key()];
    const keys = parseEncryptionKeys(` k2:${a} , k1:${b}`);
    expect(keys.map((k) => k.id)).toEqual(['k2', 'k1']);
    expect(keys[0]?.key.equals(Buffer.from(a, 'base64'))).toBe(true);
  });

  it('refuses short keys, missing ids and repeated ids without echoing the key', () => {
    const short = Buffer.from('too short').toString('base64');
    expect(() => parseEncryptionKeys(`k1:${short}`)).toThrow(/"k1" is 9 bytes; AES-256 needs 32/);
    expect(() => parseEncryptionKeys(`k1:${short}`)).not.toThrow(short);
    expect(() => parseEncryptionKeys(key())).toThrow(EncryptionError);
    const k = key();
    expect(() => parseEncryptionKeys(`a:${k},a:${k}`)).toThrow(/names key "a" twice/);
  });

  it('is off when HARNESS_ENCRYPTION_KEYS is unset or blank', () => {
    expect(codecFromEnv({})).toBeUndefined();
    expect(codecFromEnv({ HARNESS_ENCRYPTION_KEYS: '  ' })).toBeUndefined();
    expect(codecFromEnv({ HARNESS_ENCRYPTION_KEYS: `x:${key()}` })?.currentKeyId).toBe('x');
  });
});

describe('AesGcmPayloadCodec', () => {
  const plain = defaultPayloadConverter.toPayload({ text: SECRET });

  it('hides the payload and names the key, and decodes to the identical payload', async () => {
    const codec = new AesGcmPayloadCodec(parseEncryptionKeys(`k1:${key()}`));
    const [sealed] = await codec.encode([plain]);
    expect(Buffer.from(sealed!.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(sealed!.metadata![KEY_ID_METADATA]!).toString()).toBe('k1');
    expect(text(sealed!)).not.toContain('ComfyUI');
    expect(Buffer.from(JSON.stringify(sealed)).toString()).not.toContain('json/plain');
    const [opened] = await codec.decode([sealed!]);
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual({ text: SECRET });
  });

  it('encrypts the same payload differently each time (fresh IV)', async () => {
    const codec = new AesGcmPayloadCodec(parseEncryptionKeys(`k1:${key()}`));
    const [a, b] = await codec.encode([plain, plain]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('rotates: a new first key encrypts, the old one still decrypts old payloads', async () => {
    const [oldKey, newKey] = [key(), key()];
    const before = new AesGcmPayloadCodec(parseEncryptionKeys(`old:${oldKey}`));
    const after = new AesGcmPayloadCodec(parseEncryptionKeys(`new:${newKey},old:${oldKey}`));
    const [oldSealed] = await before.encode([plain]);
    const [newSealed] = await after.encode([plain]);
    expect(Buffer.from(newSealed!.metadata![KEY_ID_METADATA]!).toString()).toBe('new');
    const decoded = await after.decode([oldSealed!, newSealed!]);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([{ text: SECRET }, { text: SECRET }]);
    // A worker that has only the new key must not run on ciphertext it cannot open.
    await expect(new AesGcmPayloadCodec(parseEncryptionKeys(`new:${newKey}`)).decode([oldSealed!])).rejects.toThrow(
      /key "old", which HARNESS_ENCRYPTION_KEYS does not list/,
    );
  });

  it('passes unencrypted payloads through decode, so histories from before encryption stay readable', async () => {
    const codec = new AesGcmPayloadCodec(parseEncryptionKeys(`k1:${key()}`));
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  it('refuses a tampered payload', async () => {
    const codec = new AesGcmPayloadCodec(parseEncryptionKeys(`k1:${key()}`));
    const [sealed] = await codec.encode([plain]);
    const data = Buffer.from(sealed!.data!);
    data[20] = data[20]! ^ 0xff;
    await expect(codec.decode([{ ...sealed!, data }])).rejects.toThrow();
  });
});
