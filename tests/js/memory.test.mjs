// AutoContextMemory through the installed package: lossless round trips, truncation and
// offload with byte-exact reloads, events, persistence, tokenizers and the reload tool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, AutoContextError, countTokens } from 'autocontext';
import { MemorySessionStore, MemoryStore } from 'autocontext/stores/memory';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { UUID, bigToolResult, call, markers, text } from './helpers.mjs';

const TRICKY = [
  { role: 'system', content: 'You are terse.', x_trace: { id: 7, spans: [0.1, 0.30000000000000004, 1e-7, 5e-324, 1.7976931348623157e308, -2.5e-3] } },
  { role: 'user', name: 'ana', content: [{ type: 'text', text: 'What is in this picture? ☃ 日本' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } }] },
  { role: 'assistant', content: null, refusal: null, tool_calls: [{ ...call('a1', 'look', { zoom: 2.5 }), x_vendor: [true, null, 'k'] }] },
  { role: 'tool', tool_call_id: 'a1', content: [{ type: 'text', text: 'a snowman' }], x_ms: 12.75 },
  { role: 'assistant', content: 'A snowman.', metadata: { nested: { deep: [1, 2, { three: '3' }] }, empty: {}, list: [] } },
];

test('added messages come back deep-equal, unknown fields and content parts included', async () => {
  const memory = new AutoContextMemory();
  memory.add(TRICKY[0]);
  memory.add(TRICKY.slice(1));
  assert.deepStrictEqual(memory.messages(), TRICKY);
  assert.deepStrictEqual((await memory.originalMessages()), TRICKY);
  // A fresh copy each call: mutating it does not reach the memory.
  memory.messages()[1].content[0].text = 'changed';
  assert.deepStrictEqual(memory.messages(), TRICKY);
  assert.deepStrictEqual(memory.validate(), []);
});

test('a tool result over toolResultLimit keeps head, tail and id; reload returns it byte-exact', async () => {
  const store = new MemoryStore();
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, store, sessionId: 's-trunc' });
  const conversation = bigToolResult();
  const original = conversation[2].content;
  memory.add(conversation);
  assert.equal(memory.needsCompression(), true);
  const before = memory.tokenCount();

  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true);
  assert.equal(result.tokensBefore, before);
  assert.ok(result.tokensAfter < before);
  assert.equal(memory.tokenCount(), result.tokensAfter);

  const shrunk = memory.messages()[2];
  assert.equal(shrunk.role, 'tool');
  assert.equal(shrunk.tool_call_id, 'log1');
  assert.ok(shrunk.content.length < original.length);
  assert.ok(shrunk.content.startsWith(original.slice(0, 1000)), 'the head is kept');
  assert.ok(shrunk.content.endsWith(original.slice(-500)), 'the tail is kept');
  const [uuid] = markers(shrunk.content);
  assert.match(uuid, UUID);
  assert.deepStrictEqual(memory.messages().slice(0, 2), conversation.slice(0, 2), 'untouched messages stay identical');

  const reloaded = await memory.reload(uuid);
  assert.deepStrictEqual(reloaded, [conversation[2]]);
  assert.equal(reloaded[0].content, original);
  assert.deepStrictEqual(store.keys(), [`s-trunc/${uuid}`]);
  assert.deepStrictEqual(memory.offloads(), [{ uuid, messageCount: 1, digest: memory.offloads()[0].digest }]);
  assert.match(memory.offloads()[0].digest, /^[0-9a-f]{16}$/, 'with the digest of the payload stored');
  assert.deepStrictEqual((await memory.originalMessages()), conversation, 'the original log is append-only');
});

test('a large old message is offloaded behind a preview and reloads byte-exact', async () => {
  const big = { role: 'assistant', content: text(9000, 5), x_keep: 'me' };
  const conversation = [
    { role: 'user', content: 'Explain the linker.' },
    big,
    { role: 'user', content: 'Thanks. And the loader?' },
    { role: 'assistant', content: 'The loader maps segments.' },
    { role: 'user', content: 'And relocation?' },
  ];
  const memory = new AutoContextMemory({ maxToken: 2000, lastKeep: 2 });
  memory.add(conversation);
  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true);
  assert.equal(result.underTarget, true);
  const offload = result.events.find((e) => e.type.startsWith('LARGE_MESSAGE_OFFLOAD'));
  assert.ok(offload, JSON.stringify(result.events));
  assert.equal(offload.index, 1);

  const now = memory.messages();
  assert.equal(now.length, conversation.length);
  assert.equal(now[1].role, 'assistant');
  assert.equal(now[1].x_keep, 'me', 'fields the strategy did not change survive');
  assert.ok(now[1].content.length < 600, `preview too long: ${now[1].content.length}`);
  assert.ok(now[1].content.startsWith(big.content.slice(0, 100)));
  assert.deepStrictEqual(markers(now[1].content), [offload.offloadUuid]);
  assert.deepStrictEqual(await memory.reload(offload.offloadUuid), [big]);
  assert.deepStrictEqual(now.slice(2), conversation.slice(2));
});

