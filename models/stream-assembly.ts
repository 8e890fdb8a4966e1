/**
 * Assembles one chat completion from the chunks an OpenAI-compatible server streams, tolerating the
 * shapes servers actually send: tool-call deltas without `index` (older Ollama sends each call whole,
 * with an id and no index), two calls streamed at the same index (told apart by their ids), calls
 * without an id, and reasoning deltas (`reasoning_content` from DeepSeek and vLLM, `reasoning` from
 * newer Ollama and some gateways). Pure: no I/O, the caller feeds chunks in arrival order.
 */

/** One tool call as assembled: `id` is the server's, or a deterministic one when it sent none. */
export interface AssembledToolCall {
  id: string;
  /** Whether `id` was made here because the server sent none. */
  madeId: boolean;
  type: string;
  name: string;
  arguments: string;
}

/** The usage block as servers report it (OpenAI's shape; fields other servers leave out stay absent). */
export interface StreamUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

/** The assembled answer: what a plain (non-streamed) completion's first choice and usage would hold. */
export interface AssembledCompletion {
  /** The text, or null when the server sent none. */
  content: string | null;
  /** The reasoning text (`reasoning_content` / `reasoning` deltas), or null when there was none. */
  reasoning: string | null;
  toolCalls: AssembledToolCall[];
  finishReason: string | null;
  usage: StreamUsage | null;
  /** The model the server said answered, or null. */
  model: string | null;
  /** Chunks pushed, for telling an empty stream from a short one. */
  chunks: number;
}

interface Building {
  /** The server's index, when it sent one. */
  index: number | null;
  id: string | null;
  type: string;
  name: string;
  arguments: string;
}

/** What one push yields for the caller to forward as it arrives. */
export interface StreamPiece {
  text: string;
  reasoning: string;
}

/**
 * Feeds streamed `chat.completion.chunk` objects (parsed JSON) and gives the assembled completion.
 * Tool-call deltas are matched to a call by `index` when present, by `id` otherwise, and by order as
 * a last resort (a delta with neither continues the latest call, unless it names a function, which
 * starts a new one). A delta whose id differs from the id already seen at its index starts a new call:
 * two calls, not one with concatenated arguments. A call that never got an id is given
 * `call_<idPrefix>_<position>` (1-based among this answer's calls), so a retried step names it the same.
 */
export class StreamAssembly {
  private text = '';
  private sawText = false;
  private reasoningText = '';
  private readonly calls: Building[] = [];
  private finish: string | null = null;
  private usageBlock: StreamUsage | null = null;
  private modelName: string | null = null;
  private count = 0;

  /** `idPrefix` makes the ids given to calls without one, e.g. the agent step number. */
  constructor(private readonly idPrefix: string) {}

  /** Takes one chunk; returns the text and reasoning it added (empty strings for none). */
  push(chunk: unknown): StreamPiece {
    const piece: StreamPiece = { text: '', reasoning: '' };
    if (!isRecord(chunk)) return piece;
    this.count++;
    if (typeof chunk['model'] === 'string' && chunk['model']) this.modelName = chunk['model'];
    if (isRecord(chunk['usage'])) this.usageBlock = chunk['usage'];
    const choices: unknown[] = Array.isArray(chunk['choices']) ? chunk['choices'] : [];
    // Only the first choice is asked for (n is never set); a server that numbers choices keeps index 0.
    const choice = choices.find((c) => isRecord(c) && (c['index'] === undefined || c['index'] === 0));
    if (!isRecord(choice)) return piece;
    if (typeof choice['finish_reason'] === 'string') this.finish = choice['finish_reason'];
    const delta = isRecord(choice['delta']) ? choice['delta'] : {};
    if (typeof delta['content'] === 'string') {
      this.sawText = true;
      this.text += delta['content'];
      piece.text = delta['content'];
    }
    const reasoning =
      typeof delta['reasoning_content'] === 'string'
        ? delta['reasoning_content']
        : typeof delta['reasoning'] === 'string'
          ? delta['reasoning']
          : '';
    this.reasoningText += reasoning;
    piece.reasoning = reasoning;
    if (Array.isArray(delta['tool_calls'])) for (const call of delta['tool_calls']) this.pushCall(call);
    return piece;
  }

  /**
   * Takes a whole (non-streamed) `chat.completion`, as a server that answers a stream request with
   * JSON sends it: its first choice's message stands for all the deltas.
   */
  pushCompletion(completion: unknown): StreamPiece {
    if (!isRecord(completion)) return { text: '', reasoning: '' };
    const choices = Array.isArray(completion['choices']) ? completion['choices'] : [];
    const first = choices.find(isRecord);
    const message = first && isRecord(first['message']) ? first['message'] : {};
    const calls: unknown[] = Array.isArray(message['tool_calls']) ? message['tool_calls'] : [];
    return this.push({
      ...(typeof completion['model'] === 'string' ? { model: completion['model'] } : {}),
      ...(isRecord(completion['usage']) ? { usage: completion['usage'] } : {}),
      choices: [
        {
          index: 0,
          // A whole message's calls are distinct by position; indexes keep two id-less calls apart.
          delta: { ...message, tool_calls: calls.map((call, index) => (isRecord(call) ? { index, ...call } : call)) },
          finish_reason: first?.['finish_reason'] ?? null,
        },
      ],
    });
  }

  /** The completion assembled so far. */
  result(): AssembledCompletion {
    return {
      content: this.sawText ? this.text : null,
      reasoning: this.reasoningText ? this.reasoningText : null,
      toolCalls: this.calls.map((call, i) => ({
        id: call.id ?? `call_${this.idPrefix}_${i + 1}`,
        madeId: call.id === null,
        type: call.type,
        name: call.name,
        arguments: call.arguments,
      })),
      finishReason: this.finish,
      usage: this.usageBlock,
      model: this.modelName,
      chunks: this.count,
    };
  }

  private pushCall(delta: unknown): void {
    if (!isRecord(delta)) return;
    const index = typeof delta['index'] === 'number' ? delta['index'] : null;
    const id = typeof delta['id'] === 'string' && delta['id'] ? delta['id'] : null;
    const fn = isRecord(delta['function']) ? delta['function'] : {};
    const name = typeof fn['name'] === 'string' ? fn['name'] : '';
    const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : '';
    const target = this.target(index, id, name);
    if (id !== null && target.id === null) target.id = id;
    if (typeof delta['type'] === 'string' && delta['type']) target.type = delta['type'];
    if (name && !target.name) target.name = name;
    target.arguments += args;
  }

  /** The call a delta continues, or a new one (see the class comment for the order of the rules). */
  private target(index: number | null, id: string | null, name: string): Building {
    let found: Building | undefined;
    if (index !== null) {
      // The latest call at this index: a second call reusing the index follows the first.
      found = [...this.calls].reverse().find((c) => c.index === index);
      if (found && id !== null && found.id !== null && found.id !== id) found = undefined;
    } else if (id !== null) {
      found = this.calls.find((c) => c.id === id);
    } else if (!name) {
      found = this.calls.at(-1);
    }
    if (found) return found;
    const call: Building = { index, id, type: 'function', name: '', arguments: '' };
    this.calls.push(call);
    return call;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
