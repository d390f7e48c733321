/**
 * autocontext for the OpenAI Agents SDK (`@openai/agents`): a `Session` whose history is an
 * {@link AutoContextMemory} of Responses API items, the model-input filter that keeps every
 * model call of a run inside the window, and the `context_reload` tool as an Agents SDK tool.
 *
 * ```ts
 * import { Agent, run } from '@openai/agents';
 * import { AutoContextSession } from 'autocontext/openai-agents';
 *
 * const session = new AutoContextSession({ maxToken: 128_000, summarize });
 * const agent = new Agent({ name: 'Assistant', instructions, tools: [...tools, session.reloadTool] });
 * const result = await run(agent, 'Refactor src/', { session, callModelInputFilter: session.callModelInputFilter });
 * ```
 *
 * Why both: the runner reads a session once, when a run starts, and saves the run's items when
 * it ends; the tool calls of one long run grow the input of every model call in between. The
 * filter sees each call's input, adds what is new to the memory, compresses when needed and
 * sends the memory's list; the session then hands out that list at the next run and records
 * the run's last items. Without the filter the session alone compresses at the start of each
 * run only.
 *
 * The session makes its memory with the default build of autocontext (`o200k_base`); give it a
 * memory of another build (`autocontext/full`, `autocontext/lite`) to use that one. One run at
 * a time per session, as with the SDK's own sessions.
 *
 * @module
 */

import { tool } from '@openai/agents';
import type { AgentInputItem, CallModelInputFilter, FunctionTool, ModelInputData, Session } from '@openai/agents';
import { AutoContextMemory, handleReloadCall } from 'autocontext';
import { AutoContextError, describe } from '../errors.js';
import { isMemory } from './options.js';
import type {
  AutoContextOptions,
  CompressResult,
  HostOptions,
  MemoryState,
  OffloadInfo,
  OffloadStore,
  ReloadArguments,
  ReloadToolParameters,
  SummarizeFn,
} from '../types.js';
import { wireReplacer } from '../wire.js';

/** The JSON schema of the reload tool's arguments, as the Agents SDK's `tool()` takes it. */
type ReloadToolSchema = Omit<ReloadToolParameters, 'additionalProperties'> & { additionalProperties: true };

/** A memory of Agents SDK items (the `'openai-responses'` format reads the SDK's spelling). */
export type AgentsMemory = AutoContextMemory<'openai-responses', AgentInputItem>;

/** Options of {@link AutoContextSession}: a memory's options; the format is `'openai-responses'`. */
export type AutoContextSessionOptions = Omit<AutoContextOptions<'openai-responses', AgentInputItem>, 'format' | 'summarize'> & {
  /**
   * The host's LLM call; its requests carry Agents SDK items. A `SummarizeFn` written for any
   * format (it reads `prompt`) fits too.
   */
  summarize?: SummarizeFn<AgentInputItem> | SummarizeFn;
  /** Called after each compression pass that changed the list (by the filter or at a run's start). */
  onCompress?: (result: CompressResult) => void;
};

/**
 * The identity of an item across the runner's copies of it: its JSON with keys sorted and
 * without a top-level `id` (the runner saves function calls without the id the model gave
 * them, and may write keys in another order).
 */
