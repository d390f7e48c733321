// autocontext/mastra with the real @mastra/core: examples/mastra-agent's agent driven by the AI
// SDK's mock model. Every prompt the model receives is checked: inside the window, valid, and
// in the provider-level shape (part lists for user and assistant content; a string there broke
// Mastra's provider layer). Mastra's own history keeps every message; the model reloads what was
// offloaded through the context_reload tool Mastra runs; a second call on the same history
// carries the memory on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTool } from '@mastra/core/tools';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { Agent } from '@mastra/core/agent';
import { AutoContextMemory, countTokens, offlineSummarize, validate } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { autocontextProcessor } from 'autocontext/mastra';
import { createAssistant } from '../examples/mastra-agent/agent.mjs';
import { markers, text } from './helpers.mjs';

const WINDOW = 6_000;
const files = { 'src/a.rs': `fn a() {}\n${text(14_000, 1)}`, 'src/b.rs': `fn b() {}\n${text(14_000, 2)}` };
const readFile = createTool({
  id: 'read_file',
  description: 'Read a file',
  inputSchema: z.object({ path: z.string() }),
  execute: async ({ path }) => files[path] ?? `no file ${path}`,
});

const usage = { inputTokens: { total: 10, noCache: 10 }, outputTokens: { total: 5, text: 5 } };
const answer = (content, finish = 'tool-calls') => ({ content, finishReason: { unified: finish, raw: finish }, usage, warnings: [] });
const call = (id, toolName, input) => ({ type: 'tool-call', toolCallId: id, toolName, input: JSON.stringify(input) });

/** What every prompt the model gets must be. */
function checkPrompt(prompt, what) {
  const conversation = prompt.filter((m) => m.role !== 'system');
  assert.deepStrictEqual(validate(conversation, 'ai-sdk'), [], what);
  for (const [i, m] of prompt.entries()) {
    if (m.role === 'system') assert.equal(typeof m.content, 'string', `${what}: system ${i}`);
    else assert.ok(Array.isArray(m.content), `${what}: message ${i} (${m.role}) has ${typeof m.content} content; the provider layer takes part lists`);
  }
  const tokens = conversation.reduce((n, m) => n + countTokens(JSON.stringify(m.content)), 0);
  assert.ok(tokens < WINDOW, `${what}: about ${tokens} tokens for a ${WINDOW}-token window`);
}

test('a Mastra agent: every model call in the window, valid, reloadable; Mastra keeps every message', async () => {
  const prompts = [];
  let reloaded;
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      const seen = JSON.stringify(prompt);
      switch (prompts.length) {
        case 1:
          return answer([call('c_a', 'read_file', { path: 'src/a.rs' }), call('c_b', 'read_file', { path: 'src/b.rs' })]);
        case 2:
          reloaded = markers(seen)[0];
          assert.ok(reloaded, 'the second call sees an offload marker');
          return answer([call('c_r', 'context_reload', { working_context_offload_uuid: reloaded })]);
        default:
          assert.match(seen, /Original content of offload/);
          return answer([{ type: 'text', text: 'Both define one empty function.' }], 'stop');
      }
    },
  });
  const store = new MemoryStore();
  const { agent, context } = createAssistant({ model, tools: { read_file: readFile }, memory: { maxToken: WINDOW, toolResultLimit: 3_000, store } });
  const result = await agent.generate('What do src/a.rs and src/b.rs define?', { maxSteps: 6 });

  assert.equal(result.text, 'Both define one empty function.');
  assert.equal(prompts.length, 3);
  for (const [k, p] of prompts.entries()) checkPrompt(p, `model call ${k + 1}`);
  assert.equal(markers(JSON.stringify(prompts[0])).length, 0, 'nothing to compress before the first call');
  // The reload ran through Mastra and answered with the original.
  const reload = result.steps[1].toolResults.find((r) => r.payload?.toolName === 'context_reload' || r.toolName === 'context_reload');
  const output = reload?.payload?.result ?? reload?.output;
  assert.match(String(output), new RegExp(`Original content of offload ${reloaded}`));
  assert.ok(String(output).includes('fn a() {}') || String(output).includes('fn b() {}'));
  // Mastra's own history is whole: both files in full, in the last prompt's source.
  const memory = context.memory();
  assert.ok(memory.events().some((e) => e.type === 'TOOL_RESULT_TRUNCATE'));
  const originals = JSON.stringify((await memory.originalMessages()));
  for (const content of Object.values(files)) assert.ok(originals.includes(JSON.stringify(content).slice(1, 2_000)), 'the originals hold each file');
  assert.equal(store.size, memory.offloads().length);
});

