// A fenced sweep after a stale writer, for the session stores of every runtime (Node, Deno,
// workerd, a browser page). Plain ESM with no imports, so any runtime can load it: the caller
// passes AutoContextMemory, a session store and an offload store with keys(prefix).
//
//   const out = await fencedSweep(AutoContextMemory, sessions, store, 'sweep');
//   checkFencedSweep(out); // throws an Error saying what differed
//
// `fencedSweep` returns plain data (it crosses page.evaluate and a Durable Object's JSON), so
// the checks can run where the test runner is.

/** The uuid of every offload marker in a text. */
export function markers(s) {
  return [...String(s).matchAll(/<!-- CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36}) -->/g)].map((m) => m[1]);
}

/**
 * The keys of `store` the state saved as `sessionId` reaches, found without the engine: the
 * pages its head names, the offloads of its index, of its working list's markers and of the
 * records retired from the index, and the chunks of its log and retired-index chains.
 */
export async function reachedKeys(sessions, store, sessionId) {
  const head = JSON.parse((await sessions.load(sessionId)).state);
  const out = new Set();
  const page = async (key) => {
    out.add(key);
    return JSON.parse(await store.get(key));
  };
  const offload = (uuid) => out.add(`${sessionId}/${uuid}`);
  for (const key of head.autocontextPages.offloads) for (const record of await page(key)) offload(record.uuid);
  for (const key of head.autocontextPages.working) for (const uuid of markers(JSON.stringify(await page(key)))) offload(uuid);
  for (const key of head.autocontextPages.events) await page(key);
  for (const record of head.retired?.tail ?? []) offload(record.uuid);
  for (const [chain, isIndex] of [[head.log, false], [head.retired, true]]) {
    for (let key = chain?.head ?? null; key !== null; ) {
      const chunk = await page(key);
      if (isIndex) for (const record of chunk.messages) offload(record.uuid);
      key = chunk.prev;
    }
  }
  return out;
}

/** A round of an agent conversation: two tool results of `chars` characters each. */
export function toolRound(n, chars) {
  const calls = [0, 1].map((k) => ({ id: `r${n}c${k}`, type: 'function', function: { name: 'read_file', arguments: `{"path":"m${n}_${k}"}` } }));
  return [
    { role: 'user', content: `Question ${n}` },
    { role: 'assistant', content: null, tool_calls: calls },
    ...calls.map((c, k) => ({ role: 'tool', tool_call_id: c.id, content: `part ${n}.${k} `.repeat(chars / 10) })),
    { role: 'assistant', content: `Answer ${n}.` },
  ];
}

/** Rounds saved at revision 1, and the messages in each. */
const FIRST_ROUNDS = 3;
const ROUND_MESSAGES = 5;

/**
 * A writer saves revision 1 of `sessionId`; two memories load it. The stale one adds a turn big
 * enough to offload, compresses and flushes (keys written, never saved); the other sweeps with
 * `{ sessions }`. Returns what the checks need, as plain data.
 */
export async function fencedSweep(AutoContextMemory, sessions, store, sessionId) {
  const prefix = `${sessionId}/`;
  const host = { store };
  const first = new AutoContextMemory({ sessionId, maxToken: 6_000, ...host });
  for (let n = 0; n < FIRST_ROUNDS; n++) {
    first.add(toolRound(n, 2_000));
    await first.compressIfNeeded();
  }
  const out = { firstRevision: await first.save(sessions) };
  out.atFirst = await store.keys(prefix);
  const sweeper = await AutoContextMemory.load(sessions, sessionId, host);
  const stale = await AutoContextMemory.load(sessions, sessionId, host);
  out.loadedRevisions = [sweeper.revision, stale.revision];
  // The stale writer's turn: offloads and a log chunk, never saved.
  stale.add([...toolRound(10, 9_000), ...toolRound(11, 9_000)]);
  out.staleEvents = (await stale.compressIfNeeded()).events.length;
  await stale.flush();
  const before = new Set(out.atFirst);
  out.written = (await store.keys(prefix)).filter((k) => !before.has(k));
  const report = await sweeper.sweep({ sessions });
  out.sweepRevision = report.revision;
  out.orphans = [...report.orphans].sort();
  out.left = await store.keys(prefix);
  out.present = [];
  for (const k of out.orphans) if ((await store.get(k)) !== null) out.present.push(k);
  try {
    await stale.save(sessions);
    out.staleSave = 'saved';
  } catch (e) {
    out.staleSave = e?.code ?? String(e);
  }
  const loaded = await AutoContextMemory.load(sessions, sessionId, host);
  out.loaded = { revision: loaded.revision, originals: (await loaded.originalMessages()).length, offloads: loaded.offloads().length, reloaded: 0 };
  for (const o of loaded.offloads()) if ((await loaded.reload(o.uuid)).length > 0) out.loaded.reloaded += 1;
  out.reached = [...(await reachedKeys(sessions, store, sessionId))].sort();
  return out;
}

/** Throws unless `fencedSweep` saw the sweep delete exactly the stale writer's keys and keep the saved session whole. */
export function checkFencedSweep(out) {
  const fail = (what) => {
    throw new Error(`${what}: ${JSON.stringify(out)}`);
  };
  const same = (a, b) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
  if (out.firstRevision !== 1 || !same(out.loadedRevisions, [1, 1])) fail('both memories load revision 1');
  if (!(out.staleEvents > 0)) fail('the stale writer compressed');
  if (!out.written.some((k) => /\/log-/.test(k)) || !out.written.some((k) => /\/[0-9a-f]{8}-/.test(k))) fail('the stale writer wrote its log chunk and its offloads');
  if (out.sweepRevision !== 2) fail('the sweep saves revision 2 as its fence');
  if (!same(out.orphans, out.written)) fail("the orphans are exactly the stale writer's keys");
  const left = new Set(out.left);
  if (out.orphans.some((k) => left.has(k)) || out.present.length > 0) fail('the orphans are gone from the store');
  if (out.staleSave !== 'CONFLICT') fail("the stale writer's save is refused with CONFLICT");
  const { revision, originals, offloads, reloaded } = out.loaded;
  if (revision !== 2 || originals !== FIRST_ROUNDS * ROUND_MESSAGES) fail("the sweeper's session loads back whole");
  if (!(offloads > 0) || reloaded !== offloads) fail('every offload of the saved session reloads');
  if (!same(out.left, out.reached)) fail('the keys left under the session are exactly those the saved state reaches');
}
