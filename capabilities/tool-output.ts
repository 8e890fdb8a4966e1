/**
 * What the model sees of a tool's result: MCP content as text (the caller clips it with
 * contract/transcript.ts clipToolOutput, so a huge result can neither overflow the model's context
 * nor the Session's carried state).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

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

/** A resource a tool result links or embeds, as the Session records it among its artifacts. */
export interface ResultResource {
  uri: string;
  title?: string;
  mimeType?: string;
}

/** Most resources one result hands the Session; the rest are still described in the text. */
export const RESULT_RESOURCES_MAX = 20;

/** The MCP resources a result links (`resource_link`) or embeds (`resource`), in order, one per uri. */
export function toolResultResources(result: CallToolResult): ResultResource[] {
  const found = new Map<string, ResultResource>();
  for (const part of result.content ?? []) {
    const ref =
      part.type === 'resource_link'
        ? { uri: part.uri, title: part.title ?? part.name, mimeType: part.mimeType }
        : part.type === 'resource'
          ? { uri: part.resource.uri, mimeType: part.resource.mimeType }
          : null;
    if (!ref || typeof ref.uri !== 'string' || ref.uri.trim() === '' || found.has(ref.uri)) continue;
    found.set(ref.uri, {
      uri: ref.uri.slice(0, 2048),
      ...(typeof ref.title === 'string' && ref.title ? { title: ref.title.slice(0, 200) } : {}),
      ...(typeof ref.mimeType === 'string' && ref.mimeType ? { mimeType: ref.mimeType.slice(0, 200) } : {}),
    });
    if (found.size >= RESULT_RESOURCES_MAX) break;
  }
  return [...found.values()];
}
