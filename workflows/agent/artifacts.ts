/**
 * The Session's artifacts: what its tool calls produced or named, collected when a step is sealed.
 * Three sources, for calls that succeeded only (a failed write produced nothing):
 * - `resource`: MCP `resource_link` and embedded `resource` parts of the result (runTool hands them over);
 * - `result`: a path or URI under an ARTIFACT_KEYS key in a JSON object the result carries (MCP
 *   `structuredContent`, or an external tool's JSON output), searched two levels deep;
 * - `argument`: a path or URI under an ARTIFACT_KEYS key of the call's arguments, when the tool's name
 *   says that it writes (WRITING_TOOL). `inputPath`-style arguments of other tools name what was read,
 *   not what was made, so they are left out.
 * One entry per uri, the newest call's winning (it moves to the end); the list keeps LIMITS.artifacts.
 *
 * Pure module: safe to import from workflow code.
 */
import { LIMITS, keepLast, type Artifact, type SessionState, type ToolResource } from '../../contract/state.js';
import { clipBytes } from '../../contract/text.js';

/** Keys (compared without case, `_` and `-`) whose string value names an artifact. */
export const ARTIFACT_KEYS = [
  'path',
  'file',
  'filename',
  'filepath',
  'output',
  'outputpath',
  'outputfile',
  'outputuri',
  'uri',
  'target',
  'targetpath',
  'destination',
  'dest',
  'savedto',
] as const;
const KEYS = new Set<string>(ARTIFACT_KEYS);

/** A tool whose name says it writes: its path-like arguments name what it produced. */
export const WRITING_TOOL =
  /(^|[^a-z])(write|save|create|export|generate|render|put|upload|store|copy|move|download|append|edit)/i;

/** Longest uri or path kept, in UTF-8 bytes. */
const URI_BYTES = 1024;
/** Most artifacts one call contributes. */
const PER_CALL = 20;

/** One finished call of a sealed step, as artifacts need it. */
export interface SealedCall {
  callId: string;
  tool: string;
  arguments: string;
  status: string;
  output: string;
  resources?: ToolResource[];
}

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** Whether a string reads as a path or URI: one line, not too long, with a scheme or a path separator or extension. */
export function isPathLike(value: string): boolean {
  const text = value.trim();
  if (text === '' || text.length > URI_BYTES || /[\r\n\t]/.test(text)) return false;
  if (SCHEME.test(text) && !/^[a-z]:[\\/]/i.test(text)) return /^[a-z][a-z0-9+.-]*:\S+$/i.test(text);
  return /[/\\]/.test(text) || /\.[A-Za-z0-9]{1,10}$/.test(text);
}

function kindOf(uri: string): Artifact['kind'] {
  return SCHEME.test(uri) && !/^file:/i.test(uri) && !/^[a-z]:[\\/]/i.test(uri) ? 'uri' : 'file';
}

/** Path-like strings under ARTIFACT_KEYS in `value`, at most `depth` levels down. */
function pathsIn(value: unknown, depth: number, found: string[]): void {
  if (found.length >= PER_CALL || depth < 0 || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value.slice(0, PER_CALL)) pathsIn(item, depth - 1, found);
    return;
  }
  for (const [key, inner] of Object.entries(value)) {
    if (typeof inner === 'string') {
      if (KEYS.has(key.toLowerCase().replace(/[_-]/g, '')) && isPathLike(inner)) found.push(inner.trim());
    } else {
      pathsIn(inner, depth - 1, found);
    }
  }
}

function parseObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The JSON objects a result's text carries: the whole text, or any line of it that is one. */
function resultObjects(output: string): unknown[] {
  const whole = parseObject(output);
  if (typeof whole === 'object' && whole !== null) return [whole];
  return output
    .split('\n')
    .filter((l) => l.trimStart().startsWith('{'))
    .map(parseObject)
    .filter((v) => typeof v === 'object' && v !== null);
}

/** The artifacts one sealed call produced or named (none unless it succeeded). */
export function artifactsOfCall(call: SealedCall, seq: number, phaseIndex: number): Artifact[] {
  if (call.status !== 'ok') return [];
  const base = { tool: call.tool, callId: call.callId, seq, phaseIndex };
  const entries: Artifact[] = [];
  for (const r of call.resources ?? []) {
    entries.push({
      ...base,
      uri: clipBytes(r.uri, URI_BYTES),
      kind: 'resource',
      source: 'resource',
      title: r.title ? clipBytes(r.title, 200) : null,
      mimeType: r.mimeType ? clipBytes(r.mimeType, 200) : null,
    });
  }
  const named = (uris: string[], source: Artifact['source']) => {
    for (const uri of uris) {
      entries.push({ ...base, uri, kind: kindOf(uri), source, title: null, mimeType: null });
    }
  };
  const fromResult: string[] = [];
  for (const object of resultObjects(call.output)) pathsIn(object, 2, fromResult);
  named(fromResult, 'result');
  if (WRITING_TOOL.test(call.tool)) {
    const fromArguments: string[] = [];
    pathsIn(parseObject(call.arguments), 0, fromArguments);
    named(fromArguments, 'argument');
  }
  // One entry per uri within the call too: the first source (resource, then result) describes it best.
  const seen = new Set<string>();
  return entries.filter((a) => !seen.has(a.uri) && seen.add(a.uri)).slice(0, PER_CALL);
}

/** Adds `entries` to the Session's artifacts: one per uri, the newest moved to the end; the oldest leave first. */
export function addArtifacts(state: SessionState, entries: Artifact[]): void {
  if (entries.length === 0) return;
  const newest = new Map<string, Artifact>();
  for (const a of entries) {
    newest.delete(a.uri);
    newest.set(a.uri, a);
  }
  const kept = state.artifacts.filter((a) => !newest.has(a.uri));
  state.artifacts.splice(0, state.artifacts.length, ...kept, ...newest.values());
  keepLast(state.artifacts, LIMITS.artifacts);
}

/** Records the artifacts of a sealed step's calls, in the model's call order. */
export function recordStepArtifacts(state: SessionState, seq: number, calls: SealedCall[]): void {
  const phaseIndex = state.phases.at(-1)?.index ?? 0;
  addArtifacts(
    state,
    calls.flatMap((call) => artifactsOfCall(call, seq, phaseIndex)),
  );
}
