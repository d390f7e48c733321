// autocontext/ai-sdk with the real `ai` package: a generateText multi-step loop driven by the
// AI SDK's mock language model, compression in the middle of it, the context_reload tool
// executed by the SDK, and every list handed to the model checked against the AI SDK's own
// ModelMessage schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText, modelMessageSchema, stepCountIs, tool, jsonSchema } from 'ai';
import { MockLanguageModelV4, convertArrayToReadableStream } from 'ai/test';
import { AutoContextMemory, validate } from 'autocontext';
import { prepareStep, reloadTool } from 'autocontext/ai-sdk';
import { markers, text } from './helpers.mjs';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A value as JSON keeps it: the AI SDK's messages carry `undefined` fields, which JSON drops. */
const json = (v) => JSON.parse(JSON.stringify(v));

function answer(content, finish = 'tool-calls') {
  return { content, finishReason: { unified: finish, raw: finish }, usage, warnings: [] };
}

/** Every ModelMessage list must pass the AI SDK's own schema and our validator. */
function assertModelMessages(list, what) {
  for (const [i, m] of list.entries()) {
    const parsed = modelMessageSchema.safeParse(m);
    assert.ok(parsed.success, `${what}: message ${i} fails the AI SDK schema: ${parsed.error}`);
  }
  assert.deepStrictEqual(validate(list, 'ai-sdk'), [], what);
}

const readFile = tool({
  description: 'Read a file',
  inputSchema: jsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
  execute: async ({ path }) => `// ${path}\n${text(14_000, path.length)}`,
});

test('generateText compresses between steps and the model reloads what was offloaded', async () => {
  const memory = new AutoContextMemory({ format: 'ai-sdk', maxToken: 6_000, toolResultLimit: 3_000, sessionId: 'ai-sdk-loop' });
  memory.add({ role: 'user', content: 'Compare src/a.rs and src/bb.rs.' });
  const prompts = [];
  let reloadedUuid;
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      const seen = JSON.stringify(prompt);
      switch (prompts.length) {
        case 1:
          return answer([
            { type: 'reasoning', text: 'Read both at once.' },
            { type: 'tool-call', toolCallId: 'call_a', toolName: 'read_file', input: JSON.stringify({ path: 'src/a.rs' }) },
            { type: 'tool-call', toolCallId: 'call_b', toolName: 'read_file', input: JSON.stringify({ path: 'src/bb.rs' }) },
          ]);
        case 2: {
          // The results were truncated before this step: the model asks for one back.
          reloadedUuid = markers(seen)[0];
          assert.ok(reloadedUuid, 'step 2 sees an offload marker');
          return answer([{ type: 'tool-call', toolCallId: 'call_r', toolName: 'context_reload', input: JSON.stringify({ working_context_offload_uuid: reloadedUuid }) }]);
        }
        default:
          assert.match(seen, /Original content of offload/);
          return answer([{ type: 'text', text: 'They differ in the parser.' }], 'stop');
      }
    },
  });
  const handed = [];
  const step = prepareStep(memory, { onCompress: (r) => assert.ok(r.tokensAfter < r.tokensBefore) });
  const result = await generateText({
    model,
    messages: memory.messages(),
    tools: { read_file: readFile, context_reload: reloadTool(memory) },
    prepareStep: async (input) => {
      const out = await step(input);
      handed.push(out.messages);
      return out;
    },
    onFinish: step.onFinish,
    stopWhen: stepCountIs(6),
  });

  assert.equal(result.text, 'They differ in the parser.');
  assert.equal(result.steps.length, 3);
  assert.equal(handed.length, 3, 'prepareStep ran before every step');
  for (const [k, list] of handed.entries()) assertModelMessages(list, `step ${k}`);
  // The truncation happened in the middle of the loop, not before it.
  assert.equal(markers(JSON.stringify(handed[0])).length, 0);
  assert.ok(markers(JSON.stringify(handed[1])).length >= 1);
  // The SDK ran the reload tool: its result is the original, readable.
  const reload = result.steps[1].toolResults.find((r) => r.toolName === 'context_reload');
  assert.match(reload.output, new RegExp(`Original content of offload ${reloadedUuid}`));
  assert.ok(reload.output.includes('// src/'), 'the original head is in the reload');

  // After onFinish the memory holds the whole conversation, every step once.
  const originals = (await memory.originalMessages());
  assert.deepStrictEqual(originals, json([{ role: 'user', content: 'Compare src/a.rs and src/bb.rs.' }, ...result.responseMessages]));
  assert.ok(result.responseMessages.length > result.response.messages.length, 'AI SDK 7 keeps only the last step in response.messages');
  assertModelMessages(memory.messages(), 'after the call');
  assert.ok(memory.events().some((e) => e.type === 'TOOL_RESULT_TRUNCATE'));
});

