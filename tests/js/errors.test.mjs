// Bad input and failing hosts: every failure is an AutoContextError with a stable code, the
// host's own error passes through as `cause`, and the memory is left exactly as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, AutoContextError, isAutoContextError } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { bigToolResult, call, rejected, thrown } from './helpers.mjs';

function snapshot(memory) {
  return { messages: memory.messages(), log: memory.toJSON().log, tokens: memory.tokenCount(), events: memory.events() };
}

test('invalid messages are rejected with code, index and field, and nothing is added', () => {
  const memory = new AutoContextMemory();
  memory.add([{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [call('c1')] }, { role: 'tool', tool_call_id: 'c1', content: 'ok' }]);
  const before = snapshot(memory);
  const cases = [
    [42, 'INVALID_MESSAGE', 3, undefined],
    [null, 'INVALID_MESSAGE', 3, undefined],
    [{ role: 'robot', content: 'beep' }, 'INVALID_MESSAGE', 3, 'role'],
    [{ content: 'no role' }, 'INVALID_MESSAGE', 3, 'role'],
    [{ role: 'tool', tool_call_id: 'nope', content: 'orphan' }, 'INVALID_MESSAGE', 3, 'tool_call_id'],
    [{ role: 'tool', content: 'no id' }, 'INVALID_MESSAGE', 3, 'tool_call_id'],
    [{ role: 'user', content: 'fine' }, null],
    [[{ role: 'user', content: 'fine' }, { role: 'user', content: 5 }], 'INVALID_MESSAGE', 5, 'content'],
    [{ role: 'assistant', tool_calls: [call('c1')] }, 'INVALID_MESSAGE', 4, 'tool_calls'],
  ];
  for (const [input, code, index, field] of cases) {
    if (code === null) {
      memory.add(input);
      before.messages.push(input);
      before.log = memory.toJSON().log;
      before.tokens = memory.tokenCount();
      continue;
    }
    const e = thrown(() => memory.add(input));
    assert.ok(e instanceof AutoContextError, `${JSON.stringify(input)}: ${e}`);
    assert.ok(e instanceof Error);
    assert.ok(isAutoContextError(e, 'INVALID_MESSAGE'));
    assert.equal(e.name, 'AutoContextError');
    assert.equal(e.code, code, e.message);
    assert.equal(e.index, index, e.message);
    assert.equal(e.field, field, e.message);
    assert.match(e.message, new RegExp(`message ${index}`));
    assert.deepStrictEqual(snapshot(memory), before, `memory changed after ${JSON.stringify(input)}`);
  }
});

test('messages JSON cannot hold (BigInt, cycles, undefined) are INVALID_MESSAGE, not a raw TypeError', () => {
  const memory = new AutoContextMemory();
  const cyclic = { role: 'user', content: 'x' };
  cyclic.self = cyclic;
  for (const input of [{ role: 'user', content: 'x', n: 10n }, cyclic, undefined, () => {}]) {
    const e = thrown(() => memory.add(input));
    assert.ok(e instanceof AutoContextError, String(e));
    assert.equal(e.code, 'INVALID_MESSAGE');
  }
  assert.deepStrictEqual(memory.messages(), []);
});

test('invalid options fail construction with INVALID_CONFIG naming the option', () => {
  const cases = [
    [{ maxToken: -1 }, 'maxToken', /maxToken/],
    [{ maxToken: NaN }, 'maxToken', /NaN/],
    [{ maxToken: Infinity }, 'maxToken', /Infinity/],
    [{ maxToken: 1.5 }, 'maxToken', /maxToken/],
    [{ maxToken: 10n }, 'maxToken', /maxToken/],
    [{ tokenRatio: 2 }, 'tokenRatio', /tokenRatio/],
    [{ tokenRatio: -Infinity }, 'tokenRatio', /Infinity/],
    [{ maxtoken: 5 }, 'maxtoken', /did you mean `maxToken`/],
    [{ compressEvery: 3 }, 'compressEvery', /not an option/],
    [{ format: 'xml' }, 'format', /openai/],
    [{ tokenizer: 'gpt2' }, 'tokenizer', /tokenizer/],
    [{ tokenizer: 'custom' }, 'tokenizer', /function/],
    [{ sessionId: 'a/b' }, 'sessionId', /sessionId/],
    // Names the file system store cannot hold as a directory: every shipped store must take it.
    [{ sessionId: '..' }, 'sessionId', /sessionId/],
    [{ sessionId: '.' }, 'sessionId', /sessionId/],
    [{ sessionId: 'chat.' }, 'sessionId', /sessionId/],
    [{ sessionId: 'x'.repeat(129) }, 'sessionId', /sessionId/],
    [{ store: {} }, 'store', /get, put and delete/],
    [{ store: { get() {}, put() {} } }, 'store', /delete/],
    [{ summarize: 'please' }, 'summarize', /function/],
    [{ onEvent: 'log it' }, 'onEvent', /function/],
    [{ logLevel: 'verbose' }, 'logLevel', /'debug'/],
    [{ debug: true }, 'debug', /not an option/],
  ];
  for (const [options, field, message] of cases) {
    const e = thrown(() => new AutoContextMemory(options));
    assert.ok(e instanceof AutoContextError, `${field}: ${e}`);
    assert.equal(e.code, 'INVALID_CONFIG', e.message);
    assert.equal(e.field, field, e.message);
    assert.match(e.message, message);
  }
  for (const options of [null, 5, 'x', []]) {
    assert.equal(thrown(() => new AutoContextMemory(options)).code, 'INVALID_CONFIG');
  }
});

