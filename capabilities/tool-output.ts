/**
 * What the model sees of a tool's result: MCP content as text, clipped to a byte budget with a marker
 * that says how much was cut, so a huge result can neither overflow the model's context nor the
 * Session's carried state.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_OUTPUT_BYTES } from '../contract/transcript.js';

/**
 * `text`, or its longest prefix (cut on a character boundary) followed by `…[clipped: N bytes]`, so
 * that the whole is at most `maxBytes` UTF-8 bytes.
 */
export function clipToolOutput(text: string, maxBytes: number = TOOL_OUTPUT_BYTES): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  // The marker is sized for the largest count it could show, so the result never exceeds maxBytes.
  const markerBytes = Buffer.byteLength(`\n…[clipped: ${bytes.length} bytes]`);
  let keep = Math.max(0, maxBytes - markerBytes);
  // Step back over UTF-8 continuation bytes (10xxxxxx) so no character is split.
  while (keep > 0 && ((bytes[keep] ?? 0) & 0xc0) === 0x80) keep--;
  return `${bytes.subarray(0, keep).toString('utf8')}\n…[clipped: ${bytes.length - keep} bytes]`;
}

function describePart(part: CallToolResult['content'][number]): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image':
    case 'audio':
      return `[${part.type}: ${part.mimeType}, ${Math.floor((part.data.length * 3) / 4)} bytes]`;
    case 'resource_link':
      return `[resource: ${part.uri}${part.name ? ` (${part.name})` : ''}]`;
    case 'resource':
      return 'text' in part.resource ? part.resource.text : `[resource: ${part.resource.uri}]`;
    default:
      return '';
  }
}

/**
 * A call's result as text: the content parts joined by newlines (binary parts described, not
 * inlined), then `structuredContent` as JSON unless a text part already carries exactly that JSON
 * (the MCP spec asks servers to send both).
 */
export function toolResultText(result: CallToolResult): string {
  const parts = (result.content ?? []).map(describePart).filter((p) => p !== '');
  if (result.structuredContent !== undefined) {
    const json = JSON.stringify(result.structuredContent);
    const echoed = parts.some((p) => {
      try {
        return JSON.stringify(JSON.parse(p)) === json;
      } catch {
        return false;
      }
    });
    if (!echoed) parts.push(json);
  }
  return parts.join('\n');
}
