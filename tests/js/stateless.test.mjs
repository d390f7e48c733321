// The stateless helpers: compress(), validate() and countTokens().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compress, validate, countTokens, AutoContextError } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { bigToolResult, call, markers, thrown } from './helpers.mjs';

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