test('events have one shape, match the pass result, and name the offload the marker names', async () => {
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000 });
  memory.add(bigToolResult());
  assert.deepStrictEqual(memory.events(), []);
  const t0 = Date.now();
  const result = await memory.compressIfNeeded();
  const events = memory.events();
  assert.deepStrictEqual(events, result.events);
  assert.equal(events.length, 1);
  const [e] = events;
  assert.equal(e.type, 'TOOL_RESULT_TRUNCATE');
  assert.ok(e.timestamp >= t0 - 1 && e.timestamp <= Date.now() + 1, `timestamp ${e.timestamp}`);
  assert.equal(e.index, 2);
  assert.equal(e.messageCount, 1);
  assert.equal(e.replacementCount, 1);
  assert.ok(Number.isInteger(e.tokensBefore) && Number.isInteger(e.tokensAfter));
  assert.ok(e.tokensAfter < e.tokensBefore);
  assert.match(e.offloadUuid, UUID);
  assert.deepStrictEqual(markers(memory.messages()[e.index].content), [e.offloadUuid]);
  for (const key of ['compressed', 'tokensBefore', 'tokensAfter', 'messagesBefore', 'messagesAfter', 'targetTokens', 'underTarget']) {
    assert.ok(key in result, `result has ${key}`);
  }
  assert.equal(result.targetTokens, 3000);

  // A second pass under the target does nothing and records nothing.
  const again = await memory.compressIfNeeded();
  assert.equal(again.compressed, false);
  assert.deepStrictEqual(again.events, []);
  assert.equal(memory.events().length, 1);
});

test('toJSON -> fromJSON restores messages, events and offloads; reload still works', async () => {
  const store = new MemoryStore();
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, store, sessionId: 'persist-1' });
  memory.add(TRICKY);
  memory.add(bigToolResult());
  await memory.compressIfNeeded();
  const state = memory.toJSON();
  assert.deepStrictEqual(JSON.parse(JSON.stringify(state)), state, 'the state is plain JSON data');
  assert.equal(JSON.stringify(memory), JSON.stringify(state), 'JSON.stringify uses toJSON');

  for (const input of [state, JSON.stringify(state)]) {
    const restored = AutoContextMemory.fromJSON(input, { store });
    assert.ok(restored instanceof AutoContextMemory);
    assert.deepStrictEqual(restored.messages(), memory.messages());
    assert.deepStrictEqual((await restored.originalMessages()), (await memory.originalMessages()));
    assert.deepStrictEqual(restored.events(), memory.events());
    assert.deepStrictEqual(restored.offloads(), memory.offloads());
    assert.equal(restored.tokenCount(), memory.tokenCount());
    assert.equal(restored.sessionId, 'persist-1');
    assert.equal(restored.store, store);
    const [{ uuid }] = restored.offloads();
    const [original] = await restored.reload(uuid);
    assert.equal(original.content.length, 20_000);
    restored.add({ role: 'assistant', content: 'The log shows a linker error.' });
    assert.equal(restored.messages().length, memory.messages().length + 1);
  }
  assert.equal(memory.messages().length, TRICKY.length + 3, 'restoring does not touch the source memory');
});

