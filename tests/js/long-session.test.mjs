// A long session as a host that saves every turn runs it: the log of everything added goes to
// the offload store in chunks, so the saved state stays the size of the working list while the
// history grows, and nothing added is lost (read back through save, load and a version-1 state).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, AutoContextError } from 'autocontext';
import { MemorySessionStore, MemoryStore } from 'autocontext/stores/memory';
import { rejected, round } from './helpers.mjs';
import { readFileSync } from 'node:fs';

const summarize = async ({ prompt }) => `summary: ${prompt.slice(0, 200)}`;

/** A question and 30 short tool rounds. */
function conversation() {
  const added = [{ role: 'user', content: 'start' }];
  for (let turn = 0; turn < 30; turn++) added.push(...round(turn, { calls: 1, resultChars: 100 }));
  return added;
}

test('a session saved every turn keeps its state the size of the working list, and loses nothing', async () => {
  const store = new MemoryStore();
  const sessions = new MemorySessionStore();
  const memory = new AutoContextMemory({ maxToken: 6_000, store, summarize, sessionId: 'long-1' });
  const added = [{ role: 'system', content: 'agent' }];
  memory.add(added[0]);
  const sizes = [];
  for (let turn = 0; turn < 240; turn++) {
    const messages = round(turn, { calls: 2, resultChars: 600 });
    memory.add(messages);
    added.push(...messages);
    await memory.compressIfNeeded();
    await memory.save(sessions);
    if (turn % 60 === 59) {
      const state = memory.toJSON();
      assert.equal(state.log.tail.length, 1, 'a save leaves only the newest message in the state');
      assert.equal(state.log.messages, added.length);
      assert.equal(memory.historyLength, added.length);
      const [log, working] = [JSON.stringify(state.log).length, JSON.stringify(state.working).length];
      assert.ok(log < working, `the log's part of the state (${log} bytes) is smaller than the working list (${working})`);
      sizes.push(log);
    }
  }
  assert.ok(Math.max(...sizes) < 2 * Math.min(...sizes), `the log's part of the state does not grow with the history: ${sizes.join(', ')}`);
  assert.deepStrictEqual(await memory.originalMessages(), added);
  const loaded = await AutoContextMemory.load(sessions, 'long-1', { store, summarize });
  assert.deepStrictEqual(await loaded.originalMessages(), added);
  assert.deepStrictEqual(loaded.messages(), memory.messages());
});

test('a version-1 state restores, and its first flush moves the originals to the store', async () => {
  const store = new MemoryStore();
  const memory = new AutoContextMemory({ maxToken: 100_000, store, sessionId: 'v1' });
  const added = conversation();
  memory.add(added);
  const { log, ...rest } = memory.toJSON();
  const v1 = { ...rest, autocontext: 1, original: added };
  const restored = AutoContextMemory.fromJSON(JSON.stringify(v1), { store });
  assert.deepStrictEqual(await restored.originalMessages(), added);
  assert.equal(await restored.flush(), added.length - 1);
  const state = restored.toJSON();
  assert.equal(state.autocontext, 2);
  assert.equal(state.log.tail.length, 1);
  assert.deepStrictEqual(await AutoContextMemory.fromJSON(state, { store }).originalMessages(), added);
  assert.equal(log.messages, added.length);
});

test('a chunk the store lost is STORE_FAILED, and the newest message can be taken back', async () => {
  const store = new MemoryStore();
  const memory = new AutoContextMemory({ maxToken: 100_000, store, sessionId: 'lost' });
  const added = conversation();
  memory.add(added);
  await memory.flush();
  assert.deepStrictEqual(memory.pop(), added.at(-1));
  assert.deepStrictEqual(await memory.originalMessages(), added.slice(0, -1));
  const [key] = (await store.keys()).filter((k) => k.startsWith('lost/log-'));
  await store.delete(key);
  const e = await rejected(memory.originalMessages());
  assert.ok(e instanceof AutoContextError);
  assert.equal(e.code, 'STORE_FAILED');
  assert.match(e.message, /log chunk/);
});

/** A MemoryStore that counts the bytes put into it. */
class CountingStore extends MemoryStore {
  bytes = 0;
  put(key, value) {
    this.bytes += value.length;
    return super.put(key, value);
  }
}

