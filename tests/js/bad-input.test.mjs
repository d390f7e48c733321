// Bad input through the packed package (the release WebAssembly build, where a panic would abort
// the instance): each is an AutoContextError with a code and, where one message or option is at
// fault, its index or field; the memory is left unchanged and keeps working.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextError, AutoContextMemory, validate } from 'autocontext';
import { call, rejected, text, thrown } from './helpers.mjs';

function snapshot(memory) {
  return { messages: memory.messages(), log: memory.toJSON().log, tokens: memory.tokenCount(), events: memory.events() };
}

/** Asserts `fn` throws an AutoContextError with `code` (and `index`/`field` when given) and leaves `memory` as it was. */
function refused(memory, fn, code, where = {}) {
  const before = snapshot(memory);
  const e = thrown(fn);
  assert.ok(e instanceof AutoContextError, String(e));
  assert.equal(e.code, code, e.message);
  if ('index' in where) assert.equal(e.index, where.index, e.message);
  if ('field' in where) assert.equal(e.field, where.field, e.message);
  assert.deepStrictEqual(snapshot(memory), before);
  return e;
}

function deep(n) {
  let v = 'leaf';
  for (let i = 0; i < n; i++) v = { v };
  return v;
}

test('lone UTF-16 surrogates are refused with the message index and field; paired ones round-trip', () => {
  const memory = new AutoContextMemory();
  memory.add({ role: 'user', content: 'hi 🦀 \uD83E\uDD80' });
  assert.equal(memory.messages()[0].content, 'hi 🦀 \uD83E\uDD80');
  refused(memory, () => memory.add({ role: 'user', content: 'cut \uD83E' }), 'INVALID_MESSAGE', { index: 1, field: 'content' });
  refused(memory, () => memory.add([{ role: 'assistant', content: 'fine' }, { role: 'user', content: [{ type: 'text', text: '\uDD80 tail' }] }]),
    'INVALID_MESSAGE', { index: 2, field: 'content[0].text' });
  refused(memory, () => memory.add({ role: 'user', content: 'x', ['k\uD800']: 1 }), 'INVALID_MESSAGE', { index: 1 });
  memory.add({ role: 'assistant', content: 'still fine' });
  assert.equal(memory.messages().length, 2);
  const e = thrown(() => validate([{ role: 'user', content: '\uD800' }]));
  assert.ok(e instanceof AutoContextError && e.code === 'INVALID_MESSAGE', String(e));
});

test('JSON nested 10,000 deep is a typed error everywhere it can enter', async () => {
  const memory = new AutoContextMemory();
  memory.add({ role: 'user', content: 'hi' });
  const e = refused(memory, () => memory.add({ role: 'user', content: 'x', extra: deep(10_000) }), 'INVALID_MESSAGE');
  assert.ok(e.cause instanceof RangeError || /recursion|depth|nest/i.test(e.message), e.message);
  // As JSON text it reaches the engine, whose parser stops at its depth limit.
  const text = '['.repeat(10_000) + ']'.repeat(10_000);
  const state = `{"autocontext":1,"config":{},"working":${text},"original":[]}`;
  assert.equal(thrown(() => AutoContextMemory.fromJSON(state)).code, 'INVALID_STATE');
  assert.equal((await rejected(memory.handleReloadCall(deep(10_000)))).code, 'INVALID_ARGUMENT');
  assert.equal(thrown(() => new AutoContextMemory({ customPrompt: deep(10_000) })).code, 'INVALID_CONFIG');
  assert.ok(thrown(() => validate([deep(10_000)])) instanceof AutoContextError);
  // Past 100 levels the engine refuses a message JSON could carry, naming it; within the limit
  // a message is kept whole, and its state restores.
  refused(memory, () => memory.add([{ role: 'assistant', content: 'a' }, { role: 'user', content: 'x', extra: deep(120) }]), 'INVALID_MESSAGE', { index: 2 });
  memory.add({ role: 'assistant', content: 'ok', extra: deep(90) });
  assert.deepStrictEqual(memory.messages().at(-1).extra, deep(90));
  assert.deepStrictEqual(AutoContextMemory.fromJSON(memory.toJSON()).messages(), memory.messages());
});

test('a 50 MB message is added, counted, truncated and reloaded byte-exact', async () => {
  const big = 'log line 0123456789 abcdefghij\n'.repeat(Math.ceil((50 * 1024 * 1024) / 31)).slice(0, 50 * 1024 * 1024);
  const memory = new AutoContextMemory({ maxToken: 100_000, tokenizer: 'estimate' });
  memory.add([{ role: 'user', content: 'read the log' }, { role: 'assistant', content: null, tool_calls: [call('big')] }, { role: 'tool', tool_call_id: 'big', content: big }]);
  assert.ok(memory.tokenCount() > 1_000_000);
  const r = await memory.compressIfNeeded();
  assert.ok(r.compressed && r.underTarget, JSON.stringify({ ...r, events: r.events.length }));
  assert.ok(JSON.stringify(memory.messages()).length < 200_000);
  const [reloaded] = await memory.reload(r.events[0].offloadUuid);
  assert.equal(reloaded.content.length, big.length);
  assert.ok(reloaded.content === big, 'byte-exact');
});

