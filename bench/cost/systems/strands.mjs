// AWS Strands Agents (@strands-agents/sdk) as a user runs it: an `Agent` with a model that
// answers from the trace, tools that answer from the trace, and one of Strands' context
// managers. Strands drives its own loop, so the replay feeds the trace into it:
//
//   user message       starts `agent.invoke(...)` (Strands appends it); the agent's model call
//                      is the turn's request (`request()` waits for it);
//   assistant message  the model's answer to the waiting call, streamed as a provider streams
//                      it, with the usage a provider reports (Strands' own estimate of the
//                      next request starts from it);
//   tool message       what the tool the agent called returns (Strands runs a turn's calls and
//                      sends their results in one user message); a result the trace lacks comes
//                      back empty, so the agent goes on;
//   user message while the agent works (after a turn's tool calls, before the next answer):
//                      joins the results' message as text, as a host that passes a user's
//                      interjection along would, before the context manager sees it.
//
// The trace's leading system messages are the agent's `systemPrompt`; a system message later in
// a trace is a user message's text (Strands' messages hold no system role). A message history
// that does not start where Strands' loop would (an answer with no call waiting) is sent with
// the next invocation, as the history a host restores.
//
// The model refuses a request over the window with Strands' `ContextWindowOverflowError`, as a
// provider does: the managers reduce the history then (by default the only time
// SummarizingConversationManager acts, and SlidingWindowConversationManager between its trims
// to 40 messages after each invocation) and Strands retries; the retried request is the one
// accounted, taken even when it is still over. A model call without tool specs is a context
// manager's summarizer: it gets the benchmark's offline summary of what it is asked to
// summarize, recorded like every other system's.
//
// Every count Strands asks of the model (`countTokens`) and the usage the model reports are the
// benchmark's o200k count with the same per-message accounting, so each manager triggers at the
// same request size as the other systems. Management CPU is the time inside the agent's hooks
// (where every context manager runs: before and after each model call, after each message is
// added, after each invocation) plus Strands' own count of the next request that feeds them;
// Strands' loop otherwise is left out, and the counting is shown apart. The 'auto' context
// manager stashes what it replaces (`[ref: <key>]` in the preview) behind its `retrieve_context`
// tool: one reload is that tool's answer for one reference.
import {
  AfterInvocationEvent,
  AfterModelCallEvent,
  Agent,
  BeforeModelCallEvent,
  ContextWindowOverflowError,
  FunctionTool,
  HookOrder,
  ImageBlock,
  Message,
  MessageAddedEvent,
  Model,
  Offload,
  SlidingWindowConversationManager,
  SummarizingConversationManager,
  TextBlock,
  ToolResultBlock,
  ToolUseBlock,
} from '@strands-agents/sdk';
import { REQUEST_OVERHEAD, messageTokens } from '../../../js/accounting.js';
import { summarizeSpan } from '../summarizer.mjs';
import { parseArguments } from './convert.mjs';

/** A promise and the function that settles it. */
function deferred() {
  let resolve;
  const promise = new Promise((res) => (resolve = res));
  return { promise, resolve };
}

const isSystem = (m) => m.role === 'system' || m.role === 'developer';

/** The text of a trace message's content (a string, or its text parts). */
function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
}

/** A user (or later system) message of the trace as Strands content blocks: text, and images from data URLs. */
function userBlocks(m) {
  if (!Array.isArray(m.content)) return [new TextBlock(textOf(m.content))];
  return m.content.map((p) => {
    const url = p?.image_url?.url;
    const data = typeof url === 'string' ? /^data:image\/(\w+);base64,(.*)$/s.exec(url) : null;
    if (data !== null) return new ImageBlock({ format: data[1] === 'jpg' ? 'jpeg' : data[1], source: { bytes: Uint8Array.from(Buffer.from(data[2], 'base64')) } });
    return new TextBlock(typeof p?.text === 'string' ? p.text : JSON.stringify(p));
  });
}

/** An assistant message of the trace as the blocks of a model answer ({text} and {toolUse}). */
function answerBlocks(m) {
  const out = [];
  const text = textOf(m.content);
  if (text.length > 0) out.push({ text });
  for (const c of m.tool_calls ?? []) out.push({ toolUse: { toolUseId: c.id, name: c.function.name, input: parseArguments(c.function.arguments) } });
  if (out.length === 0) out.push({ text: '' });
  return out;
}