test('a second call continues the same memory; streamText works the same way', async () => {
  const memory = new AutoContextMemory({ format: 'ai-sdk', maxToken: 6_000, toolResultLimit: 3_000 });
  // The host keeps its full history and passes it; prepareStep recognizes it.
  const history = [{ role: 'user', content: 'Read src/a.rs.' }];
  let calls = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async () => {
      calls += 1;
      return calls % 2 === 1
        ? answer([{ type: 'tool-call', toolCallId: `c${calls}`, toolName: 'read_file', input: JSON.stringify({ path: 'src/a.rs' }) }])
        : answer([{ type: 'text', text: `done ${calls}` }], 'stop');
    },
    doStream: async () => {
      calls += 1;
      return {
        stream: convertArrayToReadableStream([
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'streamed' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
        ]),
      };
    },
  });
  const step = prepareStep(memory);
  const first = await generateText({ model, messages: history, tools: { read_file: readFile }, prepareStep: step, stopWhen: stepCountIs(4) });
  // The last step's messages alone are enough: the earlier steps' are in the memory already.
  assert.equal(first.steps.length, 2);
  step.commit(first.response.messages);
  history.push(...first.responseMessages, { role: 'user', content: 'Again, briefly.' });
  assert.deepStrictEqual((await memory.originalMessages()), json(history.slice(0, -1)));

  const streamed = streamText({ model, messages: history, prepareStep: step, onFinish: step.onFinish });
  assert.equal(await streamed.text, 'streamed');
  await streamed.response;
  await new Promise((r) => setTimeout(r, 10));
  const originals = (await memory.originalMessages());
  assert.deepStrictEqual(originals.at(-2), { role: 'user', content: 'Again, briefly.' });
  assert.deepStrictEqual(originals.at(-1), { role: 'assistant', content: [{ type: 'text', text: 'streamed' }] });
  assertModelMessages(memory.messages(), 'after streamText');

  // Messages that match neither the working list nor the history are refused, typed.
  const stranger = prepareStep(memory);
  await assert.rejects(stranger({ messages: [{ role: 'user', content: 'who are you?' }], stepNumber: 0 }), { code: 'INVALID_ARGUMENT' });
});

test("onFinish reads AI SDK 7's responseMessages and AI SDK 6's response.messages alike", async () => {
  const run = async (finish) => {
    const memory = new AutoContextMemory({ format: 'ai-sdk', maxToken: 6_000, toolResultLimit: 3_000, sessionId: 'finish' });
    let calls = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () =>
        ++calls === 1
          ? answer([{ type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: JSON.stringify({ path: 'src/a.rs' }) }])
          : answer([{ type: 'text', text: 'read' }], 'stop'),
    });
    const step = prepareStep(memory);
    const history = [{ role: 'user', content: 'Read src/a.rs.' }];
    const result = await generateText({ model, messages: history, tools: { read_file: readFile }, prepareStep: step, stopWhen: stepCountIs(4) });
    finish(step, result);
    assert.deepStrictEqual((await memory.originalMessages()), json([...history, ...result.responseMessages]));
    return (await memory.originalMessages());
  };
  const seven = await run((step, r) => step.onFinish(r));
  // AI SDK 6's finish event named every step's messages response.messages.
  const six = await run((step, r) => step.onFinish({ response: { messages: r.responseMessages } }));
  assert.deepStrictEqual(six, seven);
  assert.equal(seven.length, 4, 'user, call, result, answer: each once');
  const memory = new AutoContextMemory({ format: 'ai-sdk' });
  assert.throws(() => prepareStep(memory).onFinish({ text: 'no messages' }), { code: 'INVALID_ARGUMENT' });
});

test('the helpers want a memory of the ai-sdk format, and the tool checks its arguments', async () => {
  const openai = new AutoContextMemory();
  assert.throws(() => prepareStep(openai), { code: 'INVALID_CONFIG' });
  assert.throws(() => reloadTool(openai), { code: 'INVALID_CONFIG' });
  const memory = new AutoContextMemory({ format: 'ai-sdk' });
  const t = reloadTool(memory);
  assert.deepStrictEqual(t.inputSchema.jsonSchema.required, ['working_context_offload_uuid']);
  assert.equal(t.inputSchema.validate({ working_context_offload_uuid: 'u', page: 2 }).success, true);
  assert.equal(t.inputSchema.validate({ page: 2 }).success, false);
  assert.equal(t.inputSchema.validate({ working_context_offload_uuid: 'u', page: 0 }).success, false);
  assert.match(await t.execute({ working_context_offload_uuid: '12345678-1234-4234-8234-123456789abc' }), /No offloaded context/);
});
