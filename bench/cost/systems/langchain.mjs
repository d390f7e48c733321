// LangChain's context managers, driven through their public APIs as createAgent drives them:
//
//   summarizationMiddleware   its `beforeModel` hook with the agent state; the state update it
//                             returns (remove all, then the summary and the kept messages) is
//                             applied, so the state carries from call to call.
//   contextEditingMiddleware  its `wrapModelCall` hook with the model request; the request's
//                             messages are the state's own list, so a cleared tool result stays
//                             cleared (as in createAgent).
//   trimMessages              the plain function, on the whole history before every call.
//
// The trace's leading system messages are the agent's system prompt (createAgent's
// `systemPrompt`, outside the state), sent first in every request. Every token count the peers
// make uses the benchmark's o200k counter with the same per-message accounting, so each one
// triggers at the same request size as the others: the summarization hook counts the state
// only, so its trigger is the window's trigger minus the system prompt's tokens; the context
// editing hook counts the system prompt itself (its `model` token count method).
import { AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage, trimMessages } from '@langchain/core/messages';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { ClearToolUsesEdit, contextEditingMiddleware, summarizationMiddleware } from 'langchain';
import { REQUEST_OVERHEAD, messageTokens } from '../../../js/accounting.js';
import { summarizeSpan } from '../summarizer.mjs';
import { Bridge, parseArguments } from './convert.mjs';

const REMOVE_ALL = '__remove_all__'; // @langchain/langgraph's REMOVE_ALL_MESSAGES

let made = 0;

/** A trace message as a LangChain message, with an id of its own (copies LangChain makes keep it). */
function toLangChain(m) {
  const content = m.content ?? '';
  const id = `trace-${++made}`;
  switch (m.role) {
    case 'system':
    case 'developer':
      return new SystemMessage({ content, id });
    case 'user':
      return new HumanMessage({ content, id });
    case 'tool':
      return new ToolMessage({ content, tool_call_id: m.tool_call_id, id });
    case 'assistant':
      return new AIMessage({
        id,
        content,
        tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: parseArguments(c.function.arguments), type: 'tool_call' })),
      });
    default:
      throw new Error(`no LangChain message for role ${m.role}`);
  }
}

/** A LangChain message the peer wrote or changed, as an OpenAI chat message. */
function toOpenAI(lc) {
  const type = lc.getType();
  const content = lc.content;
  switch (type) {
    case 'system':
      return { role: 'system', content };
    case 'human':
      return { role: 'user', content };
    case 'tool':
      return { role: 'tool', tool_call_id: lc.tool_call_id, content };
    case 'ai': {
      const calls = lc.tool_calls ?? [];
      const m = { role: 'assistant', content: calls.length > 0 && content === '' ? null : content };
      if (calls.length > 0) m.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } }));
      return m;
    }
    default:
      throw new Error(`no OpenAI message for a LangChain ${type} message`);
  }
}

/** The conversation as LangChain sees it: the system prompt apart, the state's messages, and the way back. */
class Conversation {
  constructor(countText, countClock) {
    this.countClock = countClock;
    // A message's identity for the way back: its content, its tool calls, the call it answers.
    const signatures = new WeakMap();
    const callsOf = (calls) => {
      if (calls === undefined || calls.length === 0) return '';
      let sig = signatures.get(calls);
      if (sig === undefined) {
        sig = calls.map((c) => `${c.id} ${c.name} ${JSON.stringify(c.args)}`).join('\n');
        signatures.set(calls, sig);
      }
      return sig;
    };
    this.bridge = new Bridge(
      (lc) => [lc.content, callsOf(lc.tool_calls), lc.tool_call_id],
      (lc) => lc.id,
    );
    this.system = []; // the leading system messages, as sent
    this.messages = []; // the state (or, for trimMessages, the history after the system prompt)
    this.countText = countText;
    this.counts = new WeakMap();
  }

  add(message) {
    if (this.messages.length === 0 && (message.role === 'system' || message.role === 'developer')) this.system.push(message);
    else this.messages.push(this.bridge.wrap(message, toLangChain(message)));
  }

  systemPrompt() {
    return this.system.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n\n');
  }

  systemLangChain() {
    return this.system.map((m) => this.bridge.wrap(m, toLangChain(m)));
  }

  openai(lc) {
    return this.bridge.back(lc, toOpenAI);
  }

  /** The request: the system prompt, then `messages` (LangChain), as OpenAI messages. */
  request(messages) {
    return [...this.system, ...messages.map((m) => this.openai(m))];
  }

  /**
   * The peers' token counter: the request tokens of a list of LangChain messages, memoized by
   * the OpenAI message each one stands for (trimMessages copies every message on every call;
   * a copy of an unchanged message maps back to the same original and is not counted again).
   */
  counter() {
    const one = (lc) => {
      const m = this.openai(lc);
      let n = this.counts.get(m);
      if (n === undefined) {
        n = this.countClock.timeSync(() => messageTokens(m, this.countText));
        this.counts.set(m, n);
      }
      return n;
    };
    return (messages) => messages.reduce((s, m) => s + one(m), REQUEST_OVERHEAD);
  }
}