function identity(item: unknown): string {
  let top = true;
  return JSON.stringify(item, function (this: unknown, key: string, value: unknown) {
    const v = wireReplacer.call(this, key, value);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const entries = Object.entries(v as Record<string, unknown>).filter(([k]) => !(top && k === 'id'));
    top = false;
    return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** Whether `list` starts with `prefix`. */
function startsWith(list: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= list.length && prefix.every((k, i) => list[i] === k);
}

const MARKER = /<!-- CONTEXT_OFFLOAD: uuid=([0-9a-fA-F-]+) -->/g;

/** How many offloads of inputs that were not the conversation the reload tool keeps serving. */
const MAX_STRAYS = 1_000;

/**
 * An Agents SDK `Session` backed by an {@link AutoContextMemory}: `getItems()` hands out the
 * compressed conversation, `addItems()` records what a run produced, and
 * {@link AutoContextSession.callModelInputFilter} keeps every model call of a run inside the
 * window. Offloaded originals stay reachable through {@link AutoContextSession.reloadTool}.
 */
export class AutoContextSession implements Session {
  #memory: AgentsMemory;
  readonly #options: AutoContextSessionOptions;
  /** Identities of the conversation as the runner last saw it: what `getItems` handed out, then what was added. */
  #views: string[][] = [];
  /** Identities of items the filter added that the runner has not saved yet, in order. */
  #unsaved: string[] = [];
  /** Offloads made for inputs that did not continue the conversation (the memory does not own them). */
  #strays: OffloadInfo[] = [];

  /**
   * @param options - the memory's options (`maxToken`, `summarize`, `store`, `sessionId`, ...);
   *   the format is always `'openai-responses'`.
   * @param memory - a memory to use instead of a new one: made with `format: 'openai-responses'`,
   *   by any build of autocontext; `options` then carries the same `summarize` and `tokenizer`
   *   (the session remakes the memory in {@link AutoContextSession.clearSession}) and its other
   *   fields are not used.
   * @throws {@link AutoContextError} `INVALID_CONFIG` naming the option at fault;
   *   `INVALID_ARGUMENT` when `options` is a memory (it goes second) or `memory` is not one.
   */
  constructor(options: AutoContextSessionOptions = {}, memory?: AgentsMemory) {
    if (isMemory(options)) {
      throw new AutoContextError(
        'INVALID_ARGUMENT',
        "AutoContextSession takes options first, then a memory of your own: new AutoContextSession({ summarize }, memory) (or new AutoContextSession({ maxToken: 128_000, summarize }) for a memory it makes)",
        { field: 'options' },
      );
    }
    if (memory !== undefined && !isMemory(memory)) {
      throw new AutoContextError('INVALID_ARGUMENT', `AutoContextSession's second argument is a memory (format: 'openai-responses'), got ${describe(memory)}`, { field: 'memory' });
    }
    if (options === null || typeof options !== 'object') {
      throw new AutoContextError('INVALID_CONFIG', `AutoContextSession's options must be an object, got ${describe(options)}`);
    }
    if ('format' in options && (options as { format?: unknown }).format !== 'openai-responses') {
      throw new AutoContextError('INVALID_CONFIG', "option `format` of AutoContextSession is always 'openai-responses'", { field: 'format' });
    }
    if (memory !== undefined && memory.toJSON().config.format !== 'openai-responses') {
      throw new AutoContextError('INVALID_CONFIG', "AutoContextSession needs a memory made with format: 'openai-responses'", { field: 'format' });
    }
    this.#options = options;
    this.#memory = memory ?? new AutoContextMemory<'openai-responses', AgentInputItem>({ ...this.#engineOptions(), format: 'openai-responses' });
    this.callModelInputFilter = (args) => this.#filter(args.modelData);
    const definition = this.#memory.reloadTool();
    this.reloadTool = tool({
      name: definition.name,
      description: definition.description,
      // Not strict (`page` is optional), which the SDK types as open to further properties.
      parameters: { ...definition.parameters, additionalProperties: true },
      strict: false,
      execute: async (args) => this.#reload(args as ReloadArguments),
    });
  }

  /**
   * Restores a session from {@link AutoContextSession.toJSON} output, with the same host
   * functions (`summarize`, `store`, `tokenizer`) and callbacks.
   *
   * @throws {@link AutoContextError} `INVALID_STATE` when the state is not a valid one.
   */
  static fromJSON(state: MemoryState | string, options: AutoContextSessionOptions = {}): AutoContextSession {
    const memory = AutoContextMemory.fromJSON<'openai-responses', AgentInputItem>(state, hostOf(options));
    const format = memory.toJSON().config.format;
    if (format !== 'openai-responses') {
      throw new AutoContextError('INVALID_STATE', `the state is of format ${JSON.stringify(format)}; a session holds 'openai-responses' items`);
    }
    return new AutoContextSession(options, memory);
  }

  /**
   * The `callModelInputFilter` of a run: adds the input's new items to the memory, compresses
   * when needed, and sends the memory's list. An input that does not continue the memory's
   * conversation (a handoff's input filter rewrote it, say) is compressed on its own, the
   * memory untouched; the reload tool still serves what that offloaded.
   */
  readonly callModelInputFilter: CallModelInputFilter;

  /** The `context_reload` tool, for the agent's `tools`. */
  readonly reloadTool: FunctionTool<unknown, ReloadToolSchema, string>;

  /** The memory behind the session (for `events()`, `offloads()`, `tokenCount()`, ...). */
  get memory(): AgentsMemory {
    return this.#memory;
  }

  /** The memory's session id (the prefix of its offloads' store keys). */
  async getSessionId(): Promise<string> {
    return this.#memory.sessionId;
  }

  /**
   * The conversation, compressed first when needed: the most recent `limit` items, or all of
   * them.
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    await this.#compress();
    const items = this.#memory.messages();
    // A run reads once; a few views cover a caller that reads again before the run's first call.
    this.#views = [...this.#views.slice(-3), items.map(identity)];
    return limit === undefined ? items : limit > 0 ? items.slice(-limit) : [];
  }

  /**
   * Records the items a run produced; those the filter already added are recognized and
   * recorded once.
   */
  async addItems(items: AgentInputItem[]): Promise<void> {
    const ours = new Set(this.#memory.offloads().map((o) => o.uuid));
    const fresh: AgentInputItem[] = [];
    for (const item of items) {
      const key = identity(item);
      const at = this.#unsaved.indexOf(key);
      if (at >= 0) {
        this.#unsaved.splice(at, 1);
        continue;
      }
      // The engine's own notes come back when the runner saves what the model was sent.
      if ([...key.matchAll(MARKER)].some((m) => ours.has(m[1] ?? ''))) continue;
      fresh.push(item);
    }
    if (fresh.length > 0) this.#memory.add(fresh);
    this.#views = [];
    this.#unsaved = [];
  }

  /**
   * Removes and returns the most recent item. Only an item as it was added can be taken back;
   * the newest item is never compressed, so this holds unless a pass replaced everything.
   *
   * @throws {@link AutoContextError} `INVALID_STATE` when the last item was compressed.
   */
  async popItem(): Promise<AgentInputItem | undefined> {
    const last = this.#memory.pop();
    this.#views = [];
    this.#unsaved = [];
    return last;
  }

  /** Forgets the conversation and deletes its offloaded originals from the store. */
  async clearSession(): Promise<void> {
    const old = this.#memory;
    this.#memory = this.#fresh(old.sessionId);
    this.#views = [];
    this.#unsaved = [];
    for (const o of old.offloads()) await deleteOffload(old.store, old.sessionId, o.uuid);
  }

  /** The session as versioned JSON (offloaded originals stay in the store). */
  toJSON(): MemoryState {
    return this.#memory.toJSON();
  }

  async #filter(data: ModelInputData): Promise<ModelInputData> {
    const input = data.input;
    const keys = input.map(identity);
    // What the runner was handed (or has since added), else the whole log (a caller that passes
    // the history back itself); the log is read only then, as it grows with the conversation.
    const view = [...this.#views].reverse().find((v) => startsWith(keys, v));
    const originals = view === undefined ? (await this.#memory.originalMessages()).map(identity) : undefined;
    const base = view ?? (originals !== undefined && startsWith(keys, originals) ? originals : undefined);
    if (base === undefined) {
      // Not this conversation: compress the input as it is, with the same options and store;
      // the reload tool serves its offloads from the store.
      const alone = this.#fresh(this.#memory.sessionId);
      alone.add(input);
      await this.#compress(alone);
      this.#strays = [...this.#strays, ...alone.offloads()].slice(-MAX_STRAYS);
      return { ...data, input: alone.messages() };
    }
    const fresh = input.slice(base.length);
    if (fresh.length > 0) {
      this.#memory.add(fresh);
      // Only a run with this session saves its items; with the filter alone nothing comes back.
      if (base !== originals) this.#unsaved.push(...keys.slice(base.length));
    }
    this.#views = [keys];
    await this.#compress(this.#memory);
    return { ...data, input: this.#memory.messages() };
  }

  /** Answers a `context_reload` call: from the memory, or from the store for a stray offload. */
  async #reload(args: ReloadArguments): Promise<string> {
    const uuid = args?.working_context_offload_uuid;
    const owned = this.#memory.offloads().some((o) => o.uuid === uuid);
    if (owned || !this.#strays.some((o) => o.uuid === uuid)) return this.#memory.handleReloadCall(args);
    const { summarize: _, onCompress: __, ...options } = this.#options;
    return handleReloadCall(this.#memory.store, this.#memory.sessionId, args, { ...options, format: 'openai-responses', offloads: this.#strays });
  }

  async #compress(memory: AgentsMemory = this.#memory): Promise<void> {
    const result = await memory.compressIfNeeded();
    if (result.compressed) this.#options.onCompress?.(result);
  }

  /** The memory's class (of the build the memory came from). */
  #kind(): typeof AutoContextMemory {
    return this.#memory.constructor as typeof AutoContextMemory;
  }

  /** An empty memory like this session's, on its store. */
  #fresh(sessionId: string): AgentsMemory {
    const Kind = this.#kind();
    return new Kind<'openai-responses', AgentInputItem>({ ...this.#engineOptions(), store: this.#memory.store, sessionId, format: 'openai-responses' });
  }

  /** The memory's options without the session's own. */
  #engineOptions(): AutoContextOptions<'openai-responses', AgentInputItem> {
    const { onCompress: _, summarize, ...rest } = this.#options;
    // A summarize of any format reads the same request; the memory's only carries SDK items.
    return summarize === undefined ? rest : { ...rest, summarize: summarize as SummarizeFn<AgentInputItem> };
  }
}

/** The host functions of a session's options, for restoring its memory. */
function hostOf(options: AutoContextSessionOptions): HostOptions<AgentInputItem> {
  const host: HostOptions<AgentInputItem> = {};
  if (options.summarize !== undefined) host.summarize = options.summarize as SummarizeFn<AgentInputItem>;
  if (options.store !== undefined) host.store = options.store;
  if (options.tokenizer !== undefined) host.tokenizer = options.tokenizer;
  return host;
}

/** Deletes one offload of a session (its key is `<sessionId>/<uuid>`). */
async function deleteOffload(store: OffloadStore, sessionId: string, uuid: string): Promise<void> {
  try {
    await store.delete(`${sessionId}/${uuid}`);
  } catch (cause) {
    throw new AutoContextError('STORE_FAILED', `clearSession could not delete offload ${uuid} of session ${JSON.stringify(sessionId)}`, { cause });
  }
}