/** The text a tool result block holds. */
function resultText(block) {
  return block.content.map((c) => (c instanceof TextBlock ? c.text : c.json !== undefined ? JSON.stringify(c.json) : '')).join('');
}

/** A Strands message a manager wrote or changed, as OpenAI chat messages (a user message may hold several results). */
function toOpenAI(m) {
  if (m.role === 'assistant') {
    const text = m.content.filter((b) => b instanceof TextBlock).map((b) => b.text).join('');
    const calls = m.content.filter((b) => b instanceof ToolUseBlock);
    const out = { role: 'assistant', content: text.length > 0 || calls.length === 0 ? text : null };
    if (calls.length > 0) out.tool_calls = calls.map((b) => ({ id: b.toolUseId, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } }));
    return [out];
  }
  const out = [];
  const rest = [];
  for (const b of m.content) {
    if (b instanceof ToolResultBlock) out.push({ role: 'tool', tool_call_id: b.toolUseId, content: resultText(b) });
    else if (b instanceof TextBlock) rest.push({ type: 'text', text: b.text });
    else if (b instanceof ImageBlock && b.source?.bytes) rest.push({ type: 'image_url', image_url: { url: `data:image/${b.format};base64,${Buffer.from(b.source.bytes).toString('base64')}` } });
    else rest.push({ type: 'text', text: JSON.stringify(b.toJSON?.() ?? b) });
  }
  if (rest.length > 0) out.push({ role: 'user', content: rest.every((p) => p.type === 'text') ? rest.map((p) => p.text).join('') : rest });
  return out;
}

/** The stream events of a model answer made of `blocks`, and its usage. */
async function* stream(blocks, usage) {
  yield { type: 'modelMessageStartEvent', role: 'assistant' };
  for (const b of blocks) {
    if (b.toolUse !== undefined) {
      yield { type: 'modelContentBlockStartEvent', start: { type: 'toolUseStart', name: b.toolUse.name, toolUseId: b.toolUse.toolUseId } };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input: JSON.stringify(b.toolUse.input) } };
    } else {
      yield { type: 'modelContentBlockStartEvent' };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text: b.text } };
    }
    yield { type: 'modelContentBlockStopEvent' };
  }
  yield { type: 'modelMessageStopEvent', stopReason: blocks.some((b) => b.toolUse !== undefined) ? 'toolUse' : 'endTurn' };
  yield { type: 'modelMetadataEvent', usage };
}

/** What a summarizer is asked to summarize, as text (Strands' framing of the request left out). */
function spanText(messages) {
  const framing = new Set(['<content>', '</content>', 'Please summarize this conversation.']);
  return messages
    .flatMap((m) =>
      m.content.map((b) => {
        if (b instanceof TextBlock) return framing.has(b.text) ? '' : b.text;
        if (b instanceof ToolResultBlock) return resultText(b);
        if (b instanceof ToolUseBlock) return `${b.name} ${JSON.stringify(b.input)}`;
        return '';
      }),
    )
    .filter((t) => t.length > 0)
    .join('\n');
}

const REF = /\[refs?: ([^\]]+)\]/g;

/** The stash references a text names (`[ref: a]`, `[refs: a, b]`), each once. */
export function stashRefs(text) {
  return [...new Set(Array.from(text.matchAll(REF), (m) => m[1].split(',').map((s) => s.trim())).flat())];
}

/** The model: the trace's answers, the benchmark's counts, a provider's refusal over the window. */
class TraceModel extends Model {
  constructor(session) {
    super();
    this.session = session;
    this.config = { modelId: 'trace', contextWindowLimit: session.window };
  }

  updateConfig(config) {
    Object.assign(this.config, config);
  }

  getConfig() {
    return this.config;
  }

  async countTokens(messages, options) {
    return this.session.count(messages, options?.systemPrompt);
  }

  async *stream(messages, options) {
    // The agent always sends its tool specs (an empty list when it has no tool); a summarizer sends none.
    if (options?.toolSpecs === undefined) yield* this.session.summarize(messages, options?.systemPrompt);
    else yield* await this.session.modelCall(messages, options.systemPrompt);
  }
}

