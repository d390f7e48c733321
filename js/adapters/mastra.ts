/**
 * autocontext for Mastra: an input processor that keeps every model call of an agent inside the
 * window, and the `context_reload` tool.
 *
 * ```ts
 * import { Agent } from '@mastra/core/agent';
 * import { AutoContextMemory } from 'autocontext';
 * import { autocontextProcessor } from 'autocontext/mastra';
 *
 * const context = autocontextProcessor((threadId) =>
 *   new AutoContextMemory({ format: 'ai-sdk', maxToken: 128_000, summarize, store, sessionId: threadId }));
 * const agent = new Agent({ ..., tools: { ...tools, ...context.tools }, inputProcessors: [context] });
 * ```
 *
 * The processor works in `processLLMRequest`, on the prompt of each model call after Mastra
 * built it (every step of `generate` / `stream`, tool continuations included). It changes only
 * what that call sends: Mastra's message list, its memory and the UI keep every message. The
 * prompt's leading system messages pass through untouched (count them in `reservedTokens`);
 * the rest is the conversation, held by one memory per thread (Mastra's thread id, else
 * `'default'`) and compressed there, so summaries carry over from step to step and from call
 * to call while the thread's history grows at its end. Mastra stamps each part with its own
 * `providerOptions.mastra` (a creation time), which differs when the same history is passed
 * again; messages are compared without it. Give the agent the thread's whole history (Mastra
 * memory with `lastMessages: false`, or the full list to `generate`): a window that drops old
 * messages on its own makes every call start the conversation over.
 *
 * Nothing here imports Mastra or the engine: the processor and the tool are plain objects of
 * the shapes Mastra takes (an AI SDK tool), and the memories come from the host's factory.
 *
 * @module
 */

import { reloadInputSchema, type AiSdkReloadTool } from './ai-sdk.js';
import { AutoContextError } from '../errors.js';
import { checkOptions } from './options.js';
import { Sessions, type AdapterMemory } from './sessions.js';
import type { CompressResult, ReloadArguments } from '../types.js';
import { wireJson } from '../wire.js';

/**
 * The fields of Mastra's `processLLMRequest` arguments the processor reads; `P` is the prompt's
 * type (Mastra's `LanguageModelV2Prompt`), which the processor gives back compressed.
 */
export interface LLMRequestArgs<P extends readonly unknown[] = unknown[]> {
  /** The provider-level prompt of this call (`LanguageModelV2Prompt` and later). */
  prompt: P;
  /** Mastra's request context: the thread id is read from it. */
  requestContext?: { get(key: string): unknown } | undefined;
  /** Which step of the run this is. */
  stepNumber?: number;
}

/** Options of {@link autocontextProcessor}. */
export interface MastraProcessorOptions {
  /** The processor's id (default `'autocontext'`). */
  id?: string;
  /** Threads whose memories are kept at once, the least recently used dropped first (default 1000). */
  maxThreads?: number;
  /** Called after each pass that changed a call's prompt. */
  onCompress?: (result: CompressResult, threadId: string) => void;
}

/** The processor {@link autocontextProcessor} returns: put it in `inputProcessors` and spread `tools` into the agent's tools. */
export interface AutoContextProcessor<T extends AdapterMemory = AdapterMemory> {
  /** The processor's id. */
  readonly id: string;
  /** A name for Mastra's traces. */
  readonly name: string;
  /**
   * Compresses the prompt of each model call: the messages it gives back are the ones Mastra
   * gave, or the engine's rewrites and notes in the same provider-level shape.
   */
  processLLMRequest<P extends readonly unknown[]>(args: LLMRequestArgs<P>): Promise<{ prompt: P }>;
  /** `{ context_reload }`, an AI SDK tool Mastra runs; spread it into the agent's `tools`. */
  readonly tools: { context_reload: MastraReloadTool };
  /** The memory of a thread (made when there is none), for its `events()`, `offloads()` and the rest. */
  memory(threadId?: string): T;
}

/** The reload tool as Mastra takes it: an AI SDK tool, with the `id` Mastra's tool type asks for. */
export interface MastraReloadTool extends AiSdkReloadTool {
  /** `'context_reload'`. */
  readonly id: string;
}

