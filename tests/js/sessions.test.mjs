// Saved sessions with one writer enforced (memory.save / AutoContextMemory.load) on the session
// stores Node runs: MemorySessionStore and FsSessionStore. A stale save is refused with
// CONFLICT and changes nothing; a process killed at any point restarts from its last save.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AutoContextMemory, isAutoContextError } from 'autocontext';
import { MemorySessionStore, MemoryStore } from 'autocontext/stores/memory';
import { FsSessionStore, FsStore } from 'autocontext/stores/fs';
import { markers, rejected, round } from './helpers.mjs';
import { reachedKeys } from '../contract/fenced-sweep.mjs';

async function withDir(fn) {
  const dir = await mkdtemp(join(tmpdir(), 'autocontext-sessions-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every file under `dir`, relative, sorted. */
async function files(dir) {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name).slice(dir.length + 1)).sort();
}

/** Every offload a memory's working list names reloads, and so does every one it lists. */
async function assertRecoverable(memory) {
  const listed = new Set(memory.offloads().map((o) => o.uuid));
  for (const uuid of markers(JSON.stringify(memory.messages()))) assert.ok(listed.has(uuid), `the working list names ${uuid}, which is not listed`);
  for (const uuid of listed) assert.ok((await memory.reload(uuid)).length >= 1, uuid);
}

/** Two writers on one session: the stale save is refused, and nothing of the winner is lost. */
async function twoWriters(sessions, store) {
  const host = { store };
  const first = new AutoContextMemory({ sessionId: 'two', maxToken: 6_000, ...host });
  first.add(round(0));
  assert.equal(await first.save(sessions), 1);
  // Two tabs (two Workers) restore revision 1 and each run a turn with a pass.
  const a = await AutoContextMemory.load(sessions, 'two', host);
  const b = await AutoContextMemory.load(sessions, 'two', host);
  assert.equal(a.revision, 1);
  for (const [m, k] of [[a, 1], [b, 50]]) {
    for (let n = k; n < k + 4; n++) m.add(round(n));
    await m.compressIfNeeded();
  }
  // Saved at the same time: one wins, the other is refused whole.
  const results = await Promise.allSettled([a.save(sessions), b.save(sessions)]);
  const won = results.filter((r) => r.status === 'fulfilled');
  const lost = results.filter((r) => r.status === 'rejected');
  assert.equal(won.length, 1, JSON.stringify(results.map((r) => r.status)));
  assert.ok(isAutoContextError(lost[0].reason, 'CONFLICT'), String(lost[0].reason));
  assert.match(lost[0].reason.message, /stale/);
  const winner = results[0].status === 'fulfilled' ? a : b;
  const loser = winner === a ? b : a;
  assert.equal(winner.revision, 2);
  assert.equal(loser.revision, 1, 'a refused save keeps the revision');
  // What is saved is the winner's session, whole, and every original it names reloads.
  const back = await AutoContextMemory.load(sessions, 'two', host);
  assert.equal(back.revision, 2);
  assert.deepEqual((await back.originalMessages()), (await winner.originalMessages()));
  assert.deepEqual(back.messages(), winner.messages());
  await assertRecoverable(back);
  // The loser saves again later: still stale. Loading again and redoing its turn works.
  assert.equal((await rejected(loser.save(sessions))).code, 'CONFLICT');
  const redo = await AutoContextMemory.load(sessions, 'two', host);
  redo.add({ role: 'user', content: 'the turn again' });
  assert.equal(await redo.save(sessions), 3);
  // A memory never saved cannot overwrite a saved session either.
  const fresh = new AutoContextMemory({ sessionId: 'two', ...host });
  assert.equal((await rejected(fresh.save(sessions))).code, 'CONFLICT');
  assert.equal((await AutoContextMemory.load(sessions, 'two', host)).revision, 3);
}

test('MemorySessionStore: two writers on one session, the stale save refused, nothing lost', () => twoWriters(new MemorySessionStore(), new MemoryStore()));

test('FsSessionStore: two writers on one session, the stale save refused, nothing lost', () =>
  withDir(async (dir) => {
    await twoWriters(new FsSessionStore(join(dir, 'sessions')), new FsStore(join(dir, 'offloads')));
    assert.deepEqual(await files(join(dir, 'sessions')), ['two.session'], 'no lock or temporary file left');
  }));

test('session stores check their arguments; load of an unknown session is null; state and revision round-trip', async () => {
  await withDir(async (dir) => {
    for (const sessions of [new MemorySessionStore(), new FsSessionStore(dir)]) {
      assert.equal(await sessions.load('nobody'), null);
      assert.equal(await AutoContextMemory.load(sessions, 'nobody'), null);
      for (const bad of ['..', 'a/b', '', 5]) assert.equal((await rejected(sessions.load(bad))).code, 'INVALID_ARGUMENT');
      for (const bad of [{ revision: 0, state: '{}' }, { revision: 1.5, state: '{}' }, { revision: 1, state: {} }, null]) {
        assert.equal((await rejected(sessions.save('x', bad))).code, 'INVALID_ARGUMENT');
      }
      const state = 'é\n{"any":"text"}\n';
      await sessions.save('x', { revision: 1, state });
      assert.deepEqual(await sessions.load('x'), { revision: 1, state });
      assert.equal((await rejected(sessions.save('x', { revision: 3, state }))).code, 'CONFLICT');
      assert.equal((await rejected(sessions.save('x', { revision: 1, state }))).code, 'CONFLICT');
    }
  });
  assert.equal((await rejected(new AutoContextMemory().save({}))).code, 'INVALID_ARGUMENT');
  // The revision travels in toJSON(): a state restored with fromJSON saves as the next one.
  const sessions = new MemorySessionStore();
  const m = new AutoContextMemory({ sessionId: 'j' });
  assert.equal(m.toJSON().revision, undefined);
  await m.save(sessions);
  assert.equal(m.toJSON().revision, 1);
  const again = AutoContextMemory.fromJSON(JSON.stringify(m.toJSON()));
  assert.equal(again.revision, 1);
  assert.equal(await again.save(sessions), 2);
  // A state saved under another session id is not this session's.
  await sessions.save('other', { revision: 1, state: JSON.stringify(m.toJSON()) });
  assert.equal((await rejected(AutoContextMemory.load(sessions, 'other'))).code, 'INVALID_STATE');
});

test('FsSessionStore: racing saves never both win a revision; a lock of a dead process is broken', () =>
  withDir(async (dir) => {
    const sessions = new FsSessionStore(dir, { lockTimeoutMs: 20_000 });
    // Many saves racing for the same revisions: each revision is won exactly once.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 24 }, async (_, k) => {
        const revision = 1 + (k % 6);
        await sessions.save('race', { revision, state: `by ${k}` });
        return revision;
      }),
    );
    for (const r of outcomes) if (r.status === 'rejected') assert.ok(['CONFLICT'].includes(r.reason.code), String(r.reason));
    const won = outcomes.filter((r) => r.status === 'fulfilled').map((r) => r.value);
    assert.deepEqual([...new Set(won)].length, won.length, 'no revision saved twice');
    // A lock file left by a process that no longer runs does not block the session.
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((done) => gone.on('exit', done));
    await writeFile(join(dir, 'dead.lock'), `${gone.pid} ${(await import('node:os')).hostname()} ${Date.now()}\n`);
    await sessions.save('dead', { revision: 1, state: 'ok' });
    assert.deepEqual(await sessions.load('dead'), { revision: 1, state: 'ok' });
    // A lock held by a live process makes a save wait, then fail with STORE_FAILED naming it.
    await writeFile(join(dir, 'held.lock'), `${process.pid} ${(await import('node:os')).hostname()} ${Date.now()}\n`);
    const e = await rejected(new FsSessionStore(dir, { lockTimeoutMs: 50 }).save('held', { revision: 1, state: 'x' }));
    assert.equal(e.code, 'STORE_FAILED');
    assert.match(e.message, /held\.lock/);
  }));