test('a second call on the same history carries the memory on; the engine\'s notes reach the model as parts', async () => {
  const prompts = [];
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      const n = prompts.length;
      if (n % 2 === 0) return answer([{ type: 'text', text: `Read it (${n}).` }], 'stop');
      return answer([call(`c${n}`, 'read_file', { path: Object.keys(files)[((n - 1) / 2) % 2] })]);
    },
  });
  const passes = [];
  const context = autocontextProcessor(
    (threadId) =>
      new AutoContextMemory({
        format: 'ai-sdk',
        maxToken: WINDOW,
        toolResultLimit: 8_000,
        summarize: offlineSummarize,
        minCompressionTokenThreshold: 200,
        msgThreshold: 10,
        historyRollupKeepRecentRounds: 1,
        historyRollupKeepRecentTokens: 500,
        sessionId: `mastra-${threadId}`,
      }),
    { onCompress: (r, thread) => passes.push([thread, ...r.events.map((e) => e.type)]) },
  );
  const agent = new Agent({ id: 'a', name: 'a', instructions: 'Be brief.', model, tools: { read_file: readFile, ...context.tools }, inputProcessors: [context] });
  // The host passes the whole history each time; Mastra stamps it anew on every call.
  const history = [];
  const memory = context.memory();
  for (let turn = 1; turn <= 5; turn++) {
    history.push({ role: 'user', content: `Turn ${turn}: read the next file.` });
    const result = await agent.generate(history, { maxSteps: 4 });
    history.push(...result.response.messages);
    assert.equal(context.memory(), memory, `turn ${turn}: the same memory carries on`);
    // Every message once, up to the last model call (its answer comes in with the next call).
    assert.equal((await memory.originalMessages()).length, history.length - 1, `turn ${turn}: every message once`);
  }
  for (const [k, p] of prompts.entries()) checkPrompt(p, `model call ${k + 1}`);
  assert.ok(passes.length >= 2, JSON.stringify(passes));
  // The engine wrote notes of its own (summaries of earlier rounds), and the model got them.
  const notes = prompts.at(-1).filter((m) => m.role !== 'tool' && m.role !== 'system' && markers(JSON.stringify(m.content)).length > 0);
  assert.ok(notes.length > 0, `no note in the last prompt; passes: ${JSON.stringify(passes)}`);
  // Between passes the prompt only grows at its end: the provider's cache keeps its prefix.
  for (let k = 1; k < prompts.length; k++) {
    const [before, after] = [prompts[k - 1], prompts[k]].map((p) => JSON.stringify(p.slice(0, prompts[k - 1].length)));
    if (before !== after) continue; // a pass ran in between
    assert.equal(after, before);
  }
});

test('the processor wants a factory of ai-sdk memories and names the thread it serves', async () => {
  assert.throws(() => autocontextProcessor(), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => autocontextProcessor(() => new AutoContextMemory()), { code: 'INVALID_CONFIG', field: 'format' });
  const made = [];
  const context = autocontextProcessor((threadId) => {
    made.push(threadId);
    return new AutoContextMemory({ format: 'ai-sdk', sessionId: threadId });
  });
  assert.deepStrictEqual(Object.keys(context.tools), ['context_reload']);
  const requestContext = new Map([['MastraMemory', { thread: { id: 'thread-9' } }]]);
  const prompt = [{ role: 'system', content: 'S' }, { role: 'user', content: [{ type: 'text', text: 'hi' }] }];
  const out = await context.processLLMRequest({ prompt, requestContext });
  assert.deepStrictEqual(out.prompt, prompt);
  assert.deepStrictEqual(made, ['default', 'thread-9']);
  assert.equal((await context.memory('thread-9').originalMessages()).length, 1, 'the system prompt stays outside the memory');
  assert.match(await context.tools.context_reload.execute({ working_context_offload_uuid: '12345678-1234-4234-8234-123456789abc' }, { requestContext }), /No offloaded context/);
});
