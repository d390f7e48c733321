// autocontext/adk with the real @google/adk package: examples/adk-agent's runner driven by a
// scripted Gemini model (a BaseLlm). Every request the model receives is checked (valid for
// Gemini, inside the window, the turn's thought signatures intact); the session keeps every
// event; the model reloads what was offloaded through the context_reload tool the plugin adds;
// a session carries its memory from one question to the next.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BaseLlm, FunctionTool, LogLevel, setLogLevel } from '@google/adk';
import { z } from 'zod';
import { AutoContextMemory, countTokens, validate } from 'autocontext';
import { AutoContextPlugin } from 'autocontext/adk';
import { ask, createRunner } from '../examples/adk-agent/agent.mjs';
import { markers, text } from './helpers.mjs';

setLogLevel(LogLevel.ERROR);

const WINDOW = 16_000;
const files = { 'src/a.rs': `fn a() {}\n${text(30_000, 1)}`, 'src/b.rs': `fn b() {}\n${text(30_000, 2)}`, 'src/c.rs': `fn c() {}\n${text(30_000, 3)}` };
const readFile = new FunctionTool({
  name: 'read_file',
  description: 'Read a file',
  parameters: z.object({ path: z.string() }),
  execute: async ({ path }) => files[path] ?? `no file ${path}`,
});

/** A Gemini model for ADK whose answers a script picks from the contents it gets; it records every request. */
class ScriptedGemini extends BaseLlm {
  constructor(script) {
    super({ model: 'scripted-gemini' });
    this.script = script;
    this.requests = [];
  }
  async *generateContentAsync(llmRequest) {
    const request = JSON.parse(JSON.stringify({ contents: llmRequest.contents, tools: llmRequest.config?.tools ?? [] }));
    this.requests.push(request);
    const content = this.script(request.contents, this.requests.length);
    yield { content, usageMetadata: { promptTokenCount: tokensOf(request.contents), candidatesTokenCount: 5 } };
  }
  async connect() {
    throw new Error('the scripted model has no live connection');
  }
}

/** About what a request's contents cost. */
function tokensOf(contents) {
  return contents.reduce((n, c) => n + countTokens(JSON.stringify(c.parts ?? [])), 0);
}

/** Gemini 3's shape: a thought, then calls without ids, the first one signed. */
const calls = (n, ...list) => ({
  role: 'model',
  parts: [{ text: `Step ${n}.`, thought: true }, ...list.map((call, k) => ({ functionCall: call, ...(k === 0 ? { thoughtSignature: `U0lH${n}` } : {}) }))],
});