test('FsStore.sweep removes the temporary files a killed write left, not live ones, not keys', () =>
  withDir(async (dir) => {
    const store = new FsStore(dir);
    await store.put('s/k', 'value');
    await store.put('t/k', 'value');
    await writeFile(join(dir, 's', 'k~0123abcd.tmp'), 'partial');
    await writeFile(join(dir, 't', 'k~4567abcd.tmp'), 'partial');
    assert.deepEqual(await store.sweep('s/'), ['s/k~0123abcd.tmp']);
    assert.deepEqual(await files(dir), ['s/k', 't/k', 't/k~4567abcd.tmp'], 'other sessions and keys untouched');
    assert.deepEqual(await store.sweep(), ['t/k~4567abcd.tmp']);
    assert.deepEqual(await store.keys(), ['s/k', 't/k']);
  }));

test('killed at 20 points, most random and every fifth just after a pass, a session restarts from its last save: it loads, nothing is lost, sweep() leaves no orphan and no temporary file', () =>
  withDir(async (dir) => {
    const writer = join(fileURLToPath(new URL('.', import.meta.url)), 'session-writer.mjs');
    let random = 0x2545f491;
    const next = () => ((random = (random * 1103515245 + 12345) >>> 0) % 1000) / 1000;
    let acknowledged = { revision: 0, messages: 0 };
    let orphans = 0;
    let temporary = 0;
    for (let kill = 0; kill < 20; kill++) {
      // Every fifth run stops after a pass that offloaded and before its save: certain orphans.
      const hold = kill % 5 === 4;
      const child = spawn(process.execPath, [writer, dir, ...(hold ? ['hold'] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      const exited = new Promise((done) => child.on('exit', (code, signal) => done({ code, signal })));
      // Wait for its first save (so each run makes progress), then kill it at a random moment.
      const started = Date.now();
      while (!out.includes('\n') && Date.now() - started < 60_000 && child.exitCode === null) await new Promise((r) => setTimeout(r, 5));
      if (hold) {
        while (!out.includes('held\n') && Date.now() - started < 60_000 && child.exitCode === null) await new Promise((r) => setTimeout(r, 5));
        assert.ok(out.includes('held\n'), `run ${kill} never held: ${err}`);
      } else await new Promise((r) => setTimeout(r, 5 + next() * 250));
      child.kill('SIGKILL');
      const { signal } = await exited;
      assert.equal(signal, 'SIGKILL', `the writer died on its own: ${err}`);
      const lines = out.trim().split('\n').filter((l) => l && l !== 'held');
      const [revision, messages] = lines[lines.length - 1].split(' ').map(Number);
      assert.ok(revision > acknowledged.revision, `run ${kill} saved (${lines.length} saves)`);
      acknowledged = { revision, messages };
      // Restart from the last save: it loads, at the acknowledged revision or the one after it
      // (killed between its save and its report), holding every message acknowledged.
      const store = new FsStore(join(dir, 'offloads'));
      const memory = await AutoContextMemory.load(new FsSessionStore(join(dir, 'sessions')), 's', { store });
      assert.ok(memory !== null);
      assert.ok(memory.revision === revision || memory.revision === revision + 1, `${memory.revision} vs ${revision}`);
      assert.ok((await memory.originalMessages()).length >= messages);
      await assertRecoverable(memory);
      // What the kill left: temporary files, and keys no saved state names (a pass's offloads, a
      // log chunk, a save's pages). The sweep saves a revision as its fence, then removes them.
      const before = await store.keys('s/');
      const swept = await memory.sweep({ sessions: new FsSessionStore(join(dir, 'sessions')) });
      assert.equal(swept.revision, memory.revision);
      orphans += swept.orphans.length;
      if (hold) assert.ok(swept.orphans.length > 0, `run ${kill} held after a pass and left no orphan`);
      temporary += swept.temporary.length;
      const reached = await reachedKeys(new FsSessionStore(join(dir, 'sessions')), store, 's');
      const after = await store.keys('s/');
      assert.deepEqual(after.filter((k) => !reached.has(k)), [], `run ${kill}: orphans left`);
      assert.deepEqual([...reached].filter((k) => !after.includes(k)), [], `run ${kill}: reached keys deleted`);
      assert.deepEqual(swept.orphans.filter((k) => !before.includes(k) || reached.has(k)), []);
      assert.deepEqual((await files(join(dir, 'offloads'))).filter((f) => f.endsWith('.tmp')), []);
      // And it still loads whole.
      const again = await AutoContextMemory.load(new FsSessionStore(join(dir, 'sessions')), 's', { store });
      assert.ok((await again.originalMessages()).length >= messages);
      await assertRecoverable(again);
    }
    assert.ok(acknowledged.messages > 20 * 6, `${acknowledged.messages} messages`);
    // The kills left something to sweep (so the checks above could fail): the held runs made sure.
    assert.ok(orphans >= 4, `${orphans} orphans, ${temporary} temporary files swept`);
    // The next save of the session removes what a killed save left in the sessions directory
    // (the temporary file of a lock being taken is left over once it is a second old).
    await new Promise((r) => setTimeout(r, 1_100));
    const store = new FsStore(join(dir, 'offloads'));
    const sessions = new FsSessionStore(join(dir, 'sessions'));
    const memory = await AutoContextMemory.load(sessions, 's', { store });
    await memory.save(sessions);
    assert.deepEqual(await files(join(dir, 'sessions')), ['s.session']);
  }));

test('sweep(): pending deletes survive toJSON/fromJSON and are the only keys it deletes; fs temporary files go too', () =>
  withDir(async (dir) => {
    const fs = new FsStore(dir);
    let puts = 0;
    let failing = true;
    // The second put of a pass fails, and so does every delete while `failing`.
    const store = {
      get: (k) => fs.get(k),
      put: async (k, v) => {
        puts += 1;
        if (failing && puts === 2) throw new Error('disk full');
        return fs.put(k, v);
      },
      delete: async (k) => {
        if (failing) throw new Error('disk gone');
        return fs.delete(k);
      },
      sweep: (prefix) => fs.sweep(prefix),
    };
    // Another writer's live offload and a killed write's temporary file, in the same session.
    const foreign = 'sw/0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a';
    await fs.put(foreign, 'the other writer');
    await writeFile(join(dir, 'sw', '0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2b~0123abcd.tmp'), 'partial');
    const memory = new AutoContextMemory({ sessionId: 'sw', maxToken: 4_000, toolResultLimit: 2_000, store });
    memory.add([...round(1, { calls: 2, resultChars: 9_000 }), { role: 'user', content: 'next' }]);
    assert.equal((await rejected(memory.compressIfNeeded())).code, 'STORE_FAILED');
    const state = memory.toJSON();
    // Both puts are pending: the one that landed, and the one that failed (a failed put may
    // still have landed); their deletes failed, so they are in the state.
    assert.equal(state.pending.length, 2, JSON.stringify(state.pending));
    const restored = AutoContextMemory.fromJSON(JSON.stringify(state), { store });
    assert.deepEqual(restored.toJSON().pending, state.pending);
    const still = await restored.sweep();
    assert.deepEqual(still.deleted, []);
    assert.deepEqual(still.pending, state.pending.map((u) => `sw/${u}`));
    assert.deepEqual(still.temporary, ['sw/0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2b~0123abcd.tmp']);
    failing = false;
    const done = await restored.sweep();
    assert.deepEqual(done.deleted, state.pending.map((u) => `sw/${u}`));
    assert.deepEqual(done.pending, []);
    assert.equal(restored.toJSON().pending, undefined);
    assert.deepEqual(await fs.keys('sw/'), [foreign], "only what this session abandoned; the other writer's offload stays");
    assert.deepEqual(await files(dir), [foreign]);
  }));

test('sweep({ sessions }): a fenced-out writer\'s keys go; a writer on the fence\'s revision, adding the same turn mid-sweep, keeps everything', async () => {
  const sessions = new MemorySessionStore();
  const store = new MemoryStore();
  let midSweep = null;
  // The store calls midSweep (once) at the sweep's first delete, before deleting anything.
  const hooked = {
    get: (k) => store.get(k),
    put: (k, v) => store.put(k, v),
    keys: (p) => store.keys(p),
    delete: async (k) => {
      const run = midSweep;
      midSweep = null;
      if (run !== null) await run();
      return store.delete(k);
    },
  };
  const host = { store: hooked };
  const first = new AutoContextMemory({ sessionId: 'fence', maxToken: 6_000, ...host });
  for (let n = 0; n < 6; n++) {
    first.add(round(n, { calls: 2, resultChars: 2_000 }));
    await first.compressIfNeeded();
  }
  await first.save(sessions);
  const sweeper = await AutoContextMemory.load(sessions, 'fence', host);
  const stale = await AutoContextMemory.load(sessions, 'fence', host);
  // The stale writer's turn: offloads and a log chunk, never saved.
  const turn = [...round(6, { calls: 2, resultChars: 9_000 }), ...round(7, { calls: 2, resultChars: 9_000 })];
  stale.add(turn);
  assert.ok((await stale.compressIfNeeded()).events.length > 0);
  await stale.flush();
  const staleKeys = new Set(await store.keys('fence/'));
  // A writer that loads the fence's revision while the sweep deletes, and adds the same turn.
  let late = null;
  midSweep = async () => {
    late = await AutoContextMemory.load(sessions, 'fence', host);
    late.add(turn);
    await late.compressIfNeeded();
    await late.save(sessions);
  };
  const swept = await sweeper.sweep({ sessions });
  assert.ok(late !== null, 'the late writer ran during the sweep');
  assert.equal(swept.revision, 2);
  assert.ok(swept.orphans.length >= 3, `${swept.orphans.length} orphans`);
  for (const k of swept.orphans) assert.ok(staleKeys.has(k), `${k} was listed before the fence`);
  assert.ok(swept.orphans.some((k) => /\/log-/.test(k)) && swept.orphans.some((k) => /\/[0-9a-f]{8}-/.test(k)), 'its log chunk and its offloads');
  // The stale writer cannot save what the sweep deleted.
  assert.equal((await rejected(stale.save(sessions))).code, 'CONFLICT');
  // The late writer's session is whole: every original, every offload.
  const loaded = await AutoContextMemory.load(sessions, 'fence', host);
  assert.equal(loaded.revision, 3);
  const originals = await loaded.originalMessages();
  assert.equal(originals.length, 6 * 5 + turn.length);
  assert.deepEqual(originals.slice(-turn.length), turn);
  await assertRecoverable(loaded);
  const reached = await reachedKeys(sessions, store, 'fence');
  assert.deepEqual([...reached].filter((k) => !store.keys('fence/').includes(k)), []);
});

test('sweep({ sessions }) checks its store, refuses a stale memory, and passes wait for it', async () => {
  const sessions = new MemorySessionStore();
  const plain = { get: async () => null, put: async () => {}, delete: async () => {} };
  const m = new AutoContextMemory({ sessionId: 'checks', maxToken: 6_000, store: plain });
  assert.equal((await rejected(m.sweep({ sessions }))).code, 'INVALID_ARGUMENT');
  assert.equal((await rejected(m.sweep(7))).code, 'INVALID_ARGUMENT');
  assert.equal((await rejected(m.sweep({ sessions: {} }))).code, 'INVALID_ARGUMENT');
  assert.deepEqual((await m.sweep()).orphans, [], 'without sessions, no listing');
  const odd = new AutoContextMemory({ sessionId: 'checks', maxToken: 6_000, store: { ...plain, keys: async () => 'k' } });
  const e = await rejected(odd.sweep({ sessions }));
  assert.equal(e.code, 'STORE_FAILED');
  assert.match(e.message, /array of strings/);
  assert.equal(odd.revision, 0, 'refused before the fence: nothing saved');
  const store = new MemoryStore();
  const a = new AutoContextMemory({ sessionId: 'checks', maxToken: 6_000, store });
  a.add(round(1, { calls: 2, resultChars: 9_000 }));
  await a.save(sessions);
  const b = await AutoContextMemory.load(sessions, 'checks', { store });
  await a.save(sessions);
  const before = await store.keys('checks/');
  assert.equal((await rejected(b.sweep({ sessions }))).code, 'CONFLICT');
  assert.deepEqual(await store.keys('checks/'), before, 'a stale sweep deletes nothing');
  // A pass asked for during a sweep runs after it, on the saved state.
  a.add(round(2, { calls: 2, resultChars: 9_000 }));
  const sweep = a.sweep({ sessions });
  assert.equal((await rejected(a.save(sessions))).code, 'LIMIT_EXCEEDED');
  const pass = a.compressIfNeeded();
  const [report, result] = await Promise.all([sweep, pass]);
  assert.equal(report.revision, 3);
  assert.ok(result.events.length > 0);
  assert.equal(await a.save(sessions), 4);
});