test('malformed messages: unknown roles, orphan results, duplicate ids, calls left unanswered', () => {
  const memory = new AutoContextMemory();
  memory.add([{ role: 'user', content: 'go' }, { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] }, { role: 'tool', tool_call_id: 'a', content: 'A' }]);
  refused(memory, () => memory.add({ role: 'robot', content: 'x' }), 'INVALID_MESSAGE', { index: 3, field: 'role' });
  refused(memory, () => memory.add({ role: 'tool', tool_call_id: 'zzz', content: 'x' }), 'INVALID_MESSAGE', { index: 3, field: 'tool_call_id' });
  refused(memory, () => memory.add({ role: 'tool', tool_call_id: 'a', content: 'again' }), 'INVALID_MESSAGE', { index: 3, field: 'tool_call_id' });
  refused(memory, () => memory.add({ role: 'user', content: 'moving on while b waits' }), 'INVALID_MESSAGE', { index: 3 });
  memory.add([{ role: 'tool', tool_call_id: 'b', content: 'B' }, { role: 'assistant', content: 'done' }]);
  refused(memory, () => memory.add({ role: 'assistant', content: null, tool_calls: [call('a')] }), 'INVALID_MESSAGE', { index: 5, field: 'tool_calls' });
  refused(memory, () => memory.add({ role: 'assistant', content: null, tool_calls: [call('n'), call('n')] }), 'INVALID_MESSAGE', { index: 5 });
  for (const junk of [[], [[]], 'text', 0, true, [null], [{ role: 'user', content: 'ok' }, 'no']]) {
    if (Array.isArray(junk) && junk.length === 0) {
      memory.add(junk);
      continue;
    }
    refused(memory, () => memory.add(junk), 'INVALID_MESSAGE');
  }
  assert.deepEqual(memory.validate(), []);
});

test('NaN, negative, fractional and huge options are INVALID_CONFIG naming the option', () => {
  const numeric = ['msgThreshold', 'maxToken', 'lastKeep', 'largePayloadThreshold', 'toolResultLimit', 'reservedTokens', 'offloadReloadLimit',
    'maxConcurrentSummaries', 'summarizeTimeoutMs', 'storeTimeoutMs', 'historyRollupKeepRecentRounds', 'minCompressionTokenThreshold'];
  for (const field of numeric) {
    for (const bad of [NaN, -1, 1.5, Infinity, 1e300, '5', null, {}]) {
      const e = thrown(() => new AutoContextMemory({ [field]: bad }));
      assert.ok(e instanceof AutoContextError, `${field}=${bad}: ${e}`);
      assert.equal(e.code, 'INVALID_CONFIG', `${field}=${bad}`);
      assert.equal(e.field, field, `${field}=${bad}: ${e.message}`);
    }
  }
  for (const field of ['tokenRatio', 'currentRoundCompressionRatio']) {
    for (const bad of [NaN, -0.5, 0, 1.01, Infinity]) {
      assert.equal(thrown(() => new AutoContextMemory({ [field]: bad })).field, field, `${field}=${bad}`);
    }
  }
});

test('states from a future version or tampered are INVALID_STATE; a tampered digest fails the reload only', async () => {
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, sessionId: 'tamper' });
  memory.add([{ role: 'user', content: 'read' }, { role: 'assistant', content: null, tool_calls: [call('l')] }, { role: 'tool', tool_call_id: 'l', content: text(20_000, 4) }]);
  await memory.compressIfNeeded();
  const state = memory.toJSON();
  const [offload] = state.offloads;
  assert.match(offload.digest, /^[0-9a-f]{16}$/);
  const other = '0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a';
  const cases = [
    { ...state, autocontext: 3 },
    { ...state, autocontext: '1' },
    { ...state, offloads: [{ ...offload, uuid: other }] },
    { ...state, offloads: [offload, offload] },
    { ...state, offloads: [{ ...offload, digest: 'not-hex' }] },
    { ...state, working: state.working.map((w) => (w.synthetic ? { ...w, synthetic: { ...w.synthetic, offload: other } } : w)) },
    { ...state, working: [...state.working, { message: { role: 'tool', tool_call_id: 'nope', content: 'x' } }] },
    { ...state, config: { ...state.config, maxToken: NaN } },
    { ...state, config: { ...state.config, sessionId: '../x' } },
  ];
  for (const bad of cases) {
    const e = thrown(() => AutoContextMemory.fromJSON(bad, { store: memory.store }));
    assert.ok(e instanceof AutoContextError, String(e));
    assert.equal(e.code, 'INVALID_STATE', e.message);
  }
  const flipped = { ...state, offloads: [{ ...offload, digest: offload.digest.replace(/^./, (c) => (c === '0' ? '1' : '0')) }] };
  const restored = AutoContextMemory.fromJSON(flipped, { store: memory.store });
  assert.equal((await rejected(restored.reload(offload.uuid))).code, 'STORE_FAILED');
  assert.equal((await AutoContextMemory.fromJSON(state, { store: memory.store }).reload(offload.uuid)).length, 1);
});
