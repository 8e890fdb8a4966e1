/**
 * Text helpers shared by the workflow, the client and the CLI: byte-aware clipping (Temporal's
 * limits are in bytes, and Chinese text is three bytes a character) and one way to say what was
 * wrong with a payload.
 *
 * Pure module: safe to import from workflow code (no TextEncoder, no Node built-ins).
 */
import type { z } from 'zod';

/** UTF-8 size of a string. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4; // a surrogate pair is one 4-byte code point
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** UTF-8 size of a value's JSON form. */
export function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value) ?? '');
}

/** Cuts text to at most `maxBytes` UTF-8 bytes without splitting a character; a cut ends in `…`. */
export function clipBytes(text: string, maxBytes: number): string {
  if (utf8Length(text) <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = utf8Length(char);
    if (bytes + size > maxBytes - 3) break;
    bytes += size;
    end += char.length;
  }
  return `${text.slice(0, end)}…`;
}

/** One line of at most `maxChars` characters, for summaries and tables; a cut ends in `…`. */
export function clip(text: string, maxChars: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > maxChars ? `${oneLine.slice(0, Math.max(0, maxChars - 1))}…` : oneLine;
}

/** Formats a zod error as one line a caller can act on: `text: must not be empty; messageId: ...`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}

/** JSON text as a value; text that is not JSON is returned as is, for a schema to refuse. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
