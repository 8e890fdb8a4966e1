/**
 * The AG-UI section of docs/contract.md, rendered from the gateway's own table (gateway/ag-ui.ts), so
 * the documented mapping is the one the gateway runs.
 */
import { EVENT_KINDS } from '../contract/events.js';
import { AG_UI_EVENT_MAPPING } from '../gateway/ag-ui.js';

/** The section's blocks: headings, paragraphs and a Markdown table. */
export function agUiSection(table: (head: string[], rows: string[][]) => string): string[] {
  return [
    '## AG-UI',
    'The gateway speaks AG-UI (the event protocol of chat front ends; `@ag-ui/core` 1.0 types, ' +
      '`@ag-ui/encoder` Server-Sent Events): `POST /ag-ui` takes a RunAgentInput (checked by `@ag-ui/core`’s ' +
      'schema; a bad one is a 400 with the reason) and answers that input’s run; `GET /sessions/{id}/ag-ui` ' +
      'follows a Session as one run per input (from the newest event, or `?after=<id>`; a Session that does ' +
      'not exist yet is waited for, `?wait=` ms, default 30,000). How the Session maps to it:',
    [
      '- `threadId` is the Session id; the last `user` message’s text is the input (its `id` the input’s ' +
        '`messageId`, so a repeated run is de-duplicated), sent as the authenticated principal (`send`).',
      '- A call waiting for approval ends the run with `RUN_FINISHED` outcome `interrupt`: one interrupt per ' +
        'call, `id` = the approvalId (`<seq>:<step>:<callId>`, also the toolCallId), reason `tool_approval`, ' +
        '`responseSchema` `{approved, note?, arguments?}`. A run whose `resume` entries answer it (`resolved` ' +
        'with that payload, or `cancelled` = rejected; principal with `approve`) applies the answers and goes ' +
        'on with the same input’s turn.',
      '- State (`STATE_SNAPSHOT` at each run’s start, then `STATE_DELTA` as RFC 6902 JSON Patch): ' +
        '`{sessionId, stage, goals: {session, phase}, capabilities: {skills, toolsets, memories, revision}, ' +
        'pendingApprovals: [{approvalId, tool, arguments}]}`.',
      '- A text piece replayed to a follower that joined mid-step (`agent.delta` with `catchUp: true`) is a ' +
        '`TEXT_MESSAGE_CONTENT` with metadata `{catchUp: true}`.',
    ].join('\n'),
    'What each Session event becomes:',
    table(
      ['Event', 'AG-UI'],
      EVENT_KINDS.map((kind) => [`\`${kind}\``, AG_UI_EVENT_MAPPING[kind]]),
    ),
  ];
}