test("tokenizer 'estimate' and a tokenizer function count the memory's tokens", () => {
  const msg = { role: 'user', content: 'The quick brown fox jumps over the lazy dog.' };
  const exact = new AutoContextMemory();
  const estimate = new AutoContextMemory({ tokenizer: 'estimate' });
  exact.add(msg);
  estimate.add(msg);
  const overhead = exact.tokenCount() - countTokens(msg.content);
  assert.ok(overhead > 0);
  assert.equal(estimate.tokenCount(), countTokens(msg.content, 'estimate') + overhead);

  const seen = [];
  const byChars = new AutoContextMemory({ tokenizer: (s) => (seen.push(s), s.length) });
  byChars.add(msg);
  assert.deepStrictEqual(seen, [msg.content]);
  assert.equal(byChars.tokenCount(), msg.content.length + overhead);
  assert.equal(byChars.toJSON().config.tokenizer, 'custom');

  // Restoring a memory made with a function needs the function again.
  const e = (() => { try { AutoContextMemory.fromJSON(byChars.toJSON()); } catch (err) { return err; } })();
  assert.ok(e instanceof AutoContextError);
  assert.equal(e.code, 'INVALID_CONFIG');
  assert.equal(e.field, 'tokenizer');
  const restored = AutoContextMemory.fromJSON(byChars.toJSON(), { tokenizer: (s) => s.length });
  assert.equal(restored.tokenCount(), byChars.tokenCount());
});

test('a tokenizer function that throws or returns a non-number fails the add with TOKENIZER_FAILED', () => {
  const boom = new RangeError('counter broke');
  const throwing = new AutoContextMemory({ tokenizer: () => { throw boom; } });
  let e = (() => { try { throwing.add({ role: 'user', content: 'hi' }); } catch (err) { return err; } })();
  assert.equal(e.code, 'TOKENIZER_FAILED');
  assert.equal(e.cause, boom);
  assert.deepStrictEqual(throwing.messages(), []);

  const nan = new AutoContextMemory({ tokenizer: () => NaN });
  e = (() => { try { nan.add({ role: 'user', content: 'hi' }); } catch (err) { return err; } })();
  assert.equal(e.code, 'TOKENIZER_FAILED');
  assert.match(e.message, /number/);
  assert.deepStrictEqual(nan.messages(), []);
});

test('reloadTool and handleReloadCall speak the OpenAI tool format', async () => {
  // One page holds the whole reload (by default a page is at most 4/5 of toolResultLimit).
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, offloadReloadLimit: 100_000 });
  memory.add(bigToolResult());
  const { events: [{ offloadUuid: uuid }] } = await memory.compressIfNeeded();

  const tool = memory.reloadTool();
  assert.equal(tool.type, 'function');
  assert.equal(tool.function.name, 'context_reload');
  assert.deepStrictEqual(tool.function.parameters.required, ['working_context_offload_uuid']);

  const args = { working_context_offload_uuid: uuid };
  const toolCall = { id: 'rl1', type: 'function', function: { name: 'context_reload', arguments: JSON.stringify(args) } };
  for (const input of [toolCall, toolCall.function.arguments, args]) {
    const answer = await memory.handleReloadCall(input);
    assert.match(answer, new RegExp(uuid));
    assert.ok(answer.includes(text(20_000, 3).slice(9000, 9200)), 'the answer holds the omitted middle');
  }

  const unknown = '12345678-1234-4234-8234-123456789abc';
  const answer = await memory.handleReloadCall({ working_context_offload_uuid: unknown });
  assert.match(answer, /No offloaded context/);
  assert.ok(answer.includes(unknown));
  assert.match(await memory.handleReloadCall({ wrong: 1 }), /working_context_offload_uuid/);
});

test('a synchronous store works as well as an async one', async () => {
  const map = new Map();
  const store = { get: (k) => map.get(k), put: (k, v) => void map.set(k, v), delete: (k) => void map.delete(k) };
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, store });
  const conversation = bigToolResult();
  memory.add(conversation);
  const { events } = await memory.compressIfNeeded();
  assert.equal(map.size, 1);
  assert.deepStrictEqual(await memory.reload(events[0].offloadUuid), [conversation[2]]);
});

test('numbers in unknown fields come back bit-exact (no float rounding through the engine)', () => {
  // A deterministic spread of doubles: random bit patterns and decimals of every magnitude.
  const view = new DataView(new ArrayBuffer(8));
  let seed = 0x2545f491;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const values = [];
  while (values.length < 20_000) {
    view.setUint32(0, next());
    view.setUint32(4, next());
    const bits = view.getFloat64(0);
    if (Number.isFinite(bits) && !Object.is(bits, -0)) values.push(bits);
    values.push((next() / 2 ** 32) * 10 ** ((next() % 40) - 20));
  }
  const memory = new AutoContextMemory();
  memory.add({ role: 'user', content: 'numbers', x_values: values });
  const back = memory.messages()[0].x_values;
  const wrong = values.filter((v, i) => !Object.is(back[i], v));
  assert.deepStrictEqual(wrong.slice(0, 3), [], `${wrong.length} of ${values.length} numbers changed`);
});

