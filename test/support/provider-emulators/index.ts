/** One emulator per provider profile (models/provider-profiles.ts), by profile name. */
import type { Emulator } from './core.js';
import { startDeepSeekChat, startDeepSeekReasoner } from './deepseek.js';
import { startGeneric } from './generic.js';
import { startOllama } from './ollama.js';
import { startAzureOpenAI, startOpenAIChat, startOpenAIReasoning } from './openai.js';
import { startVllm } from './vllm.js';

export type { Emulator, Refusal, Rule } from './core.js';

/** The profile each emulator stands for, and how to start it (vLLM: started with tool calling). */
export const EMULATORS: Record<string, () => Promise<Emulator>> = {
  openai: startOpenAIChat,
  'openai-reasoning': startOpenAIReasoning,
  'azure-openai': startAzureOpenAI,
  deepseek: startDeepSeekChat,
  'deepseek-reasoner': startDeepSeekReasoner,
  vllm: () => startVllm({ toolCalling: true, alternatingTemplate: true }),
  ollama: startOllama,
  generic: startGeneric,
};
