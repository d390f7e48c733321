/**
 * autocontext for AWS Strands Agents (`@strands-agents/sdk`, TypeScript): a
 * `ConversationManager` that keeps every model call of an agent inside the window, with the
 * `context_reload` tool.
 *
 * ```ts
 * import { Agent } from '@strands-agents/sdk';
 * import { AutoContextConversationManager } from 'autocontext/strands';
 *
 * const agent = new Agent({ model, tools, conversationManager: new AutoContextConversationManager({ maxToken: 200_000, summarize, store }) });
 * ```
 *
 * A Strands conversation manager owns the agent's history: before every model call (every
 * step of the agent loop) the manager adds what is new in `agent.messages` to the agent's
 * memory, compresses when needed, and writes the memory's working list back into
 * `agent.messages`, as Strands' own managers do. What a pass replaced stays in the memory's
 * store, one `context_reload` call away (the manager gives the agent that tool). On a
 * `ContextWindowOverflowError` it compacts hard and has Strands retry.
 *
 * Strands messages (`text`, `toolUse`, `toolResult`, `reasoning`, media and cache points) are
 * held in the `'anthropic'` format, which has the same turns: tool results in the user's turn,
 * signed reasoning kept byte-exact at the front of the assistant's. A message no pass rewrote
 * goes back as the very `Message` instance the agent had (its `trackingId` and `metadata`
 * too); a rewritten one is a new `Message` keeping the original's `trackingId` and `metadata`;
 * the engine's notes are plain text messages. JSON tool results are read as their JSON text.
 * The system prompt and the tool specs travel beside the messages: count them in
 * `reservedTokens`.
 *
 * @module
 */

import { AfterModelCallEvent, BeforeModelCallEvent, ConversationManager, FunctionTool, Message } from '@strands-agents/sdk';
import type { ContentBlockData, ConversationManagerReduceOptions, LocalAgent, MessageData, Tool } from '@strands-agents/sdk';
import { AutoContextMemory } from 'autocontext';
import { AutoContextError } from '../errors.js';
import { checkOptions } from './options.js';
import type { AutoContextOptions, CompressResult, ReloadArguments } from '../types.js';
import { wireJson } from '../wire.js';

/** A Strands message in the Anthropic shape the engine reads. */
export interface StrandsWire {
  role: 'user' | 'assistant';
  content: string | Record<string, unknown>[];
}

/** The memory of an agent: the `'anthropic'` format, holding Strands messages in its shape. */
export type StrandsMemory = AutoContextMemory<'anthropic', StrandsWire>;

/** Options of {@link AutoContextConversationManager}: a memory's options (the format is `'anthropic'`), or a factory of memories. */
export type StrandsConversationManagerOptions = Omit<AutoContextOptions<'anthropic', StrandsWire>, 'format'> & {
  /** Makes the memory of an agent instead of the options above (another build of autocontext, a store per agent): format `'anthropic'`. */
  memory?: (agent: LocalAgent) => StrandsMemory;
  /** Called after each pass that changed the agent's history. */
  onCompress?: (result: CompressResult, agent: LocalAgent) => void;
};

/** One block of Strands' `ContentBlockData` in the Anthropic shape. */
function toBlock(data: ContentBlockData): Record<string, unknown> {
  if ('text' in data) return { type: 'text', text: data.text };
  if ('toolUse' in data) {
    const u = data.toolUse;
    return { type: 'tool_use', id: u.toolUseId, name: u.name, input: u.input ?? {}, ...(u.reasoningSignature === undefined ? {} : { reasoningSignature: u.reasoningSignature }) };
  }
  if ('toolResult' in data) {
    const r = data.toolResult;
    const content = r.content.map((c) => ('text' in c ? { type: 'text', text: c.text } : 'json' in c ? { type: 'text', text: JSON.stringify(c.json) } : media(c as ContentBlockData)));
    return { type: 'tool_result', tool_use_id: r.toolUseId, content, ...(r.status === 'error' ? { is_error: true } : {}) };
  }
  if ('reasoning' in data) {
    const r = data.reasoning as { text?: string; signature?: string; redactedContent?: string };
    if (r.redactedContent !== undefined) return { type: 'redacted_thinking', data: r.redactedContent };
    return { type: 'thinking', thinking: r.text ?? '', signature: r.signature ?? '' };
  }
  return media(data);
}

/** A block the engine does not read, kept whole: an image or a document counts the format's fixed estimate. */
function media(data: ContentBlockData): Record<string, unknown> {
  return { type: 'image' in data ? 'image' : 'document' in data ? 'document' : 'strands', strands: data };
}

/** A Strands message (as its `toJSON()` gives it) in the Anthropic shape. */
export function toWire(message: Message | MessageData): StrandsWire {
  const data = message instanceof Message ? message.toJSON() : message;
  if (data.role !== 'user' && data.role !== 'assistant') {
    throw new AutoContextError('INVALID_MESSAGE', `a Strands message has role user or assistant, not ${JSON.stringify(data.role)}`, { field: 'role' });
  }
  return { role: data.role, content: data.content.map(toBlock) };
}

