// Deno: the installed package (bare `autocontext`, resolved from node_modules through its
// exports map), the DenoKVStore and its chunking, the store contract, the guarantees of every
// wire format, and examples/deno.
//
//   deno test --allow-read --allow-write=<dir> --unstable-kv tests/deno/ -- <dir>
//
// <dir> is an empty directory for on-disk databases (scripts/test-runtimes.sh passes one).
import { AutoContextError, AutoContextMemory, countTokens, isAutoContextError, validate } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { CHUNK_BYTES, DenoKVSessionStore, DenoKVStore, INLINE_UNITS } from 'autocontext/stores/deno-kv';
import { bigValue, equal, storeContract } from '../contract/store-contract.mjs';
import { checkFencedSweep, fencedSweep, toolRound } from '../contract/fenced-sweep.mjs';
import { formatContract } from '../contract/format-contract.mjs';
import { runExample } from '../../examples/deno/main.ts';

const dir = Deno.args[0];

function assert(ok: unknown, what: string): asserts ok {
  if (!ok) throw new Error(what);
}

async function rejected(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

/** Every raw entry under a Deno KV prefix. */
async function raw(kv: Deno.Kv, prefix: Deno.KvKey): Promise<Deno.KvEntry<unknown>[]> {
  const out = [];
  for await (const e of kv.list({ prefix })) out.push(e);
  return out;
}

async function withKv(fn: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(':memory:');
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

Deno.test('autocontext resolves through the deno condition to the web entry point', () => {
  const entry = import.meta.resolve('autocontext');
  assert(entry.endsWith('/node_modules/autocontext/dist/entrypoints/web.js'), `resolved to ${entry}`);
  equal(import.meta.resolve('autocontext/stores/deno-kv').endsWith('/node_modules/autocontext/dist/stores/deno-kv.js'), true, 'the store subpath');
  equal(countTokens('hello world'), 2, 'o200k count in Deno');
});

Deno.test('diagnostics in Deno without --allow-env: AUTOCONTEXT_LOG is not readable, onEvent still hears every pass', async () => {
  equal((await Deno.permissions.query({ name: 'env', variable: 'AUTOCONTEXT_LOG' })).state === 'granted', false, 'env access is not granted');
  const events: string[] = [];
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, onEvent: (e) => events.push(e.type) });
  memory.add([
    { role: 'user', content: 'Read the log.' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'l1', type: 'function', function: { name: 'read_log', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'l1', content: 'line of the log\n'.repeat(2000) },
  ]);
  const result = await memory.compressIfNeeded();
  assert(result.compressed, 'compressed');
  equal(events.join(','), 'compression,pass', 'one change, one pass');
});

for (const { name, run } of storeContract(() => Deno.openKv(':memory:').then((kv) => new DenoKVStore(kv)), {
  close: (store) => ((store as DenoKVStore).kv as Deno.Kv).close(),
  checksKeys: true,
})) {
  Deno.test(`DenoKVStore: ${name}`, run);
}
for (const { name, run } of storeContract(() => new MemoryStore())) Deno.test(`MemoryStore: ${name}`, run);

for (const { name, run } of formatContract({ AutoContextMemory, validate, MemoryStore })) Deno.test(`format contract: ${name}`, run);

Deno.test('DenoKVStore: key parts are [prefix, sessionId, id]; short values are stored as they are', () =>
  withKv(async (kv) => {
    const store = new DenoKVStore(kv);
    await store.put('chat-1/4f0c0e7e-1b2a-4c3d-9e8f-0a1b2c3d4e5f', 'hello');
    equal((await kv.get(['autocontext', 'chat-1', '4f0c0e7e-1b2a-4c3d-9e8f-0a1b2c3d4e5f'])).value, 'hello', 'the raw entry');
    const custom = new DenoKVStore(kv, { prefix: 'offloads' });
    await custom.put('chat-1/x/y', 'v');
    equal((await kv.get(['offloads', 'chat-1', 'x/y'])).value, 'v', 'the id keeps its slashes in one part');
    equal(await store.get('chat-1/x/y'), null, 'another prefix is another namespace');
    equal(JSON.stringify(await custom.keys()), '["chat-1/x/y"]', 'keys under the prefix');
  }));

Deno.test('DenoKVStore: values over 64 KiB are chunked and reassembled; overwrite and delete leave no chunks', () =>
  withKv(async (kv) => {
    const store = new DenoKVStore(kv);
    const base = ['autocontext', 's', 'k'];
    const big = bigValue(1_100_000);
    await store.put('s/k', big);
    const header = (await kv.get(base)).value as { generation: string; chunks: number; bytes: number; encoding: string };
    const bytes = new TextEncoder().encode(big).length;
    equal(header.encoding, 'utf-8', 'encoding');
    equal(header.bytes, bytes, 'byte length in the header');
    equal(header.chunks, Math.ceil(bytes / CHUNK_BYTES), 'chunk count');
    const chunks = await raw(kv, base);
    equal(chunks.length, header.chunks, 'chunk entries under the key');
    assert(chunks.every((c) => c.key[3] === header.generation && c.value instanceof Uint8Array && c.value.length <= CHUNK_BYTES), 'chunks of one generation, each within the limit');
    equal(await store.get('s/k'), big, 'reassembled');

    // Overwrite with another long value: a new generation, the old chunks gone.
    const big2 = bigValue(200_000) + 'second';
    await store.put('s/k', big2);
    const header2 = (await kv.get(base)).value as { generation: string; chunks: number };
    assert(header2.generation !== header.generation, 'a new generation');
    const chunks2 = await raw(kv, base);
    equal(chunks2.length, header2.chunks, 'only the new chunks are left');
    equal(await store.get('s/k'), big2, 'the second value');

    // Overwrite with a short value: no chunks at all.
    await store.put('s/k', 'short');
    equal((await kv.get(base)).value, 'short', 'stored as it is');
    equal((await raw(kv, base)).length, 0, 'no chunks after a shorter overwrite');

    await store.put('s/k', big);
    await store.delete('s/k');
    equal((await kv.get(base)).versionstamp, null, 'the key is gone');
    equal((await raw(kv, ['autocontext'])).length, 0, 'delete removes every chunk');
  }));

Deno.test('DenoKVStore: sizes around the limits, and lone surrogates, come back exactly', () =>
  withKv(async (kv) => {
    const store = new DenoKVStore(kv);
    const values = [
      'x'.repeat(INLINE_UNITS),
      'x'.repeat(INLINE_UNITS + 1),
      '日'.repeat(INLINE_UNITS),
      '日'.repeat(INLINE_UNITS + 1),
      'a'.repeat(CHUNK_BYTES),
      'a'.repeat(CHUNK_BYTES + 1),
      'a'.repeat(CHUNK_BYTES * 13),
      '€'.repeat(CHUNK_BYTES), // multi-byte characters split across chunk boundaries
      '😀'.repeat(CHUNK_BYTES / 2),
      `lone \ud800 high and \udfff low ${'z'.repeat(70_000)} \ud83d`,
      `\ud800`,
    ];
    for (const [i, v] of values.entries()) await store.put(`s/v${i}`, v);
    for (const [i, v] of values.entries()) equal(await store.get(`s/v${i}`), v, `value ${i} (${v.length} code units)`);
    equal(((await kv.get(['autocontext', 's', 'v9'])).value as { encoding: string }).encoding, 'utf-16le', 'lone surrogates are kept as UTF-16');
  }));

Deno.test('DenoKVStore: concurrent overwrites of one key leave one whole value and only its chunks', () =>
  withKv(async (kv) => {
    const store = new DenoKVStore(kv);
    const values = Array.from({ length: 6 }, (_, i) => `${i}`.repeat(i % 2 ? 100 : 150_000 + i * 90_000));
    await Promise.all(values.map((v) => store.put('s/race', v)));
    const final = await store.get('s/race');
    assert(final !== null && values.includes(final), 'one of the values, whole');
    const header = (await kv.get(['autocontext', 's', 'race'])).value;
    const chunks = await raw(kv, ['autocontext', 's', 'race']);
    if (typeof header === 'string') equal(chunks.length, 0, 'no chunks beside a short value');
    else equal(chunks.length, (header as { chunks: number }).chunks, "only the winner's chunks");
  }));

Deno.test('DenoKVStore: a write that fails part-way leaves the old value whole and no chunks of the new one', () =>
  withKv(async (kv) => {
    const old = bigValue(300_000);
    await new DenoKVStore(kv).put('s/k', old);
    const before = (await raw(kv, ['autocontext'])).map((e) => JSON.stringify(e.key)).sort();
    // 2.2 MB is 34 chunks: two operations of chunks written ahead, then the commit with the rest.
    for (const failAt of [1, 2, 3]) {
      // A database whose failAt-th atomic operation of the write throws.
      const boom = new Error(`commit ${failAt} failed`);
      let ops = 0;
      const flaky = {
        get: kv.get.bind(kv),
        list: kv.list.bind(kv),
        atomic: () => {
          const op = kv.atomic();
          if (++ops === failAt) op.commit = () => Promise.reject(boom);
          return op;
        },
      } as unknown as Deno.Kv;
      const e = await rejected(new DenoKVStore(flaky).put('s/k', bigValue(2_200_000)));
      equal(e, boom, `commit ${failAt}: the database error passes through`);
      equal(await new DenoKVStore(kv).get('s/k'), old, `commit ${failAt}: the old value`);
      const after = (await raw(kv, ['autocontext'])).map((x) => JSON.stringify(x.key)).sort();
      equal(JSON.stringify(after), JSON.stringify(before), `commit ${failAt}: the same entries as before`);
    }
  }));

Deno.test('DenoKVStore: typed errors for bad options, foreign values and lost chunks; Deno KV errors pass through', () =>
  withKv(async (kv) => {
    for (const bad of [undefined, null, {}, { get() {} }]) {
      let e: unknown;
      try {
        new DenoKVStore(bad as unknown as Deno.Kv);
      } catch (x) {
        e = x;
      }
      assert(e instanceof AutoContextError && e.code === 'INVALID_CONFIG', `kv ${JSON.stringify(bad)}`);
    }
    for (const prefix of ['', 7, 'p'.repeat(2000)]) {
      let e: unknown;
      try {
        new DenoKVStore(kv, { prefix: prefix as string });
      } catch (x) {
        e = x;
      }
      assert(isAutoContextError(e, 'INVALID_CONFIG'), `prefix ${String(prefix).slice(0, 10)}`);
    }
    const store = new DenoKVStore(kv);
    equal((await rejected(store.get(`s/${'k'.repeat(2100)}`))).code, 'INVALID_ARGUMENT', 'a key too long for Deno KV');
    await kv.set(['autocontext', 's', 'foreign'], 42);
    equal((await rejected(store.get('s/foreign'))).code, 'STORE_FAILED', 'a value this store did not write');
    await store.put('s/lost', 'q'.repeat(100_000));
    const [first] = await raw(kv, ['autocontext', 's', 'lost']);
    await kv.delete(first.key);
    equal((await rejected(store.get('s/lost'))).code, 'STORE_FAILED', 'a chunk went missing');

    const closed = await Deno.openKv(':memory:');
    closed.close();
    const dead = new DenoKVStore(closed);
    const e = await rejected(dead.put('s/a', 'v'));
    assert(!isAutoContextError(e), `a Deno KV error passes through: ${e}`);
  }));

Deno.test('compress a conversation into Deno KV, reload byte-exact, restore from a database file', async () => {
  assert(dir, 'pass a writable directory after --');
  const path = `${dir}/engine.kv`;
  let kv = await Deno.openKv(path);
  let state;
  let uuids: string[];
  const tool = { role: 'tool' as const, tool_call_id: 'log1', content: bigValue(150_000) };
  try {
    const memory = new AutoContextMemory({ maxToken: 4_000, sessionId: 'deno-engine', store: new DenoKVStore(kv) });
    memory.add([{ role: 'user', content: 'Read the log.' }, { role: 'assistant', content: null, tool_calls: [{ id: 'log1', type: 'function', function: { name: 'read_log', arguments: '{}' } }] }, tool]);
    const result = await memory.compressIfNeeded();
    equal(result.compressed, true, 'compressed');
    uuids = memory.offloads().map((o) => o.uuid);
    assert(uuids.length > 0, 'offloaded');
    const back = await memory.reload(uuids[0]);
    equal(JSON.stringify(back), JSON.stringify([tool]), 'reload is byte-exact');
    state = memory.toJSON();
  } finally {
    kv.close();
  }

  // A new process would do this: open the file again and restore the memory from its state.
  kv = await Deno.openKv(path);
  try {
    const restored = AutoContextMemory.fromJSON(state, { store: new DenoKVStore(kv) });
    equal(JSON.stringify(await restored.reload(uuids[0])), JSON.stringify([tool]), 'reload after reopening the database');
    // The context_reload answer comes in pages when it is long; all of them carry the original.
    let text = '';
    for (let page = 1, pages = 1; page <= pages; page++) {
      const answer = await restored.handleReloadCall({ working_context_offload_uuid: uuids[0], page });
      const header = answer.match(/^Original content of offload [0-9a-f-]{36} \(\d+ messages?\)(?:, page \d+ of (\d+))?:\n/);
      assert(header, answer.slice(0, 200));
      if (header[1] !== undefined) pages = Number(header[1]);
      const note = answer.lastIndexOf('\n[Page ');
      text += answer.slice(header[0].length, header[1] !== undefined && note >= 0 ? note : answer.length);
    }
    assert(text.includes(tool.content), 'the context_reload answers carry the original');
    // Beside the offloads, the log of everything added, in chunks.
    const offloadKeys = (await new DenoKVStore(kv).keys('deno-engine/')).filter((k) => !k.includes('/log-'));
    equal(JSON.stringify(offloadKeys), JSON.stringify(uuids.map((u) => `deno-engine/${u}`).sort()), 'the keys in the file');
  } finally {
    kv.close();
  }
});

Deno.test('typed errors in Deno: bad messages, bad options, a failing store as the cause', async () => {
  const memory = new AutoContextMemory({ maxToken: 4_000 });
  let e: unknown;
  try {
    // @ts-expect-error a role no format has
    memory.add({ role: 'robot', content: 'hi' });
  } catch (x) {
    e = x;
  }
  assert(e instanceof AutoContextError && e.code === 'INVALID_MESSAGE' && e.index === 0, `add: ${e}`);
  try {
    new AutoContextMemory({ maxToken: -1 });
  } catch (x) {
    e = x;
  }
  assert(isAutoContextError(e, 'INVALID_CONFIG') && e.field === 'maxToken', `options: ${e}`);

  const boom = new Error('disk full');
  const failing = { get: () => null, put: () => Promise.reject(boom), delete: () => undefined };
  const m = new AutoContextMemory({ maxToken: 4_000, store: failing });
  m.add([{ role: 'user', content: 'Read the log.' }, { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'read_log', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 'c', content: 'x '.repeat(20_000) }]);
  const before = JSON.stringify(m.messages());
  const failed = await rejected(m.compressIfNeeded());
  assert(isAutoContextError(failed, 'STORE_FAILED') && failed.cause === boom, `store failure: ${failed}`);
  equal(JSON.stringify(m.messages()), before, 'the working list is as it was');
  equal(m.offloads().length, 0, 'no offload without a store write');
});

Deno.test('examples/deno runs: compresses into Deno KV and answers context_reload', () =>
  withKv(async (kv) => {
    const lines: string[] = [];
    const report = await runExample(kv, { log: (l) => lines.push(l) });
    assert(report.passes.length > 0, 'the example compressed');
    assert(report.reload !== null, 'the example reloaded an offload');
    // Every message sent is in the working list unchanged, or reloads byte-exact through the
    // markers (an offload may hold a message that was itself shortened, naming its own offload).
    const found = new Set(report.memory.messages().map((m) => JSON.stringify(m)));
    const queue = [...JSON.stringify(report.memory.messages()).matchAll(/CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36})/g)].map((m) => m[1]);
    const seen = new Set<string>();
    for (let i = 0; i < queue.length; i++) {
      if (seen.has(queue[i])) continue;
      seen.add(queue[i]);
      for (const m of await report.memory.reload(queue[i])) {
        found.add(JSON.stringify(m));
        for (const [, inner] of JSON.stringify(m).matchAll(/CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36})/g)) queue.push(inner);
      }
    }
    const lost = report.sent.filter((m) => !found.has(JSON.stringify(m)));
    equal(lost.length, 0, 'messages neither in the working list nor recoverable');
    const keys = (await new DenoKVStore(kv).keys('deno-example/')).filter((k) => !k.includes('/log-'));
    equal(keys.length, report.memory.offloads().length, 'one key per offload (beside the chunks of the log)');
    const chunked = [];
    for (const k of keys) if (typeof (await kv.get(['autocontext', ...k.split('/')])).value !== 'string') chunked.push(k);
    assert(chunked.length > 0, 'some offload was over 64 KiB and chunked');
    assert(lines.some((l) => l.startsWith('context_reload(')), 'the example printed its reload');
  }));