test('messages() follows every add and pass, and each call is a fresh copy', async () => {
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, sessionId: 's-view' });
  const seen = [];
  for (let round = 0; round < 6; round++) {
    memory.add(bigToolResult().map((m) => (m.tool_call_id || m.tool_calls ? JSON.parse(JSON.stringify(m).replaceAll('"log1"', `"r${round}"`)) : m)));
    const before = memory.messages();
    await memory.compressIfNeeded();
    const after = memory.messages();
    // The list as the engine holds it, read whole from a restored copy.
    assert.deepStrictEqual(after, AutoContextMemory.fromJSON(memory.toJSON()).messages(), `round ${round}`);
    assert.notStrictEqual(after, memory.messages(), 'a new array each call');
    after.length = 0;
    before.push({ role: 'user', content: 'not added' });
    assert.deepStrictEqual(memory.messages(), AutoContextMemory.fromJSON(memory.toJSON()).messages(), 'changing a copy changes nothing');
    seen.push(memory.messages().length);
  }
  assert.ok(memory.events().length > 0, 'passes rewrote the list');
  assert.deepStrictEqual(memory.messages().length, seen.at(-1));
});

test('a store that says acceptsBytes gets each offload as its UTF-8 bytes, any other store as text; both reload the same', async () => {
  /** A Map-backed store recording what type each value came as. */
  const recording = (acceptsBytes) => {
    const map = new Map();
    const types = [];
    return {
      types,
      ...(acceptsBytes ? { acceptsBytes: true } : {}),
      get: (key) => map.get(key) ?? null,
      put: (key, value) => {
        types.push(value instanceof Uint8Array ? 'bytes' : typeof value);
        map.set(key, typeof value === 'string' ? value : new TextDecoder().decode(value));
      },
      delete: (key) => map.delete(key),
    };
  };
  // Non-ASCII text in what is offloaded: the bytes must be UTF-8, not one byte per code unit.
  const conversation = [
    { role: 'system', content: 'agent' },
    { role: 'user', content: 'Résumé: lis le journal — 日本語, 𝄞.' },
    ...bigToolResult(30_000).slice(1).map((m) => (m.role === 'tool' ? { ...m, content: `ünïcödé 𝄞 ${m.content}` } : m)),
    { role: 'assistant', content: 'Read it: “done”.' },
  ];
  const reloaded = [];
  for (const acceptsBytes of [false, true]) {
    const store = recording(acceptsBytes);
    const memory = new AutoContextMemory({ maxToken: 4000, store, sessionId: 'bytes' });
    memory.add(conversation);
    const result = await memory.compressIfNeeded();
    assert.ok(result.compressed && store.types.length > 0, JSON.stringify(result));
    assert.deepEqual(new Set(store.types), new Set([acceptsBytes ? 'bytes' : 'string']));
    const uuids = markers(JSON.stringify(memory.messages()));
    assert.ok(uuids.length > 0);
    const back = [];
    for (const uuid of uuids) back.push(...(await memory.reload(uuid)));
    assert.ok(back.some((m) => typeof m.content === 'string' && m.content.startsWith('ünïcödé 𝄞')), 'the original tool result comes back');
    reloaded.push(back);
  }
  assert.deepEqual(reloaded[1], reloaded[0]);
});

test('text outside ASCII comes back to the code unit: messages(), originalMessages(), reload()', async () => {
  // Every kind of character the engine hands back as JSON: two-byte, three-byte (the line
  // separators JSON.parse takes raw, a byte-order mark, the last of the plane), four-byte
  // (surrogate pairs), in values and in keys.
  const odd = 'é ü ß ¿ ĳ Ω 日本語 한국어 \u2028\u2029 \ufeff \u0080 \uffff 𝄞 😀👍🏽 👨‍👩‍👧 \u{10ffff}';
  const conversation = [
    { role: 'system', content: `Reply in kind: ${odd}` },
    { role: 'user', content: odd, x_meta: { 'ключ': 'значение', [odd]: [odd, 1.5] } },
    { role: 'assistant', content: null, tool_calls: [call('u1', 'read_log', { path: `/tmp/${odd}` })] },
    { role: 'tool', tool_call_id: 'u1', content: `${odd} `.repeat(2_000) },
    { role: 'assistant', content: `Read it: ${odd}` },
  ];
  const store = new MemoryStore();
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, store, sessionId: 'odd' });
  memory.add(conversation);
  assert.deepStrictEqual(memory.messages(), conversation);
  assert.deepStrictEqual(memory.messages(), conversation, 'read again');
  const { events } = await memory.compressIfNeeded();
  const uuid = events.find((e) => e.offloadUuid !== undefined)?.offloadUuid;
  assert.ok(uuid !== undefined, JSON.stringify(events));
  assert.ok(JSON.stringify(memory.messages()).includes(odd), 'what the pass kept still reads');
  assert.ok((await memory.reload(uuid)).some((m) => m.tool_call_id === 'u1' && m.content === conversation[3].content));
  await memory.flush();
  assert.deepStrictEqual(await memory.originalMessages(), conversation);
});

