// The stateless helpers: compress(), validate(), countTokens(), and reload() and
// handleReloadCall() for what compress() offloaded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, compress, validate, countTokens, AutoContextError, reload, handleReloadCall } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { bigToolResult, call, markers, rejected, round, thrown } from './helpers.mjs';

test('compress() compresses a list in one call and returns the store holding the originals', async () => {
  const input = bigToolResult();
  const copy = structuredClone(input);
  const out = await compress(input, { maxToken: 4000, toolResultLimit: 2000, sessionId: 'once' });
  assert.deepStrictEqual(input, copy, 'the input is not mutated');
  assert.equal(out.compressed, true);
  assert.equal(out.messages.length, 3);
  assert.ok(out.tokensAfter < out.tokensBefore);
  assert.equal(out.sessionId, 'once');
  assert.ok(out.store instanceof MemoryStore);
  const [uuid] = markers(out.messages[2].content);
  assert.equal(out.events[0].offloadUuid, uuid);
  const stored = JSON.parse(await out.store.get(`once/${uuid}`));
  assert.deepStrictEqual(stored.messages, [input[2]]);

  const small = [{ role: 'user', content: 'hi' }];
  const untouched = await compress(small);
  assert.equal(untouched.compressed, false);
  assert.deepStrictEqual(untouched.messages, small);
  assert.equal(untouched.store.size, 0);
});

test('compress() writes the offloads its list names to the store, and no log', async () => {
  // Long enough that a memory's pass flushes its log to the store.
  const input = Array.from({ length: 30 }, (_, n) => round(n, { resultChars: 1500 })).flat();
  const options = { maxToken: 16_000, toolResultLimit: 1000 };
  const memory = new AutoContextMemory({ ...options, sessionId: 'kept' });
  memory.add(input);
  await memory.compressIfNeeded();
  assert.ok(memory.store.keys('kept/log-').length > 0, 'a memory keeps its log in its store');

  const store = new MemoryStore();
  const out = await compress(input, { ...options, sessionId: 'once', store });
  assert.ok(out.offloads.length > 0);
  assert.deepStrictEqual(store.keys().sort(), out.offloads.map((o) => `once/${o.uuid}`).sort());
  for (const o of out.offloads) assert.ok((await reload(store, 'once', o.uuid)).length > 0);
});

test('compress() reports invalid input as AutoContextError', async () => {
  await assert.rejects(compress([{ role: 'tool', tool_call_id: 'x', content: 'orphan' }]), (e) => e instanceof AutoContextError && e.code === 'INVALID_MESSAGE' && e.index === 0);
  await assert.rejects(compress([], { maxToken: 0 }), (e) => e.code === 'INVALID_CONFIG' && e.field === 'maxToken');
});

test('validate() lists the problems of a broken list and nothing for a valid one', () => {
  const valid = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
    { role: 'tool', tool_call_id: 'b', content: '1' },
    { role: 'tool', tool_call_id: 'a', content: '2' },
    { role: 'assistant', content: 'done' },
  ];
  assert.deepStrictEqual(validate(valid), []);
  assert.deepStrictEqual(validate(valid, 'openai'), []);

  const broken = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: [call('a')] },
    { role: 'user', content: 'moved on' },
    { role: 'tool', tool_call_id: 'a', content: 'late' },
    'not a message',
    { role: 'assistant', content: null, tool_calls: [call('a')] },
  ];
  const problems = validate(broken);
  assert.deepStrictEqual(problems.map((p) => [p.index, p.code]), [
    [1, 'MISSING_RESULT'],
    [3, 'ORPHAN_RESULT'],
    [4, 'INVALID_MESSAGE'],
    [5, 'DUPLICATE_CALL'],
  ]);
  for (const p of problems) assert.match(p.message, new RegExp(`message ${p.index}`));
  assert.equal(thrown(() => validate(valid, 'xml')).code, 'INVALID_CONFIG');
});

