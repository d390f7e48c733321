// The Anthropic, AI SDK, Responses and Gemini formats through the installed package: lossless
// round trips, validate(), typed errors, the reload tool in each shape with pages, bytes in AI
// SDK parts, alternating turns after a pass, and Gemini's id-less calls and thought signatures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, validate } from 'autocontext';
import { markers, text } from './helpers.mjs';

const ANTHROPIC = [
  { role: 'user', content: 'Read a.rs and b.rs.' },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'Both files, in parallel.', signature: 'EqQBCkYIARgCKkB' },
      { type: 'text', text: 'Reading.', citations: null },
      { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'a.rs' } },
      { type: 'tool_use', id: 'toolu_b', name: 'read_file', input: { path: 'b.rs' }, cache_control: { type: 'ephemeral' } },
    ],
  },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_a', content: text(9_000, 1) },
      { type: 'tool_result', tool_use_id: 'toolu_b', content: [{ type: 'text', text: text(9_000, 2) }], is_error: false },
      { type: 'text', text: 'Be quick.' },
    ],
  },
  { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'ENCRYPTED' }, { type: 'text', text: 'Both define parsers.' }], id: 'msg_x' },
  { role: 'user', content: 'Thanks. Now the tests?' },
];

const AI_SDK = [
  { role: 'system', content: 'Be terse.' },
  { role: 'user', content: [{ type: 'text', text: 'What is in the log?' }], providerOptions: { openai: { user: 'u1' } } },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'Read it.', providerOptions: { anthropic: { signature: 'sig' } } },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'readLog', input: { lines: 500 } },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'stat', input: {} },
    ],
  },
  {
    role: 'tool',
    content: [
      { type: 'tool-result', toolCallId: 'c1', toolName: 'readLog', output: { type: 'text', value: text(18_000, 3) } },
      { type: 'tool-result', toolCallId: 'c2', toolName: 'stat', output: { type: 'json', value: { size: 18000, mtime: 1.5 } } },
    ],
  },
  { role: 'assistant', content: 'Mostly parser warnings.' },
  { role: 'user', content: 'Which ones?' },
];

