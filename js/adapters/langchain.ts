/**
 * autocontext for LangChain v1: a `createAgent` middleware that keeps every model call inside
 * the window, with the `context_reload` tool registered by the middleware itself.
 *
 * ```ts
 * import { createAgent } from 'langchain';
 * import { AutoContextMemory } from 'autocontext';
 * import { autocontextMiddleware } from 'autocontext/langchain';
 *
 * const agent = createAgent({ model, tools, middleware: [
 *   autocontextMiddleware((threadId) => new AutoContextMemory({ maxToken: 128_000, summarize, store, sessionId: threadId })),
 * ] });
 * ```
 *
 * The middleware's `wrapModelCall` sees each model request of the agent loop (every step, tool
 * continuations included) and hands the model a compressed copy of its messages. The agent's
 * state is not touched: it keeps every message, as the graph, its checkpointer and the UI saw
 * them. Each thread (`configurable.thread_id`, else `'default'`) has one memory, in the OpenAI
 * format, whose original log is the thread's messages: while the history grows at its end, only
 * the new messages are added, so summaries carry over and the compressed prefix stays stable
 * for the provider's cache. The system message is the request's own and passes untouched
 * (count it and the tool schemas in `reservedTokens`).
 *
 * Messages are converted to OpenAI's shape for the engine (`HumanMessage` a user message,
 * `AIMessage` an assistant message with its `tool_calls`, `ToolMessage` a tool message,
 * content strings and block lists as they are) and back: a message no step rewrote is handed to
 * the model as the very instance the state holds; a rewritten one is a new instance of its
 * class with the new content, keeping the original's id, name, tool call id, status and
 * metadata; the engine's own notes are `HumanMessage`s or `AIMessage`s.
 *
 * @module
 */

import { AIMessage, createMiddleware, HumanMessage, SystemMessage, tool, ToolMessage } from 'langchain';
import type { BaseMessage } from 'langchain';
import { AutoContextError } from '../errors.js';
import { checkOptions } from './options.js';
import { Sessions, type AdapterMemory } from './sessions.js';
import type { CompressResult, ReloadArguments } from '../types.js';
import { wireJson } from '../wire.js';

/** Options of {@link autocontextMiddleware}. */
export interface LangChainMiddlewareOptions {
  /** Threads whose memories are kept at once, the least recently used dropped first (default 1000). */
  maxThreads?: number;
  /** Called after each pass that changed a model request. */
  onCompress?: (result: CompressResult, threadId: string) => void;
}

/** An OpenAI chat message as the engine reads it. */
type Wire = Record<string, unknown> & { role: string };

/** LangChain's tool call as `AIMessage.tool_calls` holds it. */
interface ToolCall {
  id?: string;
  name: string;
  args: Record<string, unknown>;
  type?: 'tool_call';
}

/** The OpenAI shape of a LangChain message; other kinds are an `INVALID_MESSAGE` error naming it. */
export function toOpenAI(message: BaseMessage, index = 0): Wire {
  const type = message.getType();
  const content = message.content as unknown;
  const name = message.name;
  const withName = (w: Wire): Wire => (typeof name === 'string' && name !== '' ? { ...w, name } : w);
  switch (type) {
    case 'human':
      return withName({ role: 'user', content });
    case 'system':
      return withName({ role: 'system', content });
    case 'tool': {
      const t = message as ToolMessage;
      return { role: 'tool', tool_call_id: t.tool_call_id, content };
    }
    case 'ai': {
      const calls = ((message as AIMessage).tool_calls ?? []) as ToolCall[];
      const text = content === '' && calls.length > 0 ? null : content;
      const w: Wire = withName({ role: 'assistant', content: text });
      if (calls.length > 0) {
        w.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) } }));
      }
      return w;
    }
    default:
      throw new AutoContextError(
        'INVALID_MESSAGE',
        `message ${index}: a LangChain ${type} message has no place in a model request autocontext can compress (human, ai, tool and system messages do)`,
        { index, field: 'type' },
      );
  }
}