/** The span inside LangChain's summary prompt (its `<messages>` block), or the whole prompt. */
function spanOf(prompt) {
  const start = prompt.indexOf('Messages to summarize:\n');
  const end = prompt.lastIndexOf('\n</messages>');
  return start >= 0 && end > start ? prompt.slice(start + 'Messages to summarize:\n'.length, end) : prompt;
}

/** A chat model that answers with the benchmark's offline summary of the span it is given. */
class SpanSummaryModel extends BaseChatModel {
  constructor(log) {
    super({});
    this.spanLog = log;
  }

  _llmType() {
    return 'offline-span-summary';
  }

  async _generate(messages) {
    const prompt = messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
    const text = summarizeSpan(spanOf(prompt));
    this.spanLog.record(
      messages.map((m) => ({ role: m.getType() === 'system' ? 'system' : 'user', content: m.content })),
      text,
    );
    return { generations: [{ text, message: new AIMessage(text) }] };
  }
}

function summarization(id, label, keep) {
  return {
    id,
    label,
    family: 'langchain',
    peer: true,
    start: ({ window, ratio, log, clock, countText, countClock }) => {
      const c = new Conversation(countText, countClock);
      let middleware = null;
      const runtime = { context: {} };
      return {
        add: (m) => c.add(m),
        async request() {
          if (middleware === null) {
            // Made once the system prompt is known: the trigger counts the state only.
            const systemTokens = c.system.reduce((s, m) => s + messageTokens(m, countText), 0);
            middleware = summarizationMiddleware({
              model: new SpanSummaryModel(log),
              trigger: { tokens: Math.floor(window * ratio) - systemTokens },
              keep,
              tokenCounter: c.counter(),
            });
          }
          const state = { messages: c.messages };
          const update = await clock.time(() => middleware.beforeModel(state, runtime));
          let pass = null;
          if (update?.messages) {
            const [first, ...rest] = update.messages;
            if (!(RemoveMessage.isInstance(first) && first.id === REMOVE_ALL)) throw new Error('summarizationMiddleware returned an update the benchmark cannot apply');
            pass = { removed: c.messages.length, kept: rest.length - 1 };
            c.messages = rest;
          }
          return { messages: c.request(c.messages), pass };
        },
        reloaded: async () => [],
      };
    },
  };
}

const contextEditing = {
  id: 'langchain-context-editing',
  label: 'LangChain contextEditingMiddleware + ClearToolUsesEdit',
  family: 'langchain',
  peer: true,
  start: ({ window, ratio, clock, countText, countClock }) => {
    const c = new Conversation(countText, countClock);
    const middleware = contextEditingMiddleware({
      edits: [new ClearToolUsesEdit({ trigger: { tokens: Math.floor(window * ratio) } })],
      tokenCountMethod: 'model',
    });
    const count = c.counter();
    const model = {
      getName: () => 'o200k-counter',
      getNumTokensFromMessages: async (messages) => ({ totalCount: count(messages) }),
    };
    return {
      add: (m) => c.add(m),
      async request() {
        let sent = null;
        const before = c.messages.slice();
        const request = { model, systemPrompt: c.systemPrompt(), messages: c.messages, tools: [], state: { messages: c.messages }, runtime: { context: {} } };
        await clock.time(() =>
          middleware.wrapModelCall(request, async (req) => {
            sent = req.messages;
            return new AIMessage('');
          }),
        );
        const changed = sent.length !== before.length || sent.some((m, i) => m !== before[i]);
        return { messages: c.request(sent), pass: changed ? { cleared: sent.filter((m, i) => m !== before[i]).length } : null };
      },
      reloaded: async () => [],
    };
  },
};

const trim = {
  id: 'langchain-trim',
  label: "LangChain trimMessages, startOn 'human'",
  family: 'langchain',
  peer: true,
  start: ({ window, ratio, clock, countText, countClock }) => {
    const c = new Conversation(countText, countClock);
    const tokenCounter = c.counter();
    let system = null;
    return {
      add: (m) => c.add(m),
      async request() {
        system ??= c.systemLangChain();
        const history = [...system, ...c.messages];
        const kept = await clock.time(() => trimMessages(history, { maxTokens: Math.floor(window * ratio), strategy: 'last', tokenCounter, includeSystem: true, startOn: 'human' }));
        // When nothing after the system prompt can start on a human message, trimMessages
        // returns [undefined] (the system message dropped too): an empty request.
        const messages = kept.filter((m) => m !== undefined).map((m) => c.openai(m));
        return { messages, pass: null, error: messages.length < kept.length ? 'trimMessages returned an undefined message' : undefined };
      },
      reloaded: async () => [],
    };
  },
};

export const LANGCHAIN_SYSTEMS = [
  summarization('langchain-summarization-20', 'LangChain summarizationMiddleware, keep 20 messages', { messages: 20 }),
  summarization('langchain-summarization-4k', 'LangChain summarizationMiddleware, keep 4k tokens', { tokens: 4000 }),
  trim,
  contextEditing,
];
