// Calls that overlap a running compression pass, through the packed package: toJSON and fromJSON
// while the pass awaits the summarizer, add during the pass, and compressIfNeeded after a shared
// pass settled. A snapshot taken mid-pass is the memory before the pass: restoring it gives a
// valid memory whose offload index holds every offload its working list names, and none of the
// in-flight pass's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { markers, round } from './helpers.mjs';

const OPTIONS = { maxToken: 2400, toolResultLimit: 1500, minCompressionTokenThreshold: 200, minConsecutiveToolMessages: 1000, sessionId: 'ov' };

/** A conversation whose pass first truncates (an offload to write) and then summarizes. */
function conversation() {
  return [...round(1, { resultChars: 2600 }), ...round(2), ...round(3), { role: 'user', content: 'Now compare them.' }];
}

/** Every marker in the working list is in the offload index, and reloads from the store. */
async function assertIndexMatches(memory) {
  const own = new Set(memory.offloads().map((o) => o.uuid));
  for (const uuid of markers(JSON.stringify(memory.messages()))) {
    assert.ok(own.has(uuid), `the working list names ${uuid}, which the index does not hold`);
    assert.ok((await memory.reload(uuid)).length > 0);
  }
  assert.deepEqual(memory.validate(), []);
}

test('toJSON while a pass awaits the summarizer is the memory before the pass, and restores to a valid memory', async () => {
  const store = new MemoryStore();
  let release;
  const gate = new Promise((r) => (release = r));
  let started;
  const asked = new Promise((r) => (started = r));
  const memory = new AutoContextMemory({ ...OPTIONS, store, summarize: async () => (started(), await gate, 'SUMMARY short') });
  memory.add(conversation());
  const before = memory.toJSON();
  const pass = memory.compressIfNeeded();
  await asked;
  assert.equal(store.size, 0, 'a pass writes its offloads once its steps are done, not while a summary is pending');
  const mid = memory.toJSON();
  assert.deepStrictEqual(mid, before, 'nothing of the pass shows before it commits');
  const restored = AutoContextMemory.fromJSON(mid, { store, summarize: async () => 'OTHER short' });
  assert.deepEqual(restored.offloads(), []);
  await assertIndexMatches(restored);
  // The in-flight pass's offload is not the restored memory's.
  for (const key of store.keys()) {
    const uuid = key.slice('ov/'.length);
    assert.equal((await restored.handleReloadCall({ working_context_offload_uuid: uuid })).startsWith('No offloaded context'), true);
  }
  release();
  const r = await pass;
  assert.ok(r.compressed);
  await assertIndexMatches(memory);
  // Both memories go on independently over the one store, without touching each other's keys.
  const r2 = await restored.compressIfNeeded();
  assert.ok(r2.compressed);
  await assertIndexMatches(restored);
  await assertIndexMatches(memory);
  const all = new Set([...memory.offloads(), ...restored.offloads()].map((o) => `ov/${o.uuid}`));
  assert.deepEqual(new Set(store.keys()), all, 'every key belongs to exactly the memories that made it');
});

test('a memory restored from a mid-pass snapshot compresses and keeps what was added during the pass', async () => {
  const store = new MemoryStore();
  let release;
  const gate = new Promise((r) => (release = r));
  const memory = new AutoContextMemory({ ...OPTIONS, store, summarize: async () => (await gate, 'SUMMARY short') });
  memory.add(conversation());
  const pass = memory.compressIfNeeded();
  await new Promise((r) => setTimeout(r, 5));
  memory.add({ role: 'assistant', content: 'Comparing now.' });
  const mid = memory.toJSON();
  assert.equal(mid.working.at(-1).message.content, 'Comparing now.', 'the added message is in the snapshot');
  release();
  await pass;
  assert.equal(memory.messages().at(-1).content, 'Comparing now.', 'and kept by the pass');
  assert.equal(memory.tokenCount(), AutoContextMemory.fromJSON(memory.toJSON()).tokenCount(), 'and counted');
  const restored = AutoContextMemory.fromJSON(JSON.stringify(mid), { store, summarize: async () => 'SUMMARY short' });
  assert.equal(restored.messages().at(-1).content, 'Comparing now.');
  const r = await restored.compressIfNeeded();
  assert.ok(r.compressed && (r.underTarget || r.exhausted));
  await assertIndexMatches(restored);
});

test('a call after a shared pass failed runs a new pass', async () => {
  let fail = true;
  const inner = new MemoryStore();
  const store = { get: (k) => inner.get(k), put: (k, v) => (fail ? Promise.reject(new Error('down')) : inner.put(k, v)), delete: (k) => inner.delete(k) };
  const memory = new AutoContextMemory({ ...OPTIONS, store });
  memory.add(conversation());
  const a = memory.compressIfNeeded();
  const b = memory.compressIfNeeded();
  assert.equal(a, b);
  await assert.rejects(a, { code: 'STORE_FAILED' });
  fail = false;
  const c = memory.compressIfNeeded();
  assert.notEqual(c, a);
  assert.ok((await c).compressed);
  await assertIndexMatches(memory);
});