Deno.test('DenoKVSessionStore: two writers on one session (two store objects), the stale save refused, nothing lost', async () => {
  // One database, as two isolates of Deno Deploy share one (two connections to one local
  // SQLite file in one process would fight over its lock instead).
  const kvA = await Deno.openKv(`${dir}/sessions.sqlite`);
  const kvB = kvA;
  try {
    const host = (kv: Deno.Kv) => ({ store: new DenoKVStore(kv) });
    const sessionsA = new DenoKVSessionStore(kvA);
    const sessionsB = new DenoKVSessionStore(kvB);
    const first = new AutoContextMemory({ sessionId: 'two', maxToken: 6000, ...host(kvA) });
    first.add(toolRound(0, 1000) as never);
    equal(await first.save(sessionsA), 1, 'the first save');
    const a = (await AutoContextMemory.load(sessionsA, 'two', host(kvA)))!;
    const b = (await AutoContextMemory.load(sessionsB, 'two', host(kvB)))!;
    for (const [m, k] of [[a, 1], [b, 50]] as const) {
      for (let n = k; n < k + 4; n++) m.add(toolRound(n, 1500) as never);
      await m.compressIfNeeded();
    }
    const results = await Promise.allSettled([a.save(sessionsA), b.save(sessionsB)]);
    const lost = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
    equal(lost.length, 1, 'one save refused');
    assert(isAutoContextError(lost[0].reason, 'CONFLICT'), String(lost[0].reason));
    const winner = results[0].status === 'fulfilled' ? a : b;
    const back = (await AutoContextMemory.load(new DenoKVSessionStore(kvA), 'two', host(kvA)))!;
    equal(back.revision, 2, 'the winner is revision 2');
    equal(JSON.stringify((await back.originalMessages())), JSON.stringify((await winner.originalMessages())), "the saved session is the winner's, whole");
    for (const o of back.offloads()) assert((await back.reload(o.uuid)).length > 0, `offload ${o.uuid} reloads`);
    equal((await rejected((winner === a ? b : a).save(sessionsA))).code, 'CONFLICT', 'still stale later');
  } finally {
    kvA.close();
  }
});