test('an ADK runner: every model call valid and in the window, reloadable; the session keeps every event', async () => {
  let reloaded;
  const model = new ScriptedGemini((contents, n) => {
    const seen = JSON.stringify(contents);
    if (n === 1) return calls(1, { name: 'read_file', args: { path: 'src/a.rs' } }, { name: 'read_file', args: { path: 'src/b.rs' } });
    if (n === 2) {
      reloaded = markers(seen)[0];
      assert.ok(reloaded, 'the second request carries an offload marker');
      return calls(2, { name: 'context_reload', args: { working_context_offload_uuid: reloaded } });
    }
    if (n === 3) {
      assert.match(seen, /Original content of offload/);
      return { role: 'model', parts: [{ text: 'Both are empty functions.', thoughtSignature: 'QW5z' }] };
    }
    if (n === 4) return calls(4, { name: 'read_file', args: { path: 'src/c.rs' } });
    return { role: 'model', parts: [{ text: 'c() is empty too.' }] };
  });
  const { runner, context } = createRunner({ model, tools: [readFile], memory: { maxToken: WINDOW, toolResultLimit: 8_000 } });
  const session = await runner.sessionService.createSession({ appName: 'assistant', userId: 'user' });
  assert.equal(await ask({ runner, sessionId: session.id, question: 'What do a.rs and b.rs define?' }), 'Both are empty functions.');
  assert.equal(await ask({ runner, sessionId: session.id, question: 'And c.rs?' }), 'c() is empty too.');

  assert.equal(model.requests.length, 5);
  for (const [k, r] of model.requests.entries()) {
    assert.deepStrictEqual(validate(r.contents, 'gemini', { request: true }), [], `request ${k}`);
    assert.ok(tokensOf(r.contents) < WINDOW, `request ${k}: about ${tokensOf(r.contents)} tokens`);
    const declared = r.tools.flatMap((t) => t.functionDeclarations ?? []).map((d) => d.name);
    assert.deepStrictEqual(declared.filter((d) => d === 'context_reload'), ['context_reload'], `request ${k}: ${declared}`);
  }
  // The tool loop's model turns reach the model as it wrote them, signature included.
  const third = model.requests[2].contents;
  assert.deepStrictEqual(third[1], calls(1, { name: 'read_file', args: { path: 'src/a.rs' } }, { name: 'read_file', args: { path: 'src/b.rs' } }));
  assert.deepStrictEqual(third.at(-1).parts[0].functionResponse.name, 'context_reload');
  // The session keeps every event, the whole files among them; the memory holds the whole history.
  const events = (await runner.sessionService.getSession({ appName: 'assistant', userId: 'user', sessionId: session.id })).events;
  const results = events.flatMap((e) => e.content?.parts ?? []).filter((p) => p.functionResponse?.name === 'read_file');
  assert.deepStrictEqual(results.map((p) => p.functionResponse.response.result), [files['src/a.rs'], files['src/b.rs'], files['src/c.rs']]);
  const memory = context.memory(session.id, 'assistant');
  assert.ok(memory.offloads().some((o) => o.uuid === reloaded));
  const originals = await memory.originalMessages();
  assert.equal(originals.filter((c) => c.role === 'user' && c.parts.some((p) => p.text !== undefined)).length, 2, 'both questions, added once');
  assert.deepStrictEqual(memory.validate(), []);
});

test('AutoContextPlugin: one memory per session and agent, typed errors, the tool on request', async () => {
  assert.throws(() => new AutoContextPlugin('nope'), (e) => e.code === 'INVALID_ARGUMENT' && e.field === 'memory');
  assert.throws(() => new AutoContextPlugin(() => new AutoContextMemory({ format: 'anthropic' })), (e) => e.code === 'INVALID_CONFIG' && e.field === 'format');
  const made = [];
  const plugin = new AutoContextPlugin((sessionId, agentName) => {
    made.push([sessionId, agentName]);
    return new AutoContextMemory({ format: 'gemini', maxToken: 4_000, sessionId: `${sessionId}:${agentName}` });
  }, { addReloadTool: false, name: 'context' });
  assert.equal(plugin.name, 'context');
  assert.equal(plugin.reloadTool.name, 'context_reload');
  assert.equal(plugin.reloadTool._getDeclaration().parametersJsonSchema.required[0], 'working_context_offload_uuid');
  const request = (contents) => ({ contents, config: {}, toolsDict: {}, liveConnectConfig: {} });
  const where = (sessionId, agentName) => ({ sessionId, agentName });
  const history = [{ role: 'user', parts: [{ text: 'hi' }] }];
  const one = request(structuredClone(history));
  assert.equal(await plugin.beforeModelCallback({ callbackContext: where('s1', 'a'), llmRequest: one }), undefined);
  assert.deepStrictEqual(one.contents, history);
  assert.deepStrictEqual(one.config, {}, 'no tool added when asked not to');
  await plugin.beforeModelCallback({ callbackContext: where('s1', 'b'), llmRequest: request(structuredClone(history)) });
  await plugin.beforeModelCallback({ callbackContext: where('s1', 'a'), llmRequest: request([...structuredClone(history), { role: 'model', parts: [{ text: 'hello' }] }]) });
  assert.deepStrictEqual(made.slice(1), [['s1', 'a'], ['s1', 'b']], 'one memory per session and agent, kept');
  assert.equal(plugin.memory('s1', 'a').messages().length, 2);
  // Usage is read from the response.
  await plugin.afterModelCallback({ callbackContext: where('s1', 'a'), llmResponse: { usageMetadata: { promptTokenCount: 12, cachedContentTokenCount: 0 } } });
  await assert.rejects(plugin.beforeModelCallback({ callbackContext: where('s1', 'a'), llmRequest: {} }), (e) => e.code === 'INVALID_ARGUMENT');
});