/** One replay of one trace through a Strands agent. */
class StrandsSession {
  constructor({ window, log, clock, countText, countClock, trace }, manage) {
    this.window = window;
    this.log = log;
    this.clock = clock;
    this.countText = countText;
    this.countClock = countClock;
    this.origin = new WeakMap(); // Strands message -> { original(s), content blocks when made }
    this.converted = new WeakMap(); // Strands message -> { blocks, messages } (a conversion of its content then)
    this.counts = new WeakMap(); // OpenAI message -> tokens
    this.countsByKey = new Map(); // JSON of an OpenAI message -> tokens
    this.blockCounts = new WeakMap(); // content block -> role -> tokens of a message holding it alone
    this.hookDepth = 0; // hooks of events being run (an event's hooks may add a message, whose hooks run inside)
    this.system = []; // the leading system messages
    this.started = false; // a message other than the leading system ones was added
    this.pending = []; // trace messages to send with the next invocation
    this.calls = []; // tool call ids of the answer the agent is acting on
    this.results = new Map(); // tool call id -> deferred result
    this.toolTurn = []; // the trace's tool messages answering `calls`
    this.interjections = []; // user messages that arrived while the agent worked
    this.answers = []; // trace answers given to the model, not yet appended by Strands
    this.call = null; // the model call the agent waits on: { messages, reply, tokens }
    this.callWaiters = [];
    this.running = Promise.resolve();
    this.loopOpen = false;
    this.refused = false; // the waiting request was refused once already
    this.overflow = false; // the waiting request was refused over the window
    this.known = new Map(); // message -> its blocks, as the last request or the loop left them
    this.pass = null;
    this.errors = [];
    this.resultAt = new Map(trace.messages.flatMap((m, i) => (m.role === 'tool' ? [[m.tool_call_id, i]] : [])));
    this.callIds = new Set(trace.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
    const names = new Set(trace.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function.name)));
    const tools = [...names].map(
      (name) =>
        new FunctionTool({
          name,
          description: `The trace's ${name}.`,
          inputSchema: { type: 'object', additionalProperties: true },
          callback: (_input, context) => (this.results.get(context.toolUse.toolUseId) ?? { promise: Promise.resolve('') }).promise,
        }),
    );
    this.agent = new Agent({ model: new TraceModel(this), tools, printer: false, ...manage() });
    this.timeHooks();
    // What Strands appends stands for the trace messages it came from; a user's interjection
    // joins the results' message before any context manager's hook sees that message.
    this.agent.addHook(MessageAddedEvent, (event) => this.appended(event.message), { order: HookOrder.SDK_FIRST - 1 });
    this.agent.addHook(BeforeModelCallEvent, (event) => this.interject(event.agent.messages.at(-1)), { order: HookOrder.SDK_FIRST - 1 });
  }

  /** Times the hooks of each event the context managers use, from the first to the last (an event inside another's hooks timed once). */
  timeHooks() {
    let start = null;
    for (const Event of [BeforeModelCallEvent, AfterModelCallEvent, MessageAddedEvent, AfterInvocationEvent]) {
      this.agent.addHook(Event, () => void (this.hookDepth++ === 0 && (start = process.cpuUsage())), { order: HookOrder.SDK_FIRST - 2 });
      this.agent.addHook(
        Event,
        () => {
          if (--this.hookDepth > 0) return;
          const d = process.cpuUsage(start);
          this.clock.us += d.user + d.system;
        },
        { order: HookOrder.SDK_LAST + 1 },
      );
    }
  }

  /** Remembers that a Strands message stands for `original` (one trace message or several). */
  wrap(original, message) {
    this.origin.set(message, { original, blocks: message.content.slice() });
    return message;
  }

  /** A Strands message as the trace messages it stands for (while unchanged), or converted. */
  openai(m) {
    const same = (blocks) => blocks.length === m.content.length && blocks.every((b, i) => b === m.content[i]);
    const o = this.origin.get(m);
    if (o !== undefined && same(o.blocks)) return Array.isArray(o.original) ? o.original : [o.original];
    let c = this.converted.get(m);
    if (c === undefined || !same(c.blocks)) {
      // Strands' strategies replace blocks in place: a message's conversion holds while its blocks do.
      c = { blocks: m.content.slice(), messages: this.inTraceOrder(toOpenAI(m)) };
      this.converted.set(m, c);
    }
    return c.messages;
  }

  /** Converted tool results in the trace's order (Strands holds a turn's results in the order of its calls). */
  inTraceOrder(messages) {
    const at = (m) => (m.role === 'tool' ? (this.resultAt.get(m.tool_call_id) ?? Infinity) : Infinity);
    return messages.some((m) => m.role === 'tool') ? messages.slice().sort((a, b) => at(a) - at(b)) : messages;
  }

  /**
   * The benchmark's tokens of a request: the system prompt (the trace's system messages when it
   * is the agent's), then the messages. Memoized per OpenAI message, by object and by content,
   * as every other peer's count is (Strands also counts one block at a time, each in a message
   * of its own made anew for the count); the counter's CPU is the tokenizing.
   */
  count(messages, systemPrompt) {
    const one = (m) => {
      let n = this.counts.get(m);
      if (n === undefined) {
        const key = JSON.stringify(m);
        n = this.countsByKey.get(key);
        if (n === undefined) {
          const start = process.cpuUsage();
          n = messageTokens(m, this.countText);
          const d = process.cpuUsage(start);
          this.countClock.us += d.user + d.system;
          // Strands' own count of the next request (outside the hooks) feeds the managers: management too.
          if (this.hookDepth === 0) this.clock.us += d.user + d.system;
          this.countsByKey.set(key, n);
        }
        this.counts.set(m, n);
      }
      return n;
    };
    let n = REQUEST_OVERHEAD;
    if (systemPrompt !== undefined && systemPrompt === this.agent.systemPrompt) for (const s of this.system) n += one(s);
    else if (typeof systemPrompt === 'string' && systemPrompt.length > 0) n += one({ role: 'system', content: systemPrompt });
    for (const m of messages) {
      if (this.origin.has(m) || m.content.length !== 1) {
        for (const x of this.openai(m)) n += one(x);
        continue;
      }
      // A block counted in a message of its own, made anew for each count: memoized by the block.
      let byRole = this.blockCounts.get(m.content[0]);
      if (byRole === undefined) {
        byRole = new Map();
        this.blockCounts.set(m.content[0], byRole);
      }
      let c = byRole.get(m.role);
      if (c === undefined) {
        c = this.inTraceOrder(toOpenAI(m)).reduce((sum, x) => sum + one(x), 0);
        byRole.set(m.role, c);
      }
      n += c;
    }
    return n;
  }

  /** The request of a call: the system prompt, then its messages. */
  request(messages) {
    return [...this.system, ...messages.flatMap((m) => this.openai(m))];
  }

  /** Maps what Strands appended back to the trace. */
  appended(m) {
    this.know(m);
    if (this.origin.has(m)) return; // sent with an invocation: wrapped when made
    if (m.role === 'assistant' && this.answers.length > 0) {
      this.wrap(this.answers.shift(), m);
      return;
    }
    const results = m.content.filter((b) => b instanceof ToolResultBlock).map((b) => b.toolUseId);
    if (m.role !== 'user' || results.length === 0) return;
    // The results stand for the trace's tool messages when they answer the same calls.
    const ids = new Set(this.toolTurn.map((t) => t.tool_call_id));
    if (results.length === ids.size && results.every((id) => ids.has(id))) this.wrap(this.toolTurn, m);
    this.toolTurn = [];
    this.interject(m);
  }

  /** Adds the interjections that arrived while the agent worked to the user message `m` (the results'). */
  interject(m) {
    if (this.interjections.length === 0 || m?.role !== 'user') return;
    const originals = [...this.openai(m), ...this.interjections];
    for (const x of this.interjections) m.content.push(...userBlocks(x));
    this.wrap(originals, m);
    this.know(m);
    this.interjections = [];
  }

  /** A summarizer's call: the offline summary of what it is asked, recorded. */
  async *summarize(messages, systemPrompt) {
    const text = summarizeSpan(spanText(messages));
    const input = [...(typeof systemPrompt === 'string' ? [{ role: 'system', content: systemPrompt }] : []), ...messages.flatMap(toOpenAI)];
    this.log.record(input, text);
    yield* stream([{ text }], { inputTokens: 0, outputTokens: 0, totalTokens: 0 });
  }

  /**
   * The agent calls the model: refused over the window (once per request), else waits for the
   * trace's answer. The model gets copies of the agent's messages (Strands clones them for its
   * middleware); the request is the agent's messages themselves, which the copies equal.
   */
  async modelCall(copies, systemPrompt) {
    const messages = this.agent.messages.slice();
    if (messages.length !== copies.length) throw new Error('the model was sent other messages than the agent holds');
    const tokens = this.count(messages, systemPrompt);
    if (tokens > this.window && !this.refused) {
      this.refused = true;
      this.overflow = true;
      throw new ContextWindowOverflowError(`prompt is too long: ${tokens} tokens > ${this.window} maximum`);
    }
    this.refused = false;
    this.notePass(messages);
    const call = { messages, reply: deferred(), tokens };
    this.call = call;
    for (const w of this.callWaiters.splice(0)) w();
    return call.reply.promise;
  }

  /** Notes a message's blocks as the agent's loop made them (a later change is a context manager's). */
  know(m) {
    this.known.set(m, m.content.slice());
  }

  /** A pass when a context manager removed or changed a message since the previous request (or since the loop added it). */
  notePass(messages) {
    const now = new Set(messages);
    let removed = 0;
    let changed = 0;
    for (const [m, blocks] of this.known) {
      if (!now.has(m)) removed++;
      else if (blocks.length !== m.content.length || blocks.some((b, i) => b !== m.content[i])) changed++;
    }
    if (removed + changed > 0 || this.overflow) this.pass = { overflow: this.overflow, removed, changed };
    this.overflow = false;
    this.known = new Map();
    for (const m of messages) this.know(m);
  }

  /** A trace message as a Strands message of the history sent with an invocation. */
  seed(group) {
    if (group[0].role === 'assistant') {
      const content = answerBlocks(group[0]).map((b) => (b.toolUse !== undefined ? new ToolUseBlock(b.toolUse) : new TextBlock(b.text)));
      return this.wrap(group[0], new Message({ role: 'assistant', content }));
    }
    const content = [];
    for (const m of group) {
      if (m.role === 'tool') content.push(new ToolResultBlock({ toolUseId: m.tool_call_id, status: 'success', content: [new TextBlock(textOf(m.content))] }));
    }
    for (const m of group) if (m.role !== 'tool') content.push(...userBlocks(m));
    return this.wrap(group.length === 1 ? group[0] : group, new Message({ role: 'user', content }));
  }

  /** Starts (after the running one) an invocation with the messages waiting to be sent: each answer alone, the rest grouped. */
  invoke() {
    const groups = [];
    for (const m of this.pending) {
      const last = groups.at(-1);
      if (m.role !== 'assistant' && last !== undefined && last[0].role !== 'assistant') last.push(m);
      else groups.push([m]);
    }
    const messages = groups.map((g) => this.seed(g));
    this.pending = [];
    this.loopOpen = true;
    this.refused = false; // a refusal that ended the previous invocation is not this one's
    this.running = this.running.then(() =>
      this.agent.invoke(messages).catch((e) => {
        this.errors.push(String(e?.message ?? e));
      }),
    );
  }

  add(m) {
    if (!this.started && isSystem(m)) {
      this.system.push(m);
      this.agent.systemPrompt = this.system.map((s) => textOf(s.content)).join('\n\n');
      return;
    }
    this.started = true;
    if (m.role === 'tool' && this.calls.includes(m.tool_call_id)) {
      this.toolTurn.push(m);
      this.results.get(m.tool_call_id).resolve(textOf(m.content));
      return;
    }
    if (m.role !== 'assistant') {
      // A user message (or a later system message, or a result no waiting call asked for).
      if (this.loopOpen && m.role !== 'tool') this.interjections.push(m);
      else this.pending.push(m);
      return;
    }
    const call = this.call;
    if (call === null) {
      this.pending.push(m);
      return;
    }
    // The model's answer to the waiting call.
    this.call = null;
    this.answers.push(m);
    const blocks = answerBlocks(m);
    this.calls = blocks.filter((b) => b.toolUse !== undefined).map((b) => b.toolUse.toolUseId);
    for (const id of this.calls) this.results.set(id, deferred());
    this.toolTurn = [];
    if (this.calls.length === 0) this.loopOpen = false;
    const outputTokens = messageTokens(m, this.countText);
    call.reply.resolve(stream(blocks, { inputTokens: call.tokens, outputTokens, totalTokens: call.tokens + outputTokens }));
  }

  /** The agent's next model call's messages; when none comes (the invocation ended), the history as it stands. */
  async next() {
    // The results the trace lacks come back empty.
    const missing = this.calls.filter((id) => !this.toolTurn.some((t) => t.tool_call_id === id));
    if (missing.length > 0) this.errors.push(`the trace has no result for ${missing.join(', ')}: the tool answered ''`);
    for (const id of missing) this.results.get(id).resolve('');
    this.calls = [];
    if (this.pending.length > 0) this.invoke();
    const called = new Promise((resolve) => (this.call !== null ? resolve('called') : this.callWaiters.push(() => resolve('called'))));
    const which = await Promise.race([called, this.running.then(() => 'ended')]);
    if (which === 'called' || this.call !== null) return this.call.messages;
    // The invocation ended (its last answer, or an error): what it did not take goes with the next one.
    this.loopOpen = false;
    this.pending.push(...this.toolTurn, ...this.interjections);
    this.toolTurn = [];
    this.interjections = [];
    return this.agent.messages;
  }
}

