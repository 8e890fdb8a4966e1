/**
 * Scripted models that know nothing but the request they are sent, as a real model does: the agent
 * and the compaction role for the model server (model-server.ts). Tests that use them cannot be
 * fooled by a script: whatever they use (a file name, an artifact) must be in the request.
 *
 * The agent, from the newest user message of its request:
 * - after a tool result (the last message is a tool message): replies with what the results say;
 * - asked to write a Markdown guide ("guide" and "Markdown"): calls `write_markdown` under a file name
 *   it makes from the message's own words, with a short guide as content;
 * - asked to convert Markdown to Word: looks for `.md` paths in the request (user and tool messages,
 *   and the system message without its Skills' instructions, whose file names are examples, not
 *   files); exactly one found, it calls `markdown_to_docx` with exactly that path; none or several,
 *   it asks the user which file;
 * - otherwise: asks what to do.
 * A tool it needs that the request does not offer makes it say so instead of calling it.
 *
 * The compaction role builds its answer from the request's JSON alone: a hand-off whose `produced`
 * lists the record's artifacts, or a summary of the lines of a transcript window.
 */
import type { Handler, RecordedMessage, RecordedRequest, Reply } from './model-server.js';

/** The words a file name is made of: lower-case, no filler. */
const FILLER = new Set([
  'a',
  'an',
  'and',
  'the',
  'complete',
  'deliver',
  'write',
  'research',
  'markdown',
  'guide',
  'to',
]);

/** A file name from the message's own words, e.g. "Research ComfyUI and deliver a guide" → "comfyui-guide.md". */
export function chosenFileName(text: string): string {
  const words = text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w && !FILLER.has(w));
  return `${words.slice(0, 3).join('-') || 'notes'}-guide.md`;
}

