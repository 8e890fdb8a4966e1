/**
 * Ollama's OpenAI compatibility, as an older version streams: each tool call whole in one delta,
 * with its id and without `index`. Its documented field list takes `max_tokens`, `temperature`,
 * `response_format`, `stream_options.include_usage` and `tools`; fields it does not know are ignored,
 * not refused, so the emulator refuses nothing.
 * https://github.com/ollama/ollama/blob/main/docs/openai.md
 */
import { openaiErrorBody, startEmulator, type Emulator } from './core.js';

/** Ollama (profile `ollama`), with the stream shape of versions before tool-call indexes. */
export function startOllama(): Promise<Emulator> {
  return startEmulator({
    provider: 'ollama',
    rules: [],
    errorBody: openaiErrorBody,
    stream: { toolCalls: 'whole-without-index' },
  });
}