/** One Anthropic block back as Strands' `ContentBlockData`. */
function fromBlock(b: Record<string, unknown>): ContentBlockData | undefined {
  switch (b.type) {
    case 'text':
      return { text: String(b.text ?? '') };
    case 'tool_use':
      return { toolUse: { name: String(b.name), toolUseId: String(b.id), input: (b.input ?? {}) as never, ...(typeof b.reasoningSignature === 'string' ? { reasoningSignature: b.reasoningSignature } : {}) } };
    case 'tool_result': {
      const parts = typeof b.content === 'string' ? [{ type: 'text', text: b.content }] : ((b.content as Record<string, unknown>[] | undefined) ?? []);
      const content = parts.flatMap((p) => (p.type === 'text' ? [{ text: String(p.text ?? '') }] : p.strands === undefined ? [] : [p.strands]));
      return { toolResult: { toolUseId: String(b.tool_use_id), status: b.is_error === true ? 'error' : 'success', content: content as never } };
    }
    case 'thinking':
      return { reasoning: { text: String(b.thinking ?? ''), ...(b.signature ? { signature: String(b.signature) } : {}) } };
    case 'redacted_thinking':
      return { reasoning: { redactedContent: b.data as never } };
    default:
      return b.strands as ContentBlockData | undefined;
  }
}

/** An Anthropic message the engine wrote or rewrote, as a Strands `Message`; `original` lends its `trackingId` and `metadata`. */
export function fromWire(wire: StrandsWire, original?: Message): Message {
  const blocks = typeof wire.content === 'string' ? [{ type: 'text', text: wire.content }] : wire.content;
  const content = blocks.flatMap((b) => {
    const d = fromBlock(b);
    return d === undefined ? [] : [d];
  });
  return Message.fromMessageData({
    role: wire.role,
    content,
    ...(original === undefined ? {} : { trackingId: original.trackingId, ...(original.metadata === undefined ? {} : { metadata: original.metadata }) }),
  });
}

/** What the manager keeps for one agent: its memory and the messages it last wrote to `agent.messages`. */
interface AgentState {
  memory: StrandsMemory;
  /** `agent.messages` as the manager left it. */
  shown: Message[];
}

/** The ids of the calls a message makes or answers, for finding a rewritten message's original. */
function idsOf(wire: StrandsWire): string[] {
  if (typeof wire.content === 'string') return [];
  return wire.content.flatMap((b) => (b.type === 'tool_use' ? [`u:${String(b.id)}`] : b.type === 'tool_result' ? [`r:${String(b.tool_use_id)}`] : []));
}

/** How the manager is made, for its errors. */
const FORM =
  "new AutoContextConversationManager({ maxToken: 200_000, summarize, store }) with a memory's options, or " +
  "new AutoContextConversationManager({ memory: (agent) => new AutoContextMemory({ format: 'anthropic', sessionId: agent.sessionId, ... }) }) to make each agent's memory";

/**
 * A Strands `ConversationManager` that compresses an agent's history before every model call,
 * with one memory per agent (`'anthropic'` format), and gives the agent the `context_reload`
 * tool. It makes its memories itself (a history edited or restored starts over in a fresh
 * one), from a memory's options or from the `memory` factory: a memory handed to it is refused,
 * never ignored.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` when given a memory instead of options or a
 *   `memory` that is not a function; `INVALID_CONFIG` when the options are wrong (a memory's
 *   option beside `memory`, which the factory's memories would not use, included) or the
 *   factory makes a memory of another format.
 */
export class AutoContextConversationManager extends ConversationManager {
  readonly name = 'autocontext:conversation-manager';
  readonly #states = new WeakMap<LocalAgent, AgentState>();
  readonly #make: (agent: LocalAgent) => StrandsMemory;
  readonly #onCompress: ((result: CompressResult, agent: LocalAgent) => void) | undefined;
  readonly #tool: FunctionTool;