Deno.test("DenoKVSessionStore: sweep({ sessions }) deletes exactly a fenced-out writer's keys; the saved session stays whole", () =>
  withKv(async (kv) => {
    // The offloads and the session in one database, as on Deno Deploy.
    checkFencedSweep(await fencedSweep(AutoContextMemory, new DenoKVSessionStore(kv), new DenoKVStore(kv), 'sweep'));
  }));

Deno.test('DenoKVSessionStore: a state over 800 KiB is chunked, replaced without leftovers, and read back exactly', () =>
  withKv(async (kv) => {
    const sessions = new DenoKVSessionStore(kv);
    equal(await sessions.load('big'), null, 'nothing saved yet');
    const big = 'é𝄞 state '.repeat(200_000) + '\uD800';
    await sessions.save('big', { revision: 1, state: big });
    const back = await sessions.load('big');
    equal(back?.revision, 1, 'revision');
    assert(back?.state === big, 'the state comes back exactly');
    await sessions.save('big', { revision: 2, state: 'small' });
    equal((await sessions.load('big'))?.state, 'small', 'replaced');
    const entries = await raw(kv, ['autocontext-sessions', 'big']);
    equal(entries.length, 2, 'the head and one chunk: the big state left nothing');
    equal((await rejected(sessions.save('big', { revision: 2, state: 'stale' }))).code, 'CONFLICT', 'stale');
    equal((await rejected(sessions.save('..', { revision: 1, state: 'x' }))).code, 'INVALID_ARGUMENT', 'bad id');
    equal((await raw(kv, ['autocontext-sessions', 'big'])).length, 2, 'a refused save leaves no chunks');
  }));
