// autocontext/langchain with the real langchain package: examples/langchain-agent's createAgent
// agent driven by a fake chat model of @langchain/core. Every request the model receives is
// checked (inside the window, tool calls paired); the agent's state keeps every message; the
// model reloads what was offloaded through the context_reload tool the middleware registered;
// untouched messages reach the model as the state's own instances; a thread carries its memory
// from one invoke to the next.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AIMessage, HumanMessage, ToolMessage, createAgent, tool } from 'langchain';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { MemorySaver } from '@langchain/langgraph';
import { AutoContextMemory, countTokens, offlineSummarize, validate } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { autocontextMiddleware, fromOpenAI, toOpenAI } from 'autocontext/langchain';
import { createAssistant } from '../examples/langchain-agent/agent.mjs';
import { markers, text } from './helpers.mjs';

const WINDOW = 6_000;
const files = { 'src/a.rs': `fn a() {}\n${text(14_000, 1)}`, 'src/b.rs': `fn b() {}\n${text(14_000, 2)}` };
const readFile = tool(async ({ path }) => files[path] ?? `no file ${path}`, {
  name: 'read_file',
  description: 'Read a file',
  schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
});

/** A fake chat model of @langchain/core whose answers a script picks from the messages it gets. */
class ScriptedModel extends FakeStreamingChatModel {
  constructor(script) {
    super({});
    this.script = script;
    this.requests = [];
  }
  bindTools(tools) {
    this.boundTools = tools;
    return this;
  }
  async _generate(messages) {
    this.requests.push(messages);
    const message = this.script(messages, this.requests.length);
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

const readCall = (id, path) => ({ id, name: 'read_file', args: { path }, type: 'tool_call' });

/** What every request the model gets must be: paired tool calls, inside the window. */
function checkRequest(messages, what) {
  const wire = messages.filter((m) => m.getType() !== 'system').map((m, i) => toOpenAI(m, i));
  assert.deepStrictEqual(validate(wire, 'openai'), [], what);
  const tokens = wire.reduce((n, m) => n + countTokens(JSON.stringify(m.content ?? '')) + countTokens(JSON.stringify(m.tool_calls ?? '')), 0);
  assert.ok(tokens < WINDOW, `${what}: about ${tokens} tokens for a ${WINDOW}-token window`);
}

test('a createAgent agent: every model call in the window, reloadable; the state keeps every message', async () => {
  let reloaded;
  const model = new ScriptedModel((messages, n) => {
    const seen = JSON.stringify(messages.map((m) => m.content));
    if (n === 1) return new AIMessage({ content: '', tool_calls: [readCall('c_a', 'src/a.rs'), readCall('c_b', 'src/b.rs')] });
    if (n === 2) {
      reloaded = markers(seen)[0];
      assert.ok(reloaded, 'the second request carries an offload marker');
      return new AIMessage({ content: '', tool_calls: [{ id: 'c_r', name: 'context_reload', args: { working_context_offload_uuid: reloaded }, type: 'tool_call' }] });
    }
    assert.match(seen, /Original content of offload/);
    return new AIMessage('Both define one empty function.');
  });
  const store = new MemoryStore();
  const agent = createAssistant({ model, tools: [readFile], memory: { maxToken: WINDOW, toolResultLimit: 3_000, store } });
  const state = await agent.invoke({ messages: [new HumanMessage('What do src/a.rs and src/b.rs define?')] });

  assert.equal(state.messages.at(-1).content, 'Both define one empty function.');
  assert.equal(model.requests.length, 3);
  assert.ok(model.boundTools.some((t) => t.name === 'context_reload'), 'the middleware registered the reload tool');
  for (const [k, r] of model.requests.entries()) checkRequest(r, `model call ${k + 1}`);
  // The state is whole: both files in full, and the reload answered with an original.
  const results = state.messages.filter((m) => ToolMessage.isInstance(m));
  assert.deepStrictEqual(results.slice(0, 2).map((m) => m.content), Object.values(files));
  assert.match(results[2].content, new RegExp(`^Original content of offload ${reloaded}`));
  assert.ok(results[2].content.includes('fn a() {}') || results[2].content.includes('fn b() {}'));
  // The model got the state's own instances where nothing changed, and rebuilt tool messages
  // (same id and call id, shorter content) where the results were truncated.
  const [question] = state.messages;
  assert.equal(model.requests[2].find((m) => m.getType() === 'human'), question, 'an untouched message is the same instance');
  const truncated = model.requests[1].filter((m) => ToolMessage.isInstance(m));
  for (const [i, m] of truncated.entries()) {
    assert.equal(m.id, results[i].id);
    assert.equal(m.tool_call_id, results[i].tool_call_id);
    assert.ok(m.content.length < results[i].content.length && markers(m.content).length === 1);
  }
  assert.ok(store.size >= 2, 'the originals went to the store');
});

test('a thread carries its memory from invoke to invoke; the engine notes are messages the model takes', async () => {
  const model = new ScriptedModel((messages, n) =>
    n % 2 === 1 ? new AIMessage({ content: '', tool_calls: [readCall(`c${n}`, Object.keys(files)[((n - 1) / 2) % 2])] }) : new AIMessage(`Read it (${n}).`),
  );
  const passes = [];
  const middleware = autocontextMiddleware(
    (threadId) =>
      new AutoContextMemory({
        maxToken: WINDOW,
        toolResultLimit: 8_000,
        msgThreshold: 10,
        summarize: offlineSummarize,
        minCompressionTokenThreshold: 200,
        historyRollupKeepRecentRounds: 1,
        historyRollupKeepRecentTokens: 500,
        sessionId: `lc-${threadId}`,
      }),
    { onCompress: (r, thread) => passes.push([thread, ...r.events.map((e) => e.type)]) },
  );
  const agent = createAgent({ model, tools: [readFile], middleware: [middleware], checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: 'thread-1' } };
  let memory;
  for (let turn = 1; turn <= 5; turn++) {
    const state = await agent.invoke({ messages: [new HumanMessage(`Turn ${turn}: read the next file.`)] }, config);
    memory ??= middleware.memory('thread-1');
    assert.equal(middleware.memory('thread-1'), memory, `turn ${turn}: the same memory carries on`);
    assert.equal((await memory.originalMessages()).length, state.messages.length - 1, `turn ${turn}: every message once, up to the last call`);
  }
  for (const [k, r] of model.requests.entries()) checkRequest(r, `model call ${k + 1}`);
  assert.ok(passes.length >= 2 && passes.every(([t]) => t === 'thread-1'), JSON.stringify(passes));
  const last = model.requests.at(-1);
  const notes = last.filter((m) => !ToolMessage.isInstance(m) && markers(JSON.stringify(m.content)).length > 0);
  assert.ok(notes.length > 0, `the engine's notes reach the model; passes: ${JSON.stringify(passes)}`);
  assert.ok(notes.every((m) => HumanMessage.isInstance(m) || AIMessage.isInstance(m)));
  assert.equal((await middleware.memory('default').originalMessages()).length, 0, 'the default thread saw nothing');
});

test('messages convert to the OpenAI shape and back without loss', () => {
  const ai = new AIMessage({
    id: 'm1',
    content: [{ type: 'text', text: 'Reading.' }],
    tool_calls: [{ id: 't1', name: 'read_file', args: { path: 'a', n: [1, { x: null }] }, type: 'tool_call' }],
    response_metadata: { model: 'm' },
  });
  const wire = toOpenAI(ai);
  assert.deepStrictEqual(wire, {
    role: 'assistant',
    content: [{ type: 'text', text: 'Reading.' }],
    tool_calls: [{ id: 't1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a","n":[1,{"x":null}]}' } }],
  });
  const back = fromOpenAI(JSON.parse(JSON.stringify(wire)), ai);
  assert.ok(AIMessage.isInstance(back));
  assert.deepStrictEqual([back.id, back.content, back.tool_calls, back.response_metadata.model], [ai.id, ai.content, ai.tool_calls, 'm']);
  const result = new ToolMessage({ id: 'm2', content: 'out', tool_call_id: 't1', status: 'error' });
  const r = fromOpenAI({ ...toOpenAI(result), content: 'short' }, result);
  assert.deepStrictEqual([r.id, r.content, r.tool_call_id, r.status], ['m2', 'short', 't1', 'error']);
  assert.deepStrictEqual(toOpenAI(new HumanMessage({ content: 'hi', name: 'ann' })), { role: 'user', content: 'hi', name: 'ann' });
  assert.ok(HumanMessage.isInstance(fromOpenAI({ role: 'user', content: [{ type: 'text', text: 'note' }] })));
  assert.throws(() => autocontextMiddleware(() => new AutoContextMemory({ format: 'anthropic' })), { code: 'INVALID_CONFIG', field: 'format' });
  assert.throws(() => autocontextMiddleware('memory'), { code: 'INVALID_ARGUMENT' });
});