test('a save per turn writes what the turn changed, not the whole state', async () => {
  const store = new CountingStore();
  const sessions = new MemorySessionStore();
  const memory = new AutoContextMemory({ maxToken: 16_000, store, summarize, sessionId: 'inc' });
  memory.add({ role: 'system', content: 'agent' });
  const perSave = [];
  let stateBytes = 0;
  for (let turn = 0; turn < 200; turn++) {
    const messages = round(turn, { calls: 1, resultChars: 300 });
    memory.add(messages);
    const pass = await memory.compressIfNeeded();
    const before = store.bytes;
    await memory.save(sessions);
    const head = (await sessions.load('inc')).state.length;
    if (!pass.compressed) perSave.push(store.bytes - before + head);
    stateBytes = JSON.stringify(memory.toJSON()).length;
  }
  const median = perSave.sort((a, b) => a - b)[perSave.length >> 1];
  assert.ok(median * 4 < stateBytes, `a save after a turn writes ${median} bytes (median), the state is ${stateBytes}`);
  // The head names pages; load reads them back into the same memory.
  const head = JSON.parse((await sessions.load('inc')).state);
  assert.equal(head.working, undefined);
  assert.ok(head.autocontextPages.working.length >= 1);
  const loaded = await AutoContextMemory.load(sessions, 'inc', { store, summarize });
  assert.deepStrictEqual(loaded.toJSON(), memory.toJSON());
  // Only the pages the head names are kept.
  const pages = (await store.keys('inc/state-')).sort();
  const named = [...head.autocontextPages.working, ...head.autocontextPages.offloads, ...head.autocontextPages.events];
  assert.deepStrictEqual(pages, [...new Set(named)].sort(), 'superseded pages are deleted');
  // A page of the working list or of the offload index is the text JSON.stringify writes of its
  // items, as when pages were cut from the parsed state: those stored then are recognized.
  for (const key of [...head.autocontextPages.working, ...head.autocontextPages.offloads]) {
    const text = await store.get(key);
    assert.equal(JSON.stringify(JSON.parse(text)), text, key);
  }
});

/** A MemoryStore whose next put of a saved state's page fails, once, when `failPage` is set. */
class FlakyStore extends MemoryStore {
  failPage = false;
  put(key, value) {
    if (this.failPage && key.includes('/state-')) {
      this.failPage = false;
      return Promise.reject(new Error('put failed'));
    }
    return super.put(key, value);
  }
}

test('saves after a load, a failed save or a pass write every page they name; each loads back whole', async () => {
  const store = new FlakyStore();
  const sessions = new MemorySessionStore();
  let memory = new AutoContextMemory({ maxToken: 6_000, store, summarize, sessionId: 'held' });
  memory.add({ role: 'system', content: 'agent' });
  let passes = 0;
  for (let turn = 0; turn < 48; turn++) {
    if (turn % 4 === 1) memory = await AutoContextMemory.load(sessions, 'held', { store, summarize });
    memory.add(round(turn, { calls: 1, resultChars: 400 }));
    if ((await memory.compressIfNeeded()).compressed) passes++;
    if (turn % 5 === 2) {
      // The pages this save wrote are deleted again: the next save must write them anew.
      store.failPage = true;
      assert.equal((await rejected(memory.save(sessions))).code, 'STORE_FAILED');
      if (turn % 2 === 0) memory.add({ role: 'user', content: `after the failed save of turn ${turn}` });
    }
    await memory.save(sessions);
    const { autocontextPages: named } = JSON.parse((await sessions.load('held')).state);
    for (const key of [...named.working, ...named.offloads, ...named.events]) assert.equal(typeof (await store.get(key)), 'string', `turn ${turn}: page ${key}`);
    const back = await AutoContextMemory.load(sessions, 'held', { store, summarize });
    assert.deepStrictEqual(back.toJSON(), memory.toJSON(), `turn ${turn}`);
    assert.deepStrictEqual(back.messages(), memory.messages(), `turn ${turn}`);
  }
  assert.ok(passes >= 3, `${passes} passes`);
});