function parseArgs(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string') return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The LangChain message for an OpenAI message the engine wrote or rewrote; `original` lends its id and metadata. */
export function fromOpenAI(wire: Wire, original?: BaseMessage): BaseMessage {
  const content = (wire.content ?? '') as string;
  const kept = original === undefined ? {} : { id: original.id, name: original.name, additional_kwargs: original.additional_kwargs, response_metadata: original.response_metadata };
  switch (wire.role) {
    case 'tool': {
      const t = original as ToolMessage | undefined;
      return new ToolMessage({ ...kept, content, tool_call_id: String(wire.tool_call_id), status: t?.status });
    }
    case 'assistant': {
      const calls = Array.isArray(wire.tool_calls) ? (wire.tool_calls as { id: string; function: { name: string; arguments: string } }[]) : [];
      const tool_calls = calls.map((c) => ({ id: c.id, name: c.function.name, args: parseArgs(c.function.arguments), type: 'tool_call' as const }));
      const usage = (original as AIMessage | undefined)?.usage_metadata;
      return new AIMessage({ ...kept, content, tool_calls, ...(usage === undefined ? {} : { usage_metadata: usage }) });
    }
    case 'system':
      return new SystemMessage({ ...kept, content });
    default:
      return new HumanMessage({ ...kept, content });
  }
}

/** What a memory of the thread is checked for: the OpenAI format (a function tool). */
function requireOpenAI(memory: AdapterMemory): void {
  const def = memory?.reloadTool?.() as { type?: unknown; function?: unknown } | null | undefined;
  if (def === null || typeof def !== 'object' || def.type !== 'function' || typeof def.function !== 'object') {
    throw new AutoContextError('INVALID_CONFIG', "autocontextMiddleware needs memories in the OpenAI format (format: 'openai', the default)", { field: 'format' });
  }
}

/** The thread of a run, as LangGraph's checkpointers key it. */
function threadOf(config: { configurable?: { thread_id?: unknown } } | undefined): string {
  const id = config?.configurable?.thread_id;
  return typeof id === 'string' && id !== '' ? id : 'default';
}

/**
 * A LangChain v1 middleware for `createAgent({ middleware })` that compresses every model
 * request, with one memory per thread made by `memory(threadId)` (the OpenAI format; use the
 * thread id, or anything stable, as its `sessionId` so its offloads have their own keys), and
 * registers the `context_reload` tool.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` when `memory` is not a function (a memory
 *   included: one per thread is made) or the options are a memory, `INVALID_CONFIG` when an
 *   option is not one this adapter reads or `memory` makes a memory of another format.
 */
export function autocontextMiddleware<T extends AdapterMemory>(memory: (threadId: string) => T, options: LangChainMiddlewareOptions = {}) {
  checkOptions('autocontextMiddleware', options, ['maxThreads', 'onCompress'], 'autocontextMiddleware((threadId) => new AutoContextMemory({ sessionId: threadId, ... }), { maxThreads: 1000 })');
  const sessions = new Sessions(memory, options.maxThreads ?? 1000, requireOpenAI);
  // Each message's OpenAI shape and its key, once per instance (the state hands the same ones back step after step).
  const converted = new WeakMap<BaseMessage, { wire: Wire; key: string }>();
  const convert = (m: BaseMessage, i: number) => {
    let c = converted.get(m);
    if (c === undefined) {
      const wire = toOpenAI(m, i);
      c = { wire, key: wireJson(wire) ?? '' };
      converted.set(m, c);
    }
    return c;
  };

  const def = sessions.memory('default').reloadTool() as { function: { name: string; description: string; parameters: Record<string, unknown> } };
  const reload = tool(
    (input: ReloadArguments, config?: { configurable?: { thread_id?: unknown } }) =>
      sessions.holderOf(threadOf(config), input?.working_context_offload_uuid).handleReloadCall(input as never),
    { name: def.function.name, description: def.function.description, schema: def.function.parameters },
  );

  const middleware = createMiddleware({
    name: 'autocontext',
    tools: [reload],
    wrapModelCall: async (request, handler) => {
      const list = request.messages.map(convert);
      const threadId = threadOf(request.runtime as { configurable?: { thread_id?: unknown } } | undefined);
      const { memory: used, result } = await sessions.sync(
        threadId,
        list.map((c) => c.wire),
        list.map((c) => c.key),
      );
      if (result.compressed) options.onCompress?.(result, threadId);
      // Untouched messages go back as the state's own instances; the others are rebuilt.
      const byKey = new Map<string, BaseMessage>();
      const byCall = new Map<string, BaseMessage>();
      for (const [i, c] of list.entries()) {
        const m = request.messages[i] as BaseMessage;
        if (!byKey.has(c.key)) byKey.set(c.key, m);
        if (c.wire.role === 'tool') byCall.set(String(c.wire.tool_call_id), m);
        for (const call of (c.wire.tool_calls as { id: string }[] | undefined) ?? []) byCall.set(`call:${call.id}`, m);
      }
      const messages = (used.messages() as Wire[]).map((w) => {
        const same = byKey.get(wireJson(w) ?? '');
        if (same !== undefined) return same;
        const firstCall = (w.tool_calls as { id: string }[] | undefined)?.[0]?.id;
        const original = w.role === 'tool' ? byCall.get(String(w.tool_call_id)) : firstCall === undefined ? undefined : byCall.get(`call:${firstCall}`);
        return fromOpenAI(w, original);
      });
      return handler({ ...request, messages });
    },
  });
  // The memory of a thread (made when there is none), for its events(), offloads() and the rest.
  return Object.assign(middleware, { memory: (threadId = 'default') => sessions.memory(threadId) });
}