/** Mastra's thread id in a request context, as its own processors read it. */
function threadOf(context: { get(key: string): unknown } | undefined): string {
  const direct = context?.get('mastra__threadId');
  if (typeof direct === 'string' && direct !== '') return direct;
  const memory = context?.get('MastraMemory') as { thread?: { id?: unknown } } | undefined;
  const id = memory?.thread?.id;
  return typeof id === 'string' && id !== '' ? id : 'default';
}

/** A copy of a value without Mastra's own `providerOptions.mastra` stamps, at any depth of a message. */
function unstamped(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unstamped);
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'providerOptions' && v !== null && typeof v === 'object' && 'mastra' in v) {
      const { mastra: _stamp, ...rest } = v as Record<string, unknown>;
      if (Object.keys(rest).length > 0) out[k] = rest;
      continue;
    }
    out[k] = unstamped(v);
  }
  return out;
}

function requireAiSdk(memory: AdapterMemory): void {
  const def = memory?.reloadTool?.() as Record<string, unknown> | null | undefined;
  if (def === null || typeof def !== 'object' || !('inputSchema' in def)) {
    throw new AutoContextError('INVALID_CONFIG', "autocontextProcessor needs memories made with format: 'ai-sdk'", { field: 'format' });
  }
}

/**
 * A Mastra input processor that compresses the prompt of every model call, with one memory per
 * thread made by `memory(threadId)` (format `'ai-sdk'`; use the thread id, or anything stable,
 * as its `sessionId` so its offloads have their own keys), and the `context_reload` tool in
 * `tools`.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` when `memory` is not a function (a memory
 *   included: one per thread is made) or the options are a memory, `INVALID_CONFIG` when an
 *   option is not one this adapter reads or `memory` makes a memory of another format.
 */
export function autocontextProcessor<T extends AdapterMemory>(
  memory: (threadId: string) => T,
  options: MastraProcessorOptions = {},
): AutoContextProcessor<T> {
  checkOptions('autocontextProcessor', options, ['id', 'maxThreads', 'onCompress'], "autocontextProcessor((threadId) => new AutoContextMemory({ format: 'ai-sdk', sessionId: threadId, ... }), { maxThreads: 1000 })");
  const sessions = new Sessions(memory, options.maxThreads ?? 1000, requireAiSdk);
  // The tool's description and schema are the memories' own (every memory has the same).
  const def = sessions.memory('default').reloadTool() as { description: string; inputSchema: Record<string, unknown> };
  const execute = (input: ReloadArguments, context?: { requestContext?: { get(key: string): unknown } }) => {
    const holder = sessions.holderOf(threadOf(context?.requestContext), input?.working_context_offload_uuid);
    return holder.handleReloadCall(input as never);
  };
  return {
    id: options.id ?? 'autocontext',
    name: 'autocontext',
    tools: { context_reload: { id: 'context_reload', description: def.description, inputSchema: reloadInputSchema(def.inputSchema), execute } },
    memory: (threadId = 'default') => sessions.memory(threadId),
    async processLLMRequest<P extends readonly unknown[]>(args: LLMRequestArgs<P>): Promise<{ prompt: P }> {
      if (!Array.isArray(args?.prompt)) {
        throw new AutoContextError('INVALID_ARGUMENT', 'autocontextProcessor: processLLMRequest needs the prompt array Mastra passes', { field: 'prompt' });
      }
      const prompt = args.prompt as readonly { role?: unknown }[];
      let head = 0;
      while (head < prompt.length && prompt[head]?.role === 'system') head += 1;
      const conversation = prompt.slice(head);
      const keys = conversation.map((m) => wireJson(unstamped(m)) ?? 'undefined');
      const threadId = threadOf(args.requestContext);
      const { memory: used, result } = await sessions.sync(threadId, conversation, keys);
      if (result.compressed) options.onCompress?.(result, threadId);
      return { prompt: [...prompt.slice(0, head), ...used.messages()] as unknown as P };
    },
  };
}