  constructor(options: StrandsConversationManagerOptions = {}) {
    super();
    checkOptions('AutoContextConversationManager', options, null, FORM);
    const { memory, onCompress, ...engine } = options;
    if ('format' in engine && (engine as { format?: unknown }).format !== 'anthropic') {
      throw new AutoContextError('INVALID_CONFIG', "option `format` of AutoContextConversationManager is always 'anthropic'", { field: 'format' });
    }
    if (memory !== undefined) {
      if (typeof memory !== 'function') {
        throw new AutoContextError('INVALID_ARGUMENT', `option \`memory\` of AutoContextConversationManager makes each agent's memory, so it is a function: ${FORM}`, {
          field: 'memory',
        });
      }
      const unused = Object.keys(engine);
      if (unused.length > 0) {
        throw new AutoContextError(
          'INVALID_CONFIG',
          `\`${unused[0]}\` is a memory's option, which the memories \`memory\` makes would not use: give it to the memory the factory makes`,
          { field: unused[0]! },
        );
      }
    }
    this.#make = (agent) => {
      const made = memory !== undefined ? memory(agent) : new AutoContextMemory<'anthropic', StrandsWire>({ sessionId: agent.sessionId, ...engine, format: 'anthropic' });
      if (made?.toJSON?.().config.format !== 'anthropic') {
        throw new AutoContextError('INVALID_CONFIG', "AutoContextConversationManager needs memories made with format: 'anthropic'", { field: 'format' });
      }
      return made;
    };
    // Checked now, as a memory's constructor checks its options.
    const probe = memory === undefined ? new AutoContextMemory<'anthropic', StrandsWire>({ ...engine, format: 'anthropic' }) : undefined;
    const def = (probe ?? { reloadTool: () => new AutoContextMemory({ format: 'anthropic' }).reloadTool() }).reloadTool();
    this.#onCompress = onCompress;
    this.#tool = new FunctionTool({
      name: def.name,
      description: def.description,
      inputSchema: def.input_schema as never,
      callback: (input, context) => this.#stateOf(context.agent).memory.handleReloadCall(input as ReloadArguments),
    });
  }

  /** The `context_reload` tool, which Strands registers with the agent. */
  getTools(): Tool[] {
    return [this.#tool];
  }

  /** The memory of `agent` (made when there is none), for its `events()`, `offloads()` and the rest. */
  memory(agent: LocalAgent): StrandsMemory {
    return this.#stateOf(agent).memory;
  }

  override initAgent(agent: LocalAgent): void {
    super.initAgent(agent);
    agent.addHook(BeforeModelCallEvent, async (event) => {
      const result = await this.#fit(event.agent);
      if (result.compressed) this.#onCompress?.(result, event.agent);
    });
    agent.addHook(AfterModelCallEvent, (event) => {
      const usage = event.stopData?.message.metadata?.usage as { inputTokens?: number; cacheReadInputTokens?: number; cacheWriteInputTokens?: number } | undefined;
      if (usage === undefined || typeof usage.inputTokens !== 'number') return;
      const read = usage.cacheReadInputTokens ?? 0;
      const prompt = usage.inputTokens + read + (usage.cacheWriteInputTokens ?? 0);
      if (prompt > 0) this.#stateOf(event.agent).memory.observeUsage({ promptTokens: prompt, cachedTokens: read });
    });
  }

  /**
   * On a `ContextWindowOverflowError`, compacts the history hard (the engine's overflow handling)
   * and says whether Strands should retry; without one, compresses as before a model call.
   */
  override async reduce({ agent, error }: ConversationManagerReduceOptions): Promise<boolean> {
    const result = await this.#fit(agent);
    if (error === undefined) return result.compressed;
    const state = this.#stateOf(agent);
    let outcome = await state.memory.handleOverflow(error);
    // Strands already knows the request overflowed, whatever its provider's wording.
    if (!outcome.overflow) outcome = await state.memory.handleOverflow({ message: 'context window exceeded' });
    this.#show(agent, state);
    return outcome.retry;
  }

  #stateOf(agent: LocalAgent): AgentState {
    let state = this.#states.get(agent);
    if (state === undefined) {
      state = { memory: this.#make(agent), shown: [] };
      this.#states.set(agent, state);
    }
    return state;
  }

  /** Adds what is new in `agent.messages` to the memory, compresses if needed, and writes the working list back. */
  async #fit(agent: LocalAgent): Promise<CompressResult> {
    let state = this.#stateOf(agent);
    const messages = agent.messages;
    const continues = state.shown.length <= messages.length && state.shown.every((m, i) => messages[i] === m);
    if (!continues) {
      // The history was edited or restored: the conversation starts over in a fresh memory.
      state = { memory: this.#make(agent), shown: [] };
      this.#states.set(agent, state);
    }
    const fresh = messages.slice(state.shown.length);
    if (fresh.length > 0) state.memory.add(fresh.map((m) => toWire(m)));
    state.shown = [...messages];
    const result = await state.memory.compressIfNeeded();
    if (result.compressed) this.#show(agent, state);
    return result;
  }

  /** Writes the memory's working list into `agent.messages`: untouched messages as the instances the agent had. */
  #show(agent: LocalAgent, state: AgentState): void {
    const byKey = new Map<string, Message[]>();
    const byId = new Map<string, Message>();
    for (const m of state.shown) {
      const wire = toWire(m);
      const key = wireJson(wire) ?? '';
      byKey.set(key, [...(byKey.get(key) ?? []), m]);
      for (const id of idsOf(wire)) byId.set(id, m);
    }
    const out = state.memory.messages().map((wire) => {
      const same = byKey.get(wireJson(wire) ?? '')?.shift();
      if (same !== undefined) return same;
      const original = idsOf(wire)
        .map((id) => byId.get(id))
        .find((m) => m !== undefined);
      return fromWire(wire, original);
    });
    agent.messages.splice(0, agent.messages.length, ...out);
    state.shown = [...agent.messages];
  }
}