test('a memory nobody holds any more is freed, engine and all, whether made, restored or loaded', async () => {
  // A Worker restores its session into a new memory on every request and drops it after: a
  // memory kept alive by the host's pieces it holds would grow the engine's memory by a state
  // at every request, until the isolate ran out of it.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  const content = 'x'.repeat(1 << 18);
  const store = new MemoryStore();
  const sessions = new MemorySessionStore();
  const saved = new AutoContextMemory({ store, sessionId: 'dropped' });
  saved.add({ role: 'user', content: `${content} saved` });
  const state = saved.toJSON();
  await saved.save(sessions);
  const ways = {
    made: async (i) => new AutoContextMemory({ store }).add({ role: 'user', content: `${content} ${i}` }),
    restored: async () => AutoContextMemory.fromJSON(state, { store }),
    loaded: async () => AutoContextMemory.load(sessions, 'dropped', { store }),
  };
  for (const [way, make] of Object.entries(ways)) {
    const round = async () => {
      for (let i = 0; i < 16; i++) await make(i);
      for (let i = 0; i < 3; i++) {
        gc();
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      return process.memoryUsage().external;
    };
    await round();
    const first = await round();
    const grown = (await round()) - first;
    // Each memory holds its text more than once: kept alive, 16 of them grow it by 10 MB or more.
    assert.ok(grown < 3e6, `${way}: the engine's memory grew by ${(grown / 1e6).toFixed(1)} MB for 16 memories dropped`);
  }
});

test('dispose() frees the engine at once: a handler that loads per request keeps the memory flat', async () => {
  // A Worker restores its session into a new memory on every request. Dropped, each waits for
  // the garbage collector, and until it runs every request grows the WebAssembly memory (which
  // never shrinks) by a state; disposed, the next request reuses what the last one freed.
  const content = 'x'.repeat(1 << 18);
  const store = new MemoryStore();
  const sessions = new MemorySessionStore();
  const first = new AutoContextMemory({ store, sessionId: 'per-request' });
  first.add({ role: 'user', content: `${content} first` });
  await first.save(sessions);
  first.dispose();
  const request = async (i) => {
    const memory = await AutoContextMemory.load(sessions, 'per-request', { store });
    try {
      memory.add([{ role: 'assistant', content: `answer ${i}` }, { role: 'user', content: `question ${i}` }]);
      await memory.compressIfNeeded();
      assert.equal(memory.messages().length, 2 * i + 3);
      await memory.save(sessions);
    } finally {
      memory.dispose();
    }
    await new Promise((resolve) => setTimeout(resolve, 0));
  };
  for (let i = 0; i < 4; i++) await request(i);
  const before = process.memoryUsage().external;
  for (let i = 4; i < 28; i++) await request(i);
  const grown = process.memoryUsage().external - before;
  // Each memory holds its 256 KB text more than once: 24 memories left to the collector grow it by 12 MB or more.
  assert.ok(grown < 2e6, `the engine's memory grew by ${(grown / 1e6).toFixed(1)} MB over 24 requests that disposed of their memory`);
});

test('a disposed memory refuses every use with INVALID_STATE; disposing again does nothing', async () => {
  const memory = new AutoContextMemory({ sessionId: 'disposed' });
  memory.add({ role: 'user', content: 'hello' });
  memory.dispose();
  memory.dispose();
  for (const use of [() => memory.messages(), () => memory.add({ role: 'user', content: 'again' }), () => memory.toJSON(), () => memory.sessionId]) {
    assert.throws(use, (e) => e instanceof AutoContextError && e.code === 'INVALID_STATE' && /disposed/.test(e.message));
  }
  await assert.rejects(memory.compressIfNeeded(), (e) => e instanceof AutoContextError && e.code === 'INVALID_STATE');
  await assert.rejects(memory.save(new MemorySessionStore()), (e) => e instanceof AutoContextError && e.code === 'INVALID_STATE');
  // `using` where the runtime has Symbol.dispose: the same method.
  if (typeof Symbol.dispose === 'symbol') {
    const other = new AutoContextMemory();
    other[Symbol.dispose]();
    assert.throws(() => other.messages(), (e) => e.code === 'INVALID_STATE');
  }
});

test('a pass running when the memory is disposed ends with its result; a save running refuses the dispose', async () => {
  const store = new MemoryStore();
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, store, sessionId: 'disposed-mid-pass' });
  memory.add(bigToolResult());
  const pass = memory.compressIfNeeded();
  memory.dispose();
  const result = await pass;
  assert.equal(result.compressed, true);
  assert.equal(result.events[0].type, 'TOOL_RESULT_TRUNCATE');

  let release;
  const slow = { load: () => null, save: () => new Promise((resolve) => (release = resolve)) };
  const saving = new AutoContextMemory({ sessionId: 'disposed-mid-save' });
  saving.add({ role: 'user', content: 'hi' });
  const saved = saving.save(slow);
  while (release === undefined) await new Promise((resolve) => setTimeout(resolve, 0));
  assert.throws(() => saving.dispose(), (e) => e instanceof AutoContextError && e.code === 'LIMIT_EXCEEDED');
  release();
  await saved;
  saving.dispose();
  assert.throws(() => saving.messages(), (e) => e.code === 'INVALID_STATE');
});

