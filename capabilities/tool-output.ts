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