test('two writers: the refused save deletes its pages, the winner loads whole; a lost page is STORE_FAILED', async () => {
  const store = new MemoryStore();
  const sessions = new MemorySessionStore();
  const first = new AutoContextMemory({ maxToken: 16_000, store, summarize, sessionId: 'two' });
  for (let turn = 0; turn < 40; turn++) first.add(round(turn, { calls: 1, resultChars: 300 }));
  await first.save(sessions);
  const a = await AutoContextMemory.load(sessions, 'two', { store, summarize });
  const b = await AutoContextMemory.load(sessions, 'two', { store, summarize });
  a.add(round(100, { calls: 1, resultChars: 300 }));
  b.add(round(200, { calls: 1, resultChars: 300 }));
  await a.save(sessions);
  const keysBefore = (await store.keys('two/state-')).sort();
  const e = await rejected(b.save(sessions));
  assert.equal(e.code, 'CONFLICT');
  assert.deepStrictEqual((await store.keys('two/state-')).sort(), keysBefore, 'the loser wrote nothing that stays, and deleted nothing of the winner');
  const back = await AutoContextMemory.load(sessions, 'two', { store, summarize });
  assert.deepStrictEqual(back.toJSON().working, a.toJSON().working);
  assert.deepStrictEqual(await back.originalMessages(), await a.originalMessages());

  const head = JSON.parse((await sessions.load('two')).state);
  await store.delete(head.autocontextPages.working[0]);
  const lost = await rejected(AutoContextMemory.load(sessions, 'two', { store, summarize }));
  assert.equal(lost.code, 'STORE_FAILED');
  assert.match(lost.message, /page/);
});

test('a session saved with pages keyed by digest loads, and its next save names the unchanged pages again', async () => {
  // saved-session-v2.json: a session store entry and the offload store's keys as a save wrote
  // them when a page index held SHA-256 digests (the pages' texts were JSON.stringify's).
  const fixture = JSON.parse(readFileSync(new URL('./saved-session-v2.json', import.meta.url), 'utf8'));
  const store = new MemoryStore();
  for (const [key, value] of fixture.store) await store.put(key, value);
  const sessions = new MemorySessionStore();
  await sessions.save(fixture.sessionId, { revision: 1, state: fixture.saved.state });
  await sessions.save(fixture.sessionId, fixture.saved);
  const memory = await AutoContextMemory.load(sessions, fixture.sessionId, { store });
  assert.equal(memory.revision, 2);
  assert.deepStrictEqual(memory.messages(), fixture.messages);
  assert.equal((await memory.originalMessages()).length, memory.historyLength);
  for (const { uuid } of memory.offloads()) assert.ok((await memory.reload(uuid)).length > 0, `offload ${uuid} reloads`);
  const old = JSON.parse(fixture.saved.state).autocontextPages;
  memory.add({ role: 'user', content: 'one more turn' });
  assert.equal(await memory.save(sessions), 3);
  const pages = JSON.parse((await sessions.load(fixture.sessionId)).state).autocontextPages;
  // The first page of the working list and the offload index are the texts stored: named again,
  // not written again. (The events' page is written once more: JSON.stringify wrote their
  // timestamps without the `.0` the engine writes.)
  assert.equal(pages.working[0], old.working[0]);
  assert.deepStrictEqual(pages.offloads, old.offloads);
  assert.notEqual(pages.working[1], old.working[1]);
  const back = await AutoContextMemory.load(sessions, fixture.sessionId, { store });
  assert.deepStrictEqual(back.toJSON(), memory.toJSON());
  assert.deepStrictEqual(back.messages(), [...fixture.messages, { role: 'user', content: 'one more turn' }]);
});