test('every process draws its own seed: default session ids and offload uuids differ between two processes', async () => {
  const { execFileSync } = await import('node:child_process');
  // A new process each: the session id, then the uuid of an offload a pass wrote.
  const script = `
    import { AutoContextMemory } from 'autocontext';
    const m = new AutoContextMemory({ maxToken: 300 });
    m.add({ role: 'user', content: 'question' });
    m.add({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }] });
    m.add({ role: 'tool', tool_call_id: 'c1', content: 'output line\\n'.repeat(400) });
    m.add({ role: 'assistant', content: 'done' });
    m.add({ role: 'user', content: 'next' });
    await m.compressIfNeeded();
    const uuids = JSON.stringify(m.messages()).match(/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/g) ?? [];
    console.log(JSON.stringify({ session: m.sessionId, uuids }));`;
  const run = () => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
  const [a, b] = [run(), run()];
  assert.match(a.session, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(a.session, b.session);
  assert.ok(a.uuids.length > 0 && b.uuids.length > 0, 'the pass offloaded');
  assert.ok(a.uuids.every((u) => !b.uuids.includes(u)), `${a.uuids} / ${b.uuids}`);
});

test('long texts with characters of every UTF-8 width, wherever they fall, reach the engine and come back exact', () => {
  // Strings of more than 128 UTF-16 units enter the module through the native encoder
  // (scripts/long-strings.mjs): all of an ASCII text at once, else what fits in as many bytes as
  // units, then the rest. Put the first wide character at the start, mid-way, just past 128 and
  // at the very end, and make whole texts of two-, three- and four-byte characters.
  const ascii = (n) => 'abcdefghij'.repeat(Math.ceil(n / 10)).slice(0, n);
  const texts = [
    ascii(129),
    ascii(5_000),
    'é' + ascii(300),
    ascii(100) + 'ü' + ascii(300),
    ascii(129) + '漢' + ascii(50),
    ascii(400) + '😀',
    ascii(399) + '😀',
    ascii(200) + '€'.repeat(200),
    'ß'.repeat(300),
    '漢字かな'.repeat(100),
    '😀🎉'.repeat(150),
    `${ascii(150)}"\\\n\t\u0001${'é😀'.repeat(80)}${ascii(150)}`,
  ];
  const memory = new AutoContextMemory({ maxToken: 1_000_000 });
  for (const t of texts) memory.add({ role: 'user', content: t });
  assert.deepEqual(
    memory.messages().map((m) => m.content),
    texts,
  );
  // And through a saved state and back.
  const again = AutoContextMemory.fromJSON(memory.toJSON());
  assert.deepEqual(
    again.messages().map((m) => m.content),
    texts,
  );
  // Counting reads the same text: a block whose pieces end with it, repeated 400 times (a long
  // string), counts 400 times the block (a short one).
  for (const block of [' word😀', ' 漢字かな', ' abcdefghij', ' ßüé']) {
    assert.equal(countTokens(block.repeat(400)), 400 * countTokens(block), block);
  }
});
