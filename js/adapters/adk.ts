/**
 * autocontext for Google ADK (`@google/adk`, ADK for TypeScript 2.0): a plugin that keeps every
 * model call of every agent of a runner inside the window, with the `context_reload` tool.
 *
 * ```ts
 * import { InMemoryRunner, LlmAgent } from '@google/adk';
 * import { AutoContextMemory } from 'autocontext';
 * import { AutoContextPlugin } from 'autocontext/adk';
 *
 * const context = new AutoContextPlugin((sessionId) => new AutoContextMemory({ format: 'gemini', maxToken: 1_000_000, summarize, store, sessionId }));
 * const runner = new InMemoryRunner({ agent: new LlmAgent({ name: 'assistant', model: 'gemini-2.5-flash', tools }), plugins: [context] });
 * ```
 *
 * ADK builds each model request from its session's events (the whole history, every call) and
 * hands it to the plugins' `beforeModelCallback` before the model sees it; the plugin replaces
 * the request's `contents` with a memory's working list and leaves the session untouched, so
 * the events keep every message. Each conversation (an ADK session, and the agent whose request
 * it is: agents of one session see different histories) has one memory in the `'gemini'`
 * format, whose original log is the history: while the history grows at its end, only the new
 * contents are added, so summaries carry over and the compressed prefix stays stable for
 * Gemini's implicit cache. The system instruction and the tool declarations travel beside the
 * contents: count them in `reservedTokens`. `afterModelCallback` feeds the response's
 * `usageMetadata` to the memory (`observeUsage`), and the plugin adds the `context_reload` tool
 * to every request (an ADK tool the agent runs like its own).
 *
 * ADK sends function calls without the ids it made up; the `'gemini'` format pairs a turn of
 * calls with the responses of the turn after it, by name, as the API does.
 *
 * @module
 */

import { BasePlugin, BaseTool } from '@google/adk';
import type { Context, LlmRequest, LlmResponse, RunAsyncToolRequest } from '@google/adk';
import type { FunctionDeclaration } from '@google/genai';
import { AutoContextError } from '../errors.js';
import { checkOptions, isMemory } from './options.js';
import { Sessions, type AdapterMemory } from './sessions.js';
import type { CompressResult, ReloadArguments } from '../types.js';
import { wireJson } from '../wire.js';

/** Options of {@link AutoContextPlugin}. */
export interface AdkPluginOptions {
  /** The plugin's name, unique among a runner's plugins (default `'autocontext'`). */
  name?: string;
  /** Conversations whose memories are kept at once, the least recently used dropped first (default 1000). */
  maxSessions?: number;
  /** Whether the plugin adds the `context_reload` tool to every request (default `true`; else put `plugin.reloadTool` in your agents' tools). */
  addReloadTool?: boolean;
  /** Called after each pass that changed a model request. */
  onCompress?: (result: CompressResult, conversation: { sessionId: string; agentName: string }) => void;
}

/** What the plugin uses of ADK's callback context: the session and the agent a request is for. */
type Where = Pick<Context, 'sessionId' | 'agentName'>;

/** The key of the conversation a request belongs to. */
function keyOf(where: Where | undefined): string {
  return JSON.stringify([where?.sessionId ?? 'default', where?.agentName ?? '']);
}

/** What a memory of the plugin is checked for: the Gemini format (a `FunctionDeclaration` with a JSON schema). */
function requireGemini(memory: AdapterMemory): void {
  const def = memory?.reloadTool?.() as { parametersJsonSchema?: unknown } | null | undefined;
  if (def === null || typeof def !== 'object' || typeof def.parametersJsonSchema !== 'object') {
    throw new AutoContextError('INVALID_CONFIG', "AutoContextPlugin needs memories made with format: 'gemini'", { field: 'format' });
  }
}

/** The `context_reload` tool as an ADK tool: the memories' own declaration, answered by the conversation's memory. */
class ReloadTool extends BaseTool {
  readonly #declaration: FunctionDeclaration;
  readonly #answer: (args: ReloadArguments, where: Where) => Promise<string>;

  constructor(declaration: FunctionDeclaration, answer: (args: ReloadArguments, where: Where) => Promise<string>) {
    super({ name: 'context_reload', description: declaration.description ?? '' });
    this.#declaration = declaration;
    this.#answer = answer;
  }

  override _getDeclaration(): FunctionDeclaration {
    return this.#declaration;
  }

  override async runAsync({ args, toolContext }: RunAsyncToolRequest): Promise<unknown> {
    return this.#answer(args as unknown as ReloadArguments, toolContext);
  }
}