test('a page that is not a JSON array is STORE_FAILED naming it, and the head\'s revision is checked', async () => {
  const store = new MemoryStore();
  const sessions = new MemorySessionStore();
  const memory = new AutoContextMemory({ maxToken: 16_000, store, sessionId: 'bad' });
  for (let turn = 0; turn < 20; turn++) memory.add(round(turn, { calls: 1, resultChars: 100 }));
  await memory.save(sessions);
  const head = JSON.parse((await sessions.load('bad')).state);
  const [first, second] = head.autocontextPages.working;
  const text = await store.get(second);
  const firstText = await store.get(first);
  for (const wrong of ['{}', '[1,', `${text.slice(0, -1)}],"config":{}`, '[1] [2]', 'null', '']) {
    await store.put(second, wrong);
    const e = await rejected(AutoContextMemory.load(sessions, 'bad', { store }));
    assert.equal(e.code, 'STORE_FAILED', wrong);
    assert.equal(e.message, `page ${second} of the saved state is not a page in the offload store; was the store cleared?`);
  }
  await store.put(second, text);
  await store.delete(first);
  const missing = await rejected(AutoContextMemory.load(sessions, 'bad', { store }));
  assert.equal(missing.code, 'STORE_FAILED');
  assert.equal(missing.message, `page ${first} of the saved state is missing from the offload store; was the store cleared?`);
  await store.put(first, '40');
  const notArray = await rejected(AutoContextMemory.load(sessions, 'bad', { store }));
  assert.equal(notArray.code, 'STORE_FAILED');
  assert.match(notArray.message, /not a page in/);
  await store.put(first, firstText);
  const forged = new MemorySessionStore();
  await forged.save('bad', { revision: 1, state: JSON.stringify({ ...head, revision: -1 }) });
  const e = await rejected(AutoContextMemory.load(forged, 'bad', { store }));
  assert.equal(e.code, 'INVALID_STATE');
  assert.equal(e.field, 'revision');
});

test('a load reads the pages a few at a time, and names the first page in order that failed', async () => {
  // A store whose gets take a while, as a KV namespace's do: the pages are asked for together
  // (at most 8 at once), not one round trip after another.
  class SlowStore extends MemoryStore {
    inFlight = 0;
    most = 0;
    failing = new Map(); // key → delay before it throws
    async get(key) {
      this.inFlight++;
      this.most = Math.max(this.most, this.inFlight);
      try {
        const fails = this.failing.get(key);
        await new Promise((resolve) => setTimeout(resolve, fails ?? 5));
        if (fails !== undefined) throw new Error(`no ${key}`);
        return await super.get(key);
      } finally {
        this.inFlight--;
      }
    }
  }
  const store = new SlowStore();
  const sessions = new MemorySessionStore();
  const memory = new AutoContextMemory({ maxToken: 200_000, store, sessionId: 'slow' });
  for (let turn = 0; turn < 150; turn++) memory.add(round(turn, { calls: 1, resultChars: 100 }));
  await memory.save(sessions);
  const pages = Object.values(JSON.parse((await sessions.load('slow')).state).autocontextPages).filter(Array.isArray).flat();
  assert.ok(pages.length > 8, `${pages.length} pages`);
  store.most = 0;
  const back = await AutoContextMemory.load(sessions, 'slow', { store });
  assert.deepStrictEqual(back.messages(), memory.messages());
  assert.equal(store.most, 8, 'eight gets at once, never more');
  // The later page fails sooner; the error names the earlier one, as a load in order would.
  store.failing.set(pages[5], 1);
  store.failing.set(pages[2], 30);
  const e = await rejected(AutoContextMemory.load(sessions, 'slow', { store }));
  assert.equal(e.code, 'STORE_FAILED');
  assert.equal(e.message, `the offload store failed to get page ${pages[2]} of the saved state`);
  assert.equal(e.cause.message, `no ${pages[2]}`);
});

test('the offload index keeps the named and the newest records; retired offloads still reload', async () => {
  const store = new MemoryStore();
  const sessions = new MemorySessionStore();
  const memory = new AutoContextMemory({ maxToken: 2_000, toolResultLimit: 1_000, store, sessionId: 'retire' });
  const uuids = [];
  for (let turn = 0; turn < 500; turn++) {
    memory.add(round(turn, { calls: 1, resultChars: 2_500 }));
    const result = await memory.compressIfNeeded();
    for (const e of result.events) if (e.offloadUuid) uuids.push(e.offloadUuid);
  }
  assert.ok(uuids.length > 600, `enough offloads to retire some: ${uuids.length}`);
  const held = memory.offloads().map((o) => o.uuid);
  assert.ok(held.length <= 256 + memory.messages().length, `the state holds ${held.length} records`);
  assert.ok(!held.includes(uuids[0]), 'the first offload was retired');
  await memory.save(sessions);
  const back = await AutoContextMemory.load(sessions, 'retire', { store });
  for (const uuid of uuids.filter((_, i) => i % 50 === 0)) {
    assert.deepStrictEqual(await back.reload(uuid), await memory.reload(uuid), `${uuid} reloads after a load`);
  }
  assert.equal((await rejected(back.reload('12345678-1234-4234-8234-123456789abc'))).code, 'NOT_FOUND');
});