const RESPONSES = [
  { role: 'developer', content: 'Be terse.' },
  { role: 'user', content: 'Read a.rs and b.rs.' },
  { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Both, in parallel.' }], encrypted_content: 'ENC' },
  { type: 'function_call', id: 'fc_a', call_id: 'call_a', name: 'read_file', arguments: '{"path":"a.rs"}', status: 'completed' },
  { type: 'function_call', id: 'fc_b', call_id: 'call_b', name: 'read_file', arguments: '{"path":"b.rs"}', status: 'completed' },
  { type: 'function_call_output', call_id: 'call_b', output: text(9_000, 2) },
  { type: 'function_call_output', call_id: 'call_a', output: [{ type: 'input_text', text: text(9_000, 1) }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' }] },
  { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Both define parsers.', annotations: [] }] },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Thanks. Now the tests?' }] },
];

// Gemini 3's shape: a thought, parallel calls without ids (the first one signed), both answered
// in the user content after them, a signed answer, and a user content without a role.
const GEMINI = [
  { role: 'user', parts: [{ text: 'Read a.rs and b.rs.' }] },
  {
    role: 'model',
    parts: [
      { text: 'Both files, in parallel.', thought: true },
      { functionCall: { name: 'read_file', args: { path: 'a.rs' } }, thoughtSignature: 'Q2lRQmpaWEt6' },
      { functionCall: { name: 'read_file', args: { path: 'b.rs' } } },
    ],
  },
  {
    role: 'user',
    parts: [
      { functionResponse: { name: 'read_file', response: { output: text(9_000, 1) } } },
      { functionResponse: { name: 'read_file', response: { result: text(9_000, 2) } } },
    ],
  },
  { role: 'model', parts: [{ text: 'Both define parsers.', thoughtSignature: 'QW5zd2Vy' }] },
  { parts: [{ text: 'Thanks. Now the tests?' }] },
];

test('Anthropic, AI SDK, Responses and Gemini messages come back deep-equal and valid', () => {
  for (const [format, messages] of [['anthropic', ANTHROPIC], ['ai-sdk', AI_SDK], ['openai-responses', RESPONSES], ['gemini', GEMINI]]) {
    const memory = new AutoContextMemory({ format });
    memory.add(messages);
    assert.deepStrictEqual(memory.messages(), messages, format);
    assert.equal(JSON.stringify(memory.messages()), JSON.stringify(messages), `${format}: key order too`);
    assert.deepStrictEqual(memory.validate(), []);
    assert.deepStrictEqual(validate(messages, format), []);
    assert.equal(memory.toJSON().config.format, format);
    const restored = AutoContextMemory.fromJSON(memory.toJSON());
    assert.deepStrictEqual(restored.messages(), messages);
  }
});

test('validate() names each format\'s broken rules', () => {
  const bad = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
    { role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'tool_result', tool_use_id: 't', content: 'r' }] },
    { role: 'user', content: 'again' },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 's' }] },
    { role: 'system', content: 'no' },
  ];
  assert.deepStrictEqual(
    validate(bad, 'anthropic').map((p) => [p.index, p.code]),
    [[2, 'TOOL_RESULT_NOT_FIRST'], [3, 'ROLES_NOT_ALTERNATING'], [4, 'THINKING_ONLY'], [5, 'INVALID_MESSAGE']],
  );
  const badSdk = [
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'f', input: {} }] },
    { role: 'user', content: 'and?' },
    { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: 'x', approved: true }] },
  ];
  assert.deepStrictEqual(
    validate(badSdk, 'ai-sdk').map((p) => [p.index, p.code]),
    [[0, 'MISSING_RESULT'], [2, 'APPROVAL_WITHOUT_REQUEST']],
  );
  const badGemini = [
    { role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }] },
    { role: 'user', parts: [{ text: 'and?' }] },
    { role: 'user', parts: [{ functionResponse: { name: 'f', response: { output: 'late' } } }] },
    { role: 'model', parts: [{ text: 'hm' }] },
    { role: 'model', parts: [{ functionCall: { id: 'x', name: 'g', args: {} }, thoughtSignature: 'c2ln' }] },
    { role: 'user', parts: [{ functionResponse: { id: 'y', name: 'g', response: {} } }] },
    { role: 'system', parts: [{ text: 'no' }] },
  ];
  assert.deepStrictEqual(
    validate(badGemini, 'gemini').map((p) => [p.index, p.code]),
    [[0, 'CALL_NOT_AFTER_USER'], [0, 'MISSING_RESULT'], [2, 'ORPHAN_RESULT'], [4, 'CALL_NOT_AFTER_USER'], [4, 'MISSING_RESULT'], [5, 'ORPHAN_RESULT'], [6, 'INVALID_MESSAGE']],
  );
  assert.equal((() => { try { validate([], 'cohere'); } catch (e) { return e.code; } })(), 'INVALID_CONFIG');
});

test('bad messages are typed errors naming index and field', () => {
  const memory = new AutoContextMemory({ format: 'anthropic' });
  memory.add({ role: 'user', content: 'hi' });
  const cases = [
    [{ role: 'system', content: 'x' }, 'role'],
    [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f' }] }, 'content[0].input'],
    [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'r' }] }, 'content[0].tool_use_id'],
  ];
  for (const [message, field] of cases) {
    const e = (() => { try { memory.add(message); } catch (err) { return err; } })();
    assert.equal(e?.code, 'INVALID_MESSAGE', JSON.stringify(message));
    assert.equal(e.index, 1);
    assert.equal(e.field, field);
  }
  assert.equal(memory.messages().length, 1);
  const sdk = new AutoContextMemory({ format: 'ai-sdk' });
  const e = (() => { try { sdk.add({ role: 'tool', content: 'text' }); } catch (err) { return err; } })();
  assert.equal(e.code, 'INVALID_MESSAGE');
  assert.equal(e.field, 'content');
});

