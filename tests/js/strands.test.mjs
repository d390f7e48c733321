// autocontext/strands with the real @strands-agents/sdk package: examples/strands-agent's agent
// driven by a scripted Strands Model. Every request the model receives is checked (paired tool
// use, alternating turns, inside the window); the agent's history is the memory's working list,
// with untouched messages as the agent's own instances; the model reloads what was offloaded
// through the context_reload tool the manager gives the agent; a context-window overflow is
// compacted and retried.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, ContextWindowOverflowError, FunctionTool, Message, Model } from '@strands-agents/sdk';
import { AutoContextMemory, countTokens, validate } from 'autocontext';
import { AutoContextConversationManager, fromWire, toWire } from 'autocontext/strands';
import { createAssistant } from '../examples/strands-agent/agent.mjs';
import { markers, text } from './helpers.mjs';

const WINDOW = 16_000;
const files = { 'src/a.rs': `fn a() {}\n${text(30_000, 1)}`, 'src/b.rs': `fn b() {}\n${text(30_000, 2)}`, 'src/c.rs': `fn c() {}\n${text(30_000, 3)}` };
const readFile = new FunctionTool({
  name: 'read_file',
  description: 'Read a file',
  inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  callback: (input) => files[input.path] ?? `no file ${input.path}`,
});

/** A Strands model whose answers a script picks from the messages it gets; it records every request. */
class ScriptedModel extends Model {
  constructor(script) {
    super();
    this.script = script;
    this.requests = [];
    this.config = { modelId: 'scripted' };
  }
  updateConfig(config) {
    Object.assign(this.config, config);
  }
  getConfig() {
    return this.config;
  }
  async *stream(messages, options) {
    const request = { messages: messages.map((m) => m.toJSON()), tools: (options?.toolSpecs ?? []).map((t) => t.name) };
    this.requests.push(request);
    const blocks = this.script(request.messages, this.requests.length);
    if (blocks instanceof Error) throw blocks;
    yield { type: 'modelMessageStartEvent', role: 'assistant' };
    for (const b of blocks) {
      if ('toolUse' in b) {
        yield { type: 'modelContentBlockStartEvent', start: { type: 'toolUseStart', name: b.toolUse.name, toolUseId: b.toolUse.toolUseId } };
        yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input: JSON.stringify(b.toolUse.input) } };
      } else if ('reasoning' in b) {
        yield { type: 'modelContentBlockStartEvent' };
        yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'reasoningContentDelta', ...b.reasoning } };
      } else {
        yield { type: 'modelContentBlockStartEvent' };
        yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text: b.text } };
      }
      yield { type: 'modelContentBlockStopEvent' };
    }
    yield { type: 'modelMessageStopEvent', stopReason: blocks.some((b) => 'toolUse' in b) ? 'toolUse' : 'endTurn' };
    yield { type: 'modelMetadataEvent', usage: { inputTokens: tokensOf(request.messages), outputTokens: 5, totalTokens: tokensOf(request.messages) + 5 } };
  }
}

function tokensOf(messages) {
  return messages.reduce((n, m) => n + countTokens(JSON.stringify(m.content)), 0);
}

const use = (id, name, input) => ({ toolUse: { toolUseId: id, name, input } });
const thinking = (n) => ({ reasoning: { text: `Step ${n}.`, signature: `SIG-${n}` } });