/** The system message without the Skills' instructions (a Skill section runs until the next known heading). */
export function systemWithoutSkills(system: string): string {
  const kept: string[] = [];
  let inSkill = false;
  for (const line of system.split('\n')) {
    if (line.startsWith('## Skill:')) inSkill = true;
    else if (/^(Loaded tools:|## This Session|Artifacts of this Session|Earlier phases of this Session)/.test(line))
      inSkill = false;
    if (!inSkill) kept.push(line);
  }
  return kept.join('\n');
}

const MD_PATH = /(?:[\w.-]+\/)*[\w.-]+\.md\b/g;

/** The distinct `.md` paths the request holds, in the order they first appear. */
export function markdownPaths(messages: RecordedMessage[]): string[] {
  const texts = messages.map((m) => (m.role === 'system' ? systemWithoutSkills(m.content) : m.content));
  return [...new Set(texts.flatMap((t) => t.match(MD_PATH) ?? []))];
}

function offers(req: RecordedRequest, name: string): boolean {
  return req.tools.some((t) => t.name === name);
}

/** The honest agent (see the module comment). */
export const honestAgent: Handler = (req): Reply => {
  const last = req.messages.at(-1);
  if (last?.role === 'tool') {
    let start = req.messages.length;
    while (start > 0 && req.messages[start - 1]?.role === 'tool') start--;
    const results = req.messages.slice(start);
    return { content: `Done. ${results.map((m) => m.content.split('\n')[0]).join(' ')}` };
  }
  const task = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  if (/markdown/i.test(task) && /guide/i.test(task) && !/convert/i.test(task)) {
    if (!offers(req, 'write_markdown'))
      return { content: 'I have no tool to write files here; where should the guide go?' };
    const path = chosenFileName(task);
    const content = `# ${task}\n\n## Install\n\n1. Download it.\n2. Run it.\n`;
    return { toolCalls: [{ name: 'write_markdown', arguments: { path, content } }] };
  }
  if (/convert/i.test(task) && /(word|docx)/i.test(task)) {
    const paths = markdownPaths(req.messages);
    if (paths.length !== 1) {
      const seen = paths.length === 0 ? 'I cannot find one in this session' : `I see ${paths.join(', ')}`;
      return { content: `Which Markdown file should I convert? ${seen}.` };
    }
    if (!offers(req, 'markdown_to_docx')) return { content: 'I have no conversion tool loaded.' };
    return { toolCalls: [{ name: 'markdown_to_docx', arguments: { inputPath: paths[0] } }] };
  }
  return { content: 'What would you like me to do?' };
};

interface CompactionRequestJson {
  phaseGoal: string;
  inputs: string[];
  replies?: string[];
  toolCalls?: Array<{ tool: string; status: string }>;
  artifacts?: Array<{ uri: string; kind: string; tool: string }>;
}

/** The compaction request as the role received it (the user message's JSON). */
export function compactionRequestOf(req: RecordedRequest): CompactionRequestJson {
  const user = req.messages.find((m) => m.role === 'user');
  return JSON.parse(user?.content ?? '{}') as CompactionRequestJson;
}

/** The honest compaction role (see the module comment). */
export const honestCompaction: Handler = (req): Reply => {
  const request = compactionRequestOf(req);
  if (request.artifacts === undefined) return { json: { summary: request.inputs.join(' ').slice(0, 600) || '-' } };
  return {
    json: {
      produced: request.artifacts.map((a) => ({ what: `${a.kind} written by ${a.tool}`, artifact: a.uri })),
      decisions: (request.toolCalls ?? []).filter((c) => c.status === 'ok').map((c) => `used ${c.tool}`),
      constraints: request.inputs.slice(1),
      openQuestions: (request.replies ?? []).filter((r) => r.trim().endsWith('?')),
      nextSteps: [],
    },
  };
};

/** A tool the user's message names (`snake_case`), with the JSON arguments written right after it. */
interface NamedTool {
  name: string;
  arguments: Record<string, unknown>;
}

/** The tools a message names, each followed by its arguments as a JSON object: `get_forecast {"location":"Oslo"}`. */
export function namedTools(text: string): NamedTool[] {
  const named: NamedTool[] = [];
  for (const match of text.matchAll(/\b([a-z]+(?:_[a-z]+)+)\s*(\{[^}]*\})/g)) {
    try {
      named.push({ name: match[1]!, arguments: JSON.parse(match[2]!) as Record<string, unknown> });
    } catch {
      // Not JSON after all: not a tool the user named.
    }
  }
  return named;
}

/** The current turn's calls and results: every message after the newest user message. */
function turnSoFar(req: RecordedRequest): Array<{ call: { name: string; arguments: string }; result: string | null }> {
  const start = req.messages.map((m) => m.role).lastIndexOf('user');
  const messages = req.messages.slice(start + 1);
  return messages.flatMap((m) =>
    (m.toolCalls ?? []).map((call) => ({
      call,
      result: messages.find((r) => r.role === 'tool' && r.toolCallId === call.id)?.content ?? null,
    })),
  );
}

/**
 * The honest agent of capabilities found mid-phase. The user's newest message names the tools it
 * wants run with their arguments (`get_forecast {"location":"Oslo"}`), or asks to "unload the <id>
 * toolset". From its request alone:
 * - a refused capability change as the newest result: replies with the refusal;
 * - every named tool has a result in this turn: replies with the results;
 * - the next named tool is among the request's tools: calls it with the user's arguments;
 * - else, a `capabilities_search` result of this turn lists a toolset with that tool: loads exactly
 *   that toolset id (it loads nothing else, and nothing the search did not list);
 * - else, no search for it yet in this turn: searches with the tool's words;
 * - else says the catalog has nothing that offers it.
 */
export const capabilityAgent: Handler = (req): Reply => {
  const task = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const done = turnSoFar(req);
  const last = req.messages.at(-1);
  if (last?.role === 'tool' && /^\[error\] capabilities_(load|unload): refused/.test(last.content)) {
    return { content: `I could not get what I need: ${last.content}` };
  }
  const unload = /unload the ([\w-]+) toolset/i.exec(task)?.[1];
  if (unload) {
    const result = done.find((d) => d.call.name === 'capabilities_unload')?.result;
    if (result == null)
      return { toolCalls: [{ name: 'capabilities_unload', arguments: { kind: 'toolset', id: unload } }] };
    return { content: `${result}. Tools now: ${req.tools.map((t) => t.name).join(', ')}` };
  }
  const wanted = namedTools(task);
  if (wanted.length === 0) return { content: 'What would you like me to do?' };
  const next = wanted.find((tool) => !done.some((d) => d.call.name === tool.name && d.result !== null));
  if (!next) {
    const results = wanted.map((tool) => done.find((d) => d.call.name === tool.name)?.result ?? '');
    return { content: `Done. ${results.join(' ')}` };
  }
  if (offers(req, next.name)) return { toolCalls: [{ name: next.name, arguments: next.arguments }] };
  const query = next.name.replace(/_/g, ' ');
  const searches = done.filter((d) => d.call.name === 'capabilities_search' && d.result !== null);
  for (const search of searches) {
    const found = (
      JSON.parse(search.result ?? '{}') as { found?: Array<{ kind: string; id: string; tools?: string[] }> }
    ).found;
    const toolset = found?.find((f) => f.kind === 'toolset' && f.tools?.includes(next.name));
    if (toolset) return { toolCalls: [{ name: 'capabilities_load', arguments: { kind: 'toolset', id: toolset.id } }] };
  }
  if (!searches.some((d) => d.call.arguments.includes(query))) {
    return { toolCalls: [{ name: 'capabilities_search', arguments: { query } }] };
  }
  return { content: `No capability in the catalog offers ${next.name}.` };
};

/** A user's confirmation that the Session's responsibility changes: "Yes, switch this Session to: <task>". */
const CONFIRMS_SWITCH = /\byes\b[^:]*\bswitch this session to:\s*(.+)$/i;

/**
 * The honest agent of goal changes. From its request alone:
 * - after a `propose_goal_change` result: replies with that result;
 * - the request offers `propose_goal_change` and the newest user message confirms a switch ("Yes,
 *   switch this Session to: <task>"): proposes <task> as the session goal, quoting the user's words;
 * - the request offers it without such a confirmation (a conflict or uncertainty): asks the user
 *   whether to switch, naming the session goal its system message states;
 * - otherwise: says it works on the phase goal its system message states.
 */
export const goalAgent: Handler = (req): Reply => {
  const last = req.messages.at(-1);
  if (last?.role === 'tool') return { content: `Noted: ${last.content}` };
  const system = req.messages.find((m) => m.role === 'system')?.content ?? '';
  const goalLine = (label: string) => new RegExp(`^${label}: (.*)$`, 'm').exec(system)?.[1] ?? '';
  const user = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  if (offers(req, 'propose_goal_change')) {
    const confirmed = CONFIRMS_SWITCH.exec(user);
    if (confirmed?.[1]) {
      return {
        toolCalls: [{ name: 'propose_goal_change', arguments: { goal: confirmed[1].trim(), confirmation: user } }],
      };
    }
    return {
      content: `That differs from this Session's goal "${goalLine('Session-wide goal')}". Should I switch this Session to it?`,
    };
  }
  return { content: `Working on: ${goalLine('Current phase goal')}` };
};