test('a store whose put rejects fails the pass with STORE_FAILED; cause passes through; nothing changes', async () => {
  const diskFull = new Error('disk full');
  diskFull.errno = -28;
  let deletes = 0;
  const store = { get: async () => null, put: async () => { throw diskFull; }, delete: async () => { deletes += 1; } };
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, store });
  memory.add(bigToolResult());
  const before = snapshot(memory);
  const e = await rejected(memory.compressIfNeeded());
  assert.ok(e instanceof AutoContextError);
  assert.equal(e.code, 'STORE_FAILED');
  assert.equal(e.cause, diskFull, 'the very same object');
  assert.match(e.message, /disk full/);
  assert.deepStrictEqual(snapshot(memory), before);
  assert.deepStrictEqual(memory.events(), []);
  assert.deepStrictEqual(memory.offloads(), []);
  assert.equal(deletes, 1, 'the key the failed put tried is deleted again (a put that failed may have landed)');
  // The memory is usable afterwards (the pass lock was released).
  assert.equal((await rejected(memory.compressIfNeeded())).code, 'STORE_FAILED');
});

test('a store that throws synchronously, or rejects with a non-Error, still yields STORE_FAILED with that cause', async () => {
  for (const put of [() => { throw 'quota'; }, () => Promise.reject({ status: 507 })]) {
    const store = { get: () => null, put, delete: () => {} };
    const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, store });
    memory.add(bigToolResult());
    const e = await rejected(memory.compressIfNeeded());
    assert.equal(e.code, 'STORE_FAILED');
    let expected;
    try { await put(); } catch (x) { expected = x; }
    assert.deepStrictEqual(e.cause, expected);
  }
});

test('store get failures and bad values on reload are STORE_FAILED; bad uuids are typed', async () => {
  const store = new MemoryStore();
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, store, sessionId: 'g1' });
  memory.add(bigToolResult());
  const { events: [{ offloadUuid: uuid }] } = await memory.compressIfNeeded();

  const offline = new Error('offline');
  store.get = async () => { throw offline; };
  let e = await rejected(memory.reload(uuid));
  assert.equal(e.code, 'STORE_FAILED');
  assert.equal(e.cause, offline);

  store.get = async () => 42;
  e = await rejected(memory.reload(uuid));
  assert.equal(e.code, 'STORE_FAILED');
  assert.match(e.message, /string/);

  store.get = async () => null;
  e = await rejected(memory.reload(uuid));
  assert.equal(e.code, 'NOT_FOUND');

  e = await rejected(memory.reload('not-a-uuid'));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.equal(e.field, 'uuid');
  e = await rejected(memory.reload(7));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  e = await rejected(memory.reload('12345678-1234-4234-8234-123456789abc'));
  assert.equal(e.code, 'NOT_FOUND');
});

test('fromJSON rejects states that are not ones toJSON made', () => {
  const good = new AutoContextMemory({ sessionId: 'st' });
  good.add({ role: 'user', content: 'hi' });
  const state = good.toJSON();
  const cases = [
    'not json',
    {},
    { ...state, autocontext: 99 },
    { ...state, log: { ...state.log, tail: 'nope' } },
    { ...state, working: [{ message: { role: 'robot' } }] },
    { ...state, config: { ...state.config, maxToken: -1 } },
  ];
  for (const bad of cases) {
    const e = thrown(() => AutoContextMemory.fromJSON(bad));
    assert.ok(e instanceof AutoContextError, String(e));
    assert.equal(e.code, 'INVALID_STATE', `${JSON.stringify(bad).slice(0, 60)}: ${e.message}`);
  }
  assert.match(thrown(() => AutoContextMemory.fromJSON({ ...state, autocontext: 99 })).message, /newer/);
  assert.equal(thrown(() => AutoContextMemory.fromJSON(state, { tokenizer: 'cl100k_base' })).field, 'tokenizer');
});

test('setPlan checks the plan', () => {
  const memory = new AutoContextMemory();
  memory.setPlan({ goal: 'fix the build', subtasks: [{ name: 'read log', state: 'done' }] });
  assert.equal(memory.plan().goal, 'fix the build');
  const e = thrown(() => memory.setPlan({ goal: 'x', subtasks: [{ name: 'a', state: 'doing' }] }));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.equal(memory.plan().goal, 'fix the build');
  memory.setPlan(null);
  assert.equal(memory.plan(), null);
});
