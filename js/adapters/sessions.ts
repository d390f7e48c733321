/**
 * One memory per conversation, for the framework adapters (`autocontext/langchain`,
 * `autocontext/mastra`, `autocontext/adk`).
 *
 * Frameworks keep the conversation themselves (LangChain's agent state, Mastra's message list)
 * and hand a hook the whole list before every model call. The adapters compress on the way to
 * the model only: the framework's history stays whole, and the memory of each conversation
 * (thread) holds the same list as its original log. Before each call the list is matched
 * against that log: when the log is a prefix of it, only the new messages are added, so the
 * memory's summaries and offloads carry over from call to call and the prefix the provider
 * caches stays stable; when it is not (the history was edited, the process restarted, another
 * conversation under the same key), the conversation starts over in a fresh memory from the
 * host's factory. Conversations are kept up to a bound, the least recently used dropped first.
 *
 * Nothing here imports the engine: the host's factory makes the memories, with the build
 * (`autocontext`, `/full`, `/lite`) and the options it chose.
 *
 * @module
 */

import { AutoContextError } from '../errors.js';
import { isMemory } from './options.js';
import type { CompressResult } from '../types.js';

/** What the adapters use of an `AutoContextMemory` (any build, the adapter's format). */
export interface AdapterMemory {
  /** Adds messages in the memory's format. */
  add(message: never): void;
  /** The working list. */
  messages(): unknown[];
  /** Runs a pass if needed. */
  compressIfNeeded(): Promise<CompressResult>;
  /** The `context_reload` tool definition in the memory's format. */
  reloadTool(): unknown;
  /** Answers a `context_reload` call. */
  handleReloadCall(call: never): Promise<string>;
  /** The offloads the memory wrote. */
  offloads(): { uuid: string }[];
  /** Folds the provider's count of a request into the memory's estimate. */
  observeUsage?(usage: never): unknown;
}

/** The conversation a memory serves, and the keys of the messages it holds. */
interface Entry<T> {
  memory: T;
  keys: string[];
}

/** Memories by conversation, reconciled with the framework's list before each model call. */
export class Sessions<T extends AdapterMemory> {
  readonly #factory: (threadId: string) => T;
  readonly #max: number;
  readonly #entries = new Map<string, Entry<T>>();
  readonly #check: (memory: T) => void;

  /**
   * @param factory - makes the memory of a conversation (called again when one starts over).
   * @param maxThreads - conversations kept at once.
   * @param check - throws when a memory is not of the adapter's format.
   * @param option - the adapter's name for `maxThreads`, for its error.
   */
  constructor(factory: (threadId: string) => T, maxThreads: number, check: (memory: T) => void, option = 'maxThreads') {
    if (typeof factory !== 'function') {
      const got = isMemory(factory) ? ', not a memory (one per conversation is made)' : '';
      throw new AutoContextError('INVALID_ARGUMENT', `pass a function that makes the memory of a conversation${got}: (threadId) => new AutoContextMemory({ ... })`, { field: 'memory' });
    }
    if (!(Number.isInteger(maxThreads) && maxThreads >= 1)) {
      throw new AutoContextError('INVALID_CONFIG', `${option} must be a whole number from 1, got ${String(maxThreads)}`, { field: option });
    }
    this.#factory = factory;
    this.#max = maxThreads;
    this.#check = check;
  }

  /** The memory of a conversation, made when there is none. */
  memory(threadId: string): T {
    return this.#entry(threadId).memory;
  }

  #entry(threadId: string): Entry<T> {
    let entry = this.#entries.get(threadId);
    if (entry === undefined) {
      entry = this.#fresh(threadId);
    } else {
      this.#entries.delete(threadId); // most recently used last
      this.#entries.set(threadId, entry);
    }
    return entry;
  }

  #fresh(threadId: string): Entry<T> {
    const memory = this.#factory(threadId);
    this.#check(memory);
    const entry = { memory, keys: [] };
    this.#entries.delete(threadId);
    this.#entries.set(threadId, entry);
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
    return entry;
  }

  /**
   * Brings the conversation's memory up to `messages` (the framework's whole list, in the
   * memory's format, with `keys` to compare them by), runs a pass if needed, and returns the
   * memory, whose working list is what the model should see.
   */
  async sync(threadId: string, messages: readonly unknown[], keys: readonly string[]): Promise<{ memory: T; result: CompressResult }> {
    let entry = this.#entry(threadId);
    const known = entry.keys;
    const continues = known.length <= keys.length && known.every((k, i) => keys[i] === k);
    if (!continues) entry = this.#fresh(threadId);
    const from = entry.keys.length;
    if (messages.length > from) {
      entry.memory.add(messages.slice(from) as never);
      entry.keys.push(...keys.slice(from));
    }
    const result = await entry.memory.compressIfNeeded();
    return { memory: entry.memory, result };
  }

  /**
   * The memory to answer a reload of `uuid` in conversation `threadId`: the conversation's own,
   * else any kept conversation's that wrote that offload, else the conversation's own (which
   * answers that there is no such offload).
   */
  holderOf(threadId: string, uuid: unknown): T {
    const own = this.#entries.get(threadId)?.memory;
    const holds = (m: T) => m.offloads().some((o) => o.uuid === uuid);
    if (own !== undefined && holds(own)) return own;
    for (const { memory } of this.#entries.values()) if (holds(memory)) return memory;
    return own ?? this.memory(threadId);
  }
}