test('countTokens() counts with each built-in tokenizer and with a function (cl100k_base: builds.test.mjs)', () => {
  assert.equal(countTokens('hello world'), 2);
  assert.equal(countTokens('hello world', 'o200k_base'), 2);
  assert.equal(countTokens(''), 0);
  const prose = 'The engine keeps an agent conversation inside its context window. '.repeat(20);
  const exact = countTokens(prose);
  const estimate = countTokens(prose, 'estimate');
  assert.ok(Math.abs(estimate - exact) / exact < 0.35, `exact ${exact}, estimate ${estimate}`);
  assert.equal(countTokens('abcd', (s) => s.length), 4);
  assert.equal(thrown(() => countTokens('x', 'gpt2')).code, 'INVALID_CONFIG');
  assert.equal(thrown(() => countTokens(5)).code, 'INVALID_ARGUMENT');
  assert.equal(thrown(() => countTokens('x', () => -1)).code, 'TOKENIZER_FAILED');
});

test("reload() and handleReloadCall() read what compress() offloaded, with no memory left", async () => {
  const store = new MemoryStore();
  const options = { maxToken: 4000, toolResultLimit: 2000, sessionId: 'handler-7', store };
  const input = bigToolResult();
  const out = await compress(input, options);
  const [uuid] = markers(out.messages[2].content);
  assert.deepStrictEqual(out.offloads, [{ uuid, messageCount: 1, digest: out.offloads[0].digest }]);

  // A later request: a new memory on the same store knows nothing of it...
  const fresh = new AutoContextMemory({ ...options });
  await assert.rejects(fresh.reload(uuid), { code: 'NOT_FOUND' });
  // ...the store alone is enough.
  assert.deepStrictEqual(await reload(store, 'handler-7', uuid), [input[2]]);
  assert.deepStrictEqual(await reload(store, 'handler-7', uuid, { format: 'openai', offloads: out.offloads }), [input[2]]);
  const call = { id: 'r1', type: 'function', function: { name: 'context_reload', arguments: JSON.stringify({ working_context_offload_uuid: uuid }) } };
  const text = await handleReloadCall(store, 'handler-7', call, options);
  assert.match(text, new RegExp(`^Original content of offload ${uuid}`));
  assert.ok(text.includes(input[2].content.slice(0, 200)), 'the original is in the answer');
  // It reads as the memory that wrote it would answer.
  const memory = new AutoContextMemory({ ...options, sessionId: 'handler-8' });
  memory.add(input);
  await memory.compressIfNeeded();
  const [own] = memory.offloads();
  const ownCall = { ...call, function: { ...call.function, arguments: JSON.stringify({ working_context_offload_uuid: own.uuid, page: 1 }) } };
  assert.equal(await handleReloadCall(store, 'handler-8', ownCall, { ...options, offloads: memory.offloads() }), await memory.handleReloadCall(ownCall));

  // What is not this session's offload is not returned.
  await assert.rejects(reload(store, 'handler-8', uuid), { code: 'NOT_FOUND' });
  await assert.rejects(reload(store, 'handler-7', uuid, { format: 'anthropic' }), { code: 'STORE_FAILED' });
  await assert.rejects(reload(store, 'handler-7', '../../etc/passwd'), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(reload(store, 'handler-7', uuid, { offloads: memory.offloads() }), { code: 'NOT_FOUND' });
  assert.match(await handleReloadCall(store, 'handler-8', call, options), /^No offloaded context/);
  // A payload edited in the store fails its digest.
  const key = `handler-7/${uuid}`;
  await store.put(key, (await store.get(key)).replace('"role":"tool"', '"role":"tool","x":1'));
  await assert.rejects(reload(store, 'handler-7', uuid, { offloads: out.offloads }), { code: 'STORE_FAILED' });
  await assert.rejects(handleReloadCall(store, 'handler-7', call, { offloads: out.offloads }), { code: 'STORE_FAILED' });
  // Bad arguments are typed.
  await assert.rejects(reload(store, 7, uuid), { code: 'INVALID_ARGUMENT', field: 'sessionId' });
  await assert.rejects(reload({}, 'handler-7', uuid), { code: 'INVALID_CONFIG', field: 'store' });
  await assert.rejects(handleReloadCall(store, 'handler-7', call, { format: 'telex' }), { code: 'INVALID_CONFIG', field: 'format' });
  await assert.rejects(reload(store, 'handler-7', uuid, { offloads: 'all' }), { code: 'INVALID_ARGUMENT', field: 'offloads' });
  // A failing store passes its error through as the cause.
  const boom = new Error('disk gone');
  const failing = { get: async () => { throw boom; }, put: async () => {}, delete: async () => {} };
  const e = await rejected(reload(failing, 'handler-7', uuid));
  assert.equal(e.code, 'STORE_FAILED');
  assert.equal(e.cause, boom);
});