/**
 * A Strands system: `manage()` gives the Agent's context management options (`contextManager`
 * or `conversationManager`); `offloads` when the manager stashes what it replaces.
 */
export function strandsSystem(id, label, manage, { offloads = false } = {}) {
  return {
    id,
    label,
    family: 'strands',
    peer: true,
    start: (env) => {
      const s = new StrandsSession(env, manage);
      /** The originals a stash reference gives back: `<toolUseId>_<i>` a tool result's, else a message block's. */
      const reloadOne = async (ref) => {
        const found = await s.agent.contextManager?.stash?.retrieve(ref);
        if (!found) throw new Error(`no stash entry ${ref}`);
        const data = found.data;
        const text = typeof data?.text === 'string' ? data.text : data?.json !== undefined ? JSON.stringify(data.json) : JSON.stringify(data);
        const id = ref.slice(0, ref.lastIndexOf('_'));
        return [s.callIds.has(id) ? { role: 'tool', tool_call_id: id, content: text } : { role: 'user', content: text }];
      };
      const markersOf = (m) => stashRefs(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
      return {
        add: (m) => s.add(m),
        async request() {
          s.pass = null;
          const messages = await s.next();
          return { messages: s.request(messages), pass: s.pass, error: s.errors.shift() };
        },
        // Every reference the request names gives back what Strands stashed behind it.
        reloaded: async (messages) => (offloads ? (await Promise.all(messages.flatMap(markersOf).map((r) => reloadOne(r).catch(() => [])))).flat() : []),
        ...(offloads ? { reloadOne, markersOf: stashRefs } : {}),
      };
    },
  };
}

/** Strands' 'auto' strategies (a tool result over 1,500 tokens truncated to a 750-token preview) with the summary at `utilization`. */
const autoAt = (utilization) => ({
  strategies: [Offload.truncate('toolResults', { previewTokens: 750 }).when({ threshold: 1_500 }), Offload.summarize('*').when({ utilization, preserveRecent: 4 })],
});

export const STRANDS_SYSTEMS = [
  strandsSystem('strands-auto', "Strands contextManager 'auto'", () => ({ contextManager: 'auto' }), { offloads: true }),
  strandsSystem('strands-auto-75', "Strands contextManager, 'auto' strategies, summary at 75%", () => ({ contextManager: autoAt(0.75) }), { offloads: true }),
  strandsSystem('strands-summarizing', 'Strands SummarizingConversationManager (defaults: on overflow)', () => ({ conversationManager: new SummarizingConversationManager() })),
  strandsSystem('strands-summarizing-75', 'Strands SummarizingConversationManager, proactive at 75%', () => ({
    conversationManager: new SummarizingConversationManager({ proactiveCompression: { compressionThreshold: 0.75 } }),
  })),
  strandsSystem('strands-sliding', 'Strands SlidingWindowConversationManager (defaults: 40 messages)', () => ({ conversationManager: new SlidingWindowConversationManager() })),
  strandsSystem('strands-sliding-75', 'Strands SlidingWindowConversationManager, proactive at 75%', () => ({
    conversationManager: new SlidingWindowConversationManager({ proactiveCompression: { compressionThreshold: 0.75 } }),
  })),
];