test('a Strands agent: every model call valid and in the window, reloadable; untouched messages are the agent\'s own', async () => {
  let reloaded;
  const model = new ScriptedModel((messages, n) => {
    const seen = JSON.stringify(messages);
    if (n === 1) return [thinking(1), use('t_a', 'read_file', { path: 'src/a.rs' }), use('t_b', 'read_file', { path: 'src/b.rs' })];
    if (n === 2) {
      reloaded = markers(seen)[0];
      assert.ok(reloaded, 'the second request carries an offload marker');
      return [thinking(2), use('t_r', 'context_reload', { working_context_offload_uuid: reloaded })];
    }
    if (n === 3) {
      assert.match(seen, /Original content of offload/);
      return [{ text: 'Both are empty functions.' }];
    }
    if (n === 4) return [use('t_c', 'read_file', { path: 'src/c.rs' })];
    return [{ text: 'c() is empty too.' }];
  });
  const agent = createAssistant({ model, tools: [readFile], memory: { maxToken: WINDOW, toolResultLimit: 8_000 } });
  const first = agent.messages;
  assert.equal(String(await agent.invoke('What do a.rs and b.rs define?')).trim(), 'Both are empty functions.');
  const question = agent.messages[0];
  assert.equal(String(await agent.invoke('And c.rs?')).trim(), 'c() is empty too.');

  assert.equal(model.requests.length, 5);
  for (const [k, r] of model.requests.entries()) {
    const wire = r.messages.map(toWire);
    assert.deepStrictEqual(validate(wire, 'anthropic', { request: true }), [], `request ${k}`);
    assert.ok(tokensOf(r.messages) < WINDOW, `request ${k}: about ${tokensOf(r.messages)} tokens`);
    assert.ok(r.tools.includes('context_reload') && r.tools.includes('read_file'), `request ${k}: ${r.tools}`);
  }
  // Signed reasoning and the calls of the tool loop reach the model as it wrote them.
  const third = model.requests[2].messages;
  assert.deepStrictEqual(third[1].content.slice(0, 2), [{ reasoning: thinking(1).reasoning }, { toolUse: use('t_a', 'read_file', { path: 'src/a.rs' }).toolUse }]);
  // The history is the working list, in place, with the agent's own instances where nothing changed.
  assert.equal(agent.messages, first, 'the same array, changed in place');
  assert.equal(agent.messages[0], question, 'the untouched question is the same Message');
  assert.ok(agent.messages.every((m) => m instanceof Message));
  const results = agent.messages.flatMap((m) => m.content).filter((b) => b.type === 'toolResultBlock');
  assert.ok(results.some((b) => markers(JSON.stringify(b)).length > 0), 'a result shrank behind a marker');
});

test('AutoContextConversationManager: overflow recovery, conversions, typed errors', async () => {
  assert.throws(() => new AutoContextConversationManager({ format: 'openai' }), (e) => e.code === 'INVALID_CONFIG' && e.field === 'format');
  assert.throws(() => new AutoContextConversationManager({ maxToken: -1 }), (e) => e.code === 'INVALID_CONFIG');
  // Conversions: every block kind goes to the Anthropic shape and back.
  const message = Message.fromMessageData({
    role: 'assistant',
    content: [
      { reasoning: { text: 'hm', signature: 'S' } },
      { text: 'Reading.' },
      { toolUse: { name: 'f', toolUseId: 'x', input: { a: 1 }, reasoningSignature: 'R' } },
      { cachePoint: { cacheType: 'default' } },
    ],
  });
  const wire = toWire(message);
  assert.deepStrictEqual(wire.content.map((b) => b.type), ['thinking', 'text', 'tool_use', 'strands']);
  assert.deepStrictEqual(fromWire(wire, message).toJSON(), message.toJSON());
  const results = Message.fromMessageData({ role: 'user', content: [{ toolResult: { toolUseId: 'x', status: 'error', content: [{ text: 'bad' }, { json: { n: 1 } }] } }] });
  assert.deepStrictEqual(toWire(results).content[0], { type: 'tool_result', tool_use_id: 'x', content: [{ type: 'text', text: 'bad' }, { type: 'text', text: '{"n":1}' }], is_error: true });

  // A context-window overflow, with the provider's numbers: the manager compacts the answered
  // history hard (the numbers overrule a window set too large) and Strands retries.
  let overflowed = false;
  const model = new ScriptedModel((messages, n) => {
    if (n === 1) return [use('t_a', 'read_file', { path: 'src/a.rs' }), use('t_b', 'read_file', { path: 'src/b.rs' })];
    if (n === 2) return [{ text: 'Both are empty.' }];
    if (n === 3) return [use('t_c', 'read_file', { path: 'src/c.rs' })];
    if (!overflowed) {
      overflowed = true;
      return new ContextWindowOverflowError('prompt is too long: 30000 tokens > 20000 maximum');
    }
    return [{ text: `done after ${messages.length} messages` }];
  });
  const manager = new AutoContextConversationManager({ maxToken: 200_000, toolResultLimit: 100_000 });
  const agent = new Agent({ model, tools: [readFile], printer: false, conversationManager: manager });
  await agent.invoke('read a and b');
  const answer = String(await agent.invoke('and c?')).trim();
  assert.ok(overflowed && answer.startsWith('done'), answer);
  assert.equal(model.requests.length, 5);
  assert.ok(tokensOf(model.requests[4].messages) < tokensOf(model.requests[3].messages), 'the retried request is smaller than the refused one');
  assert.deepStrictEqual(manager.memory(agent).validate(), []);
  // The originals stay one reload away.
  const uuid = markers(JSON.stringify(agent.messages.map((m) => m.toJSON())))[0];
  assert.match(await manager.memory(agent).handleReloadCall({ working_context_offload_uuid: uuid }), /Original content of offload/);
});