/**
 * An ADK plugin for `new Runner({ plugins })` that compresses every model request of every
 * agent, with one memory per conversation made by `memory(sessionId, agentName)` (format
 * `'gemini'`; use the session id as its `sessionId`, with the agent's name when several agents
 * share a store: `` `${sessionId}:${agentName}` ``), and adds the `context_reload` tool to every
 * request.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` when `memory` is not a function (a memory
 *   included: the plugin makes one per conversation) or the options are a memory,
 *   `INVALID_CONFIG` when an option is not one of {@link AdkPluginOptions} or `memory` makes a
 *   memory of another format.
 */
export class AutoContextPlugin<T extends AdapterMemory = AdapterMemory> extends BasePlugin {
  /** The `context_reload` tool, which the plugin adds to every request; put it in an agent's tools yourself with `addReloadTool: false`. */
  readonly reloadTool: BaseTool;
  readonly #sessions: Sessions<T>;
  readonly #options: AdkPluginOptions;

  constructor(memory: (sessionId: string, agentName: string) => T, options: AdkPluginOptions = {}) {
    super(typeof options?.name === 'string' ? options.name : 'autocontext');
    if (typeof memory !== 'function') {
      const got = isMemory(memory) ? 'not a memory: it makes one per conversation' : 'a function';
      throw new AutoContextError('INVALID_ARGUMENT', `AutoContextPlugin takes ${got}: new AutoContextPlugin((sessionId, agentName) => new AutoContextMemory({ format: 'gemini', sessionId, ... }))`, {
        field: 'memory',
      });
    }
    checkOptions('AutoContextPlugin', options, ['name', 'maxSessions', 'addReloadTool', 'onCompress'], "new AutoContextPlugin((sessionId) => new AutoContextMemory({ format: 'gemini', sessionId, ... }), { maxSessions: 1000 })");
    this.#options = options;
    this.#sessions = new Sessions(
      (key) => {
        const [sessionId, agentName] = JSON.parse(key) as [string, string];
        return memory(sessionId, agentName);
      },
      options.maxSessions ?? 1000,
      requireGemini,
      'maxSessions',
    );
    // The tool's declaration is the memories' own (every memory has the same).
    const declaration = this.#sessions.memory(keyOf(undefined)).reloadTool() as FunctionDeclaration;
    this.reloadTool = new ReloadTool(declaration, (args, where) =>
      this.#sessions.holderOf(keyOf(where), args?.working_context_offload_uuid).handleReloadCall(args as never),
    );
  }

  /** The memory of a conversation (made when there is none), for its `events()`, `offloads()` and the rest. */
  memory(sessionId = 'default', agentName = ''): T {
    return this.#sessions.memory(keyOf({ sessionId, agentName }));
  }

  /** Replaces the request's contents with the conversation's working list, and adds the reload tool. */
  override async beforeModelCallback({ callbackContext, llmRequest }: { callbackContext: Context; llmRequest: LlmRequest }): Promise<LlmResponse | undefined> {
    if (!Array.isArray(llmRequest?.contents)) {
      throw new AutoContextError('INVALID_ARGUMENT', 'AutoContextPlugin: beforeModelCallback needs the LlmRequest ADK passes', { field: 'llmRequest' });
    }
    const contents = llmRequest.contents;
    const keys = contents.map((c) => wireJson(c) ?? 'undefined');
    const { memory: used, result } = await this.#sessions.sync(keyOf(callbackContext), contents, keys);
    if (result.compressed) this.#options.onCompress?.(result, { sessionId: callbackContext.sessionId, agentName: callbackContext.agentName });
    llmRequest.contents = used.messages() as LlmRequest['contents'];
    if (this.#options.addReloadTool !== false && !(this.reloadTool.name in (llmRequest.toolsDict ?? {}))) {
      llmRequest.toolsDict ??= {};
      llmRequest.toolsDict[this.reloadTool.name] = this.reloadTool;
      llmRequest.config ??= {};
      llmRequest.config.tools = [...(llmRequest.config.tools ?? []), { functionDeclarations: [this.reloadTool._getDeclaration()!] }];
    }
    return undefined;
  }

  /** Feeds the response's `usageMetadata` to the conversation's memory, which calibrates its count. */
  override async afterModelCallback({ callbackContext, llmResponse }: { callbackContext: Context; llmResponse: LlmResponse }): Promise<LlmResponse | undefined> {
    const usage = llmResponse?.usageMetadata;
    if (!llmResponse.partial && typeof usage?.promptTokenCount === 'number' && usage.promptTokenCount > 0) {
      const memory = this.#sessions.memory(keyOf(callbackContext)) as AdapterMemory & { observeUsage?(usage: unknown): unknown };
      memory.observeUsage?.(usage);
    }
    return undefined;
  }
}