test('each format gets its reload tool, takes its call shape and pages long reloads', async () => {
  const shapes = {
    openai: (args) => ({ id: 'r', type: 'function', function: { name: 'context_reload', arguments: JSON.stringify(args) } }),
    'openai-responses': (args) => ({ type: 'function_call', id: 'fc_r', call_id: 'r', name: 'context_reload', arguments: JSON.stringify(args) }),
    anthropic: (args) => ({ type: 'tool_use', id: 'r', name: 'context_reload', input: args }),
    'ai-sdk': (args) => ({ type: 'tool-call', toolCallId: 'r', toolName: 'context_reload', input: args }),
    gemini: (args) => ({ functionCall: { name: 'context_reload', args } }),
  };
  const conversations = {
    openai: [
      { role: 'user', content: 'read' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'x', type: 'function', function: { name: 'cat', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'x', content: text(12_000, 9) },
    ],
    anthropic: ANTHROPIC.slice(0, 3),
    'ai-sdk': AI_SDK.slice(0, 4),
    'openai-responses': RESPONSES.slice(0, 7),
    gemini: GEMINI.slice(0, 3),
  };
  for (const format of ['openai', 'anthropic', 'ai-sdk', 'openai-responses', 'gemini']) {
    const memory = new AutoContextMemory({ format, maxToken: 2_000, toolResultLimit: 4_000, offloadReloadLimit: 3_000 });
    memory.add(conversations[format]);
    const tool = memory.reloadTool();
    if (format === 'openai') assert.equal(tool.function.parameters.properties.page.type, 'integer');
    if (format === 'anthropic') assert.deepStrictEqual(tool.input_schema.required, ['working_context_offload_uuid']);
    if (format === 'ai-sdk') assert.equal(tool.inputSchema.type, 'object');
    if (format === 'openai-responses') assert.deepStrictEqual([tool.type, tool.name, tool.strict], ['function', 'context_reload', false]);
    if (format === 'gemini') assert.deepStrictEqual([tool.name, tool.parametersJsonSchema.required], ['context_reload', ['working_context_offload_uuid']]);
    const result = await memory.compressIfNeeded();
    assert.equal(result.compressed, true, format);
    assert.deepStrictEqual(memory.validate(), [], format);
    const uuid = markers(JSON.stringify(memory.messages()))[0];
    assert.ok(uuid, `${format}: a marker in the working list`);
    const first = await memory.handleReloadCall(shapes[format]({ working_context_offload_uuid: uuid }));
    assert.ok(first.length <= 3_000, `${format}: ${first.length} characters`);
    const pages = Number(/page 1 of (\d+)/.exec(first)?.[1]);
    assert.ok(pages >= 3, `${format}: ${first.slice(0, 200)}`);
    assert.match(first, new RegExp(`working_context_offload_uuid "${uuid}" and page 2`));
    assert.ok(!first.trimStart().startsWith('{') && !first.includes('"role"'), 'readable text, not JSON');
    const last = await memory.handleReloadCall(shapes[format]({ working_context_offload_uuid: uuid, page: pages }));
    assert.match(last, /the end of offload/);
  }
});

test('bytes in AI SDK parts travel as base64 text', () => {
  const memory = new AutoContextMemory({ format: 'ai-sdk' });
  const bytes = new Uint8Array([137, 80, 78, 71, 0, 255]);
  memory.add({ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', image: bytes, mediaType: 'image/png' }] });
  memory.add({ role: 'assistant', content: [{ type: 'file', data: bytes.buffer, mediaType: 'application/pdf' }] });
  const [user, assistant] = memory.messages();
  assert.equal(user.content[1].image, Buffer.from(bytes).toString('base64'));
  assert.equal(assistant.content[0].data, Buffer.from(bytes).toString('base64'));
  assert.ok(memory.tokenCount() >= 1600 + 3000, 'an image and a file count their fixed estimates');
});

test('the engine\'s own messages keep Anthropic turns alternating', async () => {
  const messages = [];
  for (let r = 0; r < 6; r++) {
    messages.push({ role: 'user', content: `question ${r}` });
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `t${r}`, name: 'read', input: { r } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${r}`, content: text(6_000, r) }] });
    messages.push({ role: 'assistant', content: `answer ${r}` });
  }
  messages.push({ role: 'user', content: 'last question' });
  const memory = new AutoContextMemory({
    format: 'anthropic',
    maxToken: 4_000,
    lastKeep: 2,
    msgThreshold: 20,
    minCompressionTokenThreshold: 500,
    summarize: ({ kind }) => `summary (${kind})`,
  });
  memory.add(messages);
  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true);
  const out = memory.messages();
  assert.deepStrictEqual(validate(out, 'anthropic'), []);
  for (let i = 1; i < out.length; i++) assert.notEqual(out[i].role, out[i - 1].role, `messages ${i - 1} and ${i}`);
  assert.deepStrictEqual(out.at(-1), { role: 'user', content: 'last question' });
});

test('Responses items: the validator\'s own rules, errors naming the field, items of one response kept together', async () => {
  assert.deepStrictEqual(
    validate(
      [
        { role: 'user', content: 'go' },
        { type: 'function_call', call_id: 'a', name: 'f', arguments: '{}' },
        { role: 'user', content: 'hurry' },
        { type: 'reasoning', summary: [] },
        { role: 'user', content: [{ type: 'output_text', text: 'not the model' }] },
        { role: 'assistant', content: [{ type: 'input_text', text: 'wrong part' }] },
      ],
      'openai-responses',
    ).map((p) => [p.index, p.code]),
    [[1, 'MISSING_RESULT'], [3, 'REASONING_WITHOUT_FOLLOWER'], [4, 'PART_TYPE_FOR_ROLE'], [5, 'PART_TYPE_FOR_ROLE']],
  );
  const memory = new AutoContextMemory({ format: 'openai-responses', maxToken: 3_000, toolResultLimit: 1_000 });
  const e = (() => { try { memory.add({ type: 'function_call_output', output: 'x' }); } catch (err) { return err; } })();
  assert.deepStrictEqual([e.code, e.index, e.field], ['INVALID_MESSAGE', 0, 'call_id']);
  memory.add(RESPONSES);
  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true);
  assert.deepStrictEqual(memory.validate(), []);
  const out = memory.messages();
  // The reasoning item still opens its response, and both calls follow it.
  const at = out.findIndex((i) => i.type === 'reasoning');
  assert.deepStrictEqual(out[at], RESPONSES[2]);
  assert.deepStrictEqual([out[at + 1].call_id, out[at + 2].call_id], ['call_a', 'call_b']);
  // A rewritten output keeps its call id and its image, with the text shortened behind a marker.
  const a = out.find((i) => i.type === 'function_call_output' && i.call_id === 'call_a');
  assert.ok(markers(JSON.stringify(a)).length === 1 && a.output.at(-1).type === 'input_image');
});

test('Gemini: calls without ids pair by name, signed model turns come back as they were, errors name the part', async () => {
  const memory = new AutoContextMemory({ format: 'gemini', maxToken: 4_000, toolResultLimit: 3_000, summarize: ({ kind }) => `summary (${kind})` });
  memory.add(GEMINI.slice(0, 3));
  // A second content of responses answers nothing: the API wants them all in the one after the calls.
  const e = (() => { try { memory.add({ role: 'user', parts: [{ functionResponse: { name: 'read_file', response: {} } }] }); } catch (err) { return err; } })();
  assert.deepStrictEqual([e?.code, e?.index, e?.field], ['INVALID_MESSAGE', 3, 'parts[0].functionResponse']);
  const s = (() => { try { memory.add({ role: 'system', parts: [{ text: 'rules' }] }); } catch (err) { return err; } })();
  assert.match(s.message, /systemInstruction/);
  memory.add(GEMINI.slice(3));
  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true);
  const out = memory.messages();
  assert.deepStrictEqual(validate(out, 'gemini', { request: true }), []);
  // The call turn keeps its thought and its signed call byte-exact; the responses shrink behind markers.
  assert.deepStrictEqual(out.find((c) => c.parts?.some((p) => p.functionCall))?.parts.slice(0, 2), GEMINI[1].parts.slice(0, 2));
  const responses = out.find((c) => c.parts?.some((p) => p.functionResponse));
  assert.ok(responses === undefined || markers(JSON.stringify(responses)).length >= 1, JSON.stringify(responses)?.slice(0, 300));
  assert.deepStrictEqual(await memory.originalMessages(), GEMINI);
  // usageMetadata as the SDK gives it: promptTokenCount includes the cached tokens.
  const usage = memory.observeUsage({ promptTokenCount: memory.tokenCount(), cachedContentTokenCount: 100, candidatesTokenCount: 5, totalTokenCount: memory.tokenCount() + 5 });
  assert.deepStrictEqual([usage.promptTokens, usage.cachedTokens, usage.status], [memory.tokenCount(), 100, 'accepted']);
});
