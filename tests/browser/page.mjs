// The browser test page. It imports the installed package by name (the import map points
// `autocontext` at the web build) and exposes `window.harness`, whose functions the Node test
// calls with page.evaluate. They return plain data; the assertions are on the Node side.

const t0 = performance.now();
const autocontext = await import('autocontext'); // module load + WebAssembly compile and init
const t1 = performance.now();
autocontext.countTokens('hello world'); // the first count loads the o200k vocabulary
const t2 = performance.now();
const { IndexedDBSessionStore, IndexedDBStore } = await import('autocontext/stores/indexeddb');
const { AutoContextMemory, AutoContextError, isAutoContextError } = autocontext;

const MARKER = /<!-- CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36}) -->/g;
const markers = (s) => [...String(s).matchAll(MARKER)].map((m) => m[1]);
const stateKey = (sessionId) => `autocontext-test:${sessionId}`;

/** What a thrown value looks like, as data. */
function described(e) {
  const cause = e?.cause;
  return {
    isAutoContextError: e instanceof AutoContextError && isAutoContextError(e),
    name: e?.name,
    code: e?.code,
    field: e?.field,
    message: String(e?.message ?? e),
    cause:
      cause === undefined
        ? undefined
        : { name: cause?.name, message: String(cause?.message ?? cause), isDOMException: cause instanceof DOMException },
  };
}

async function outcome(fn) {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    return { ok: false, error: described(e) };
  }
}

/** Compresses a conversation into an IndexedDB-backed memory and keeps its state in localStorage. */
async function compress({ conversation, sessionId, maxToken, store: storeOptions }) {
  const store = new IndexedDBStore(storeOptions);
  const memory = new AutoContextMemory({ maxToken, store, sessionId });
  memory.add(conversation);
  const result = await memory.compressIfNeeded();
  localStorage.setItem(stateKey(sessionId), JSON.stringify(memory.toJSON()));
  const keys = await store.keys(`${sessionId}/`);
  const raw = {};
  for (const key of keys) raw[key] = await store.get(key);
  store.close();
  window.beforeReload = true; // gone after a real reload
  return { result, messages: memory.messages(), keys, raw };
}

/** After the reload: restores the memory from localStorage and reloads its offloads from IndexedDB. */
async function restore({ sessionId, store: storeOptions }) {
  const navigation = performance.getEntriesByType('navigation')[0]?.type;
  const state = localStorage.getItem(stateKey(sessionId));
  const store = new IndexedDBStore(storeOptions);
  const memory = AutoContextMemory.fromJSON(state, { store });
  const messages = memory.messages();
  const uuids = markers(JSON.stringify(messages));
  const reloaded = {};
  const raw = {};
  for (const uuid of uuids) {
    const originals = await memory.reload(uuid);
    reloaded[uuid] = { originals, text: JSON.stringify(originals) };
    raw[`${sessionId}/${uuid}`] = await store.get(`${sessionId}/${uuid}`);
  }
  // The context_reload answer comes in pages when it is long; the model follows each page's note.
  let toolAnswer = null;
  if (uuids.length) {
    toolAnswer = '';
    for (let page = 1, pages = 1; page <= pages; page++) {
      const args = page === 1 ? { working_context_offload_uuid: uuids[0] } : { working_context_offload_uuid: uuids[0], page };
      const answer = await memory.handleReloadCall({ id: `r${page}`, type: 'function', function: { name: 'context_reload', arguments: JSON.stringify(args) } });
      const header = answer.match(/^Original content of offload [0-9a-f-]{36} \(\d+ messages?\)(?:, page \d+ of (\d+))?:\n/);
      if (!header) throw new Error(`unexpected context_reload answer: ${answer.slice(0, 120)}`);
      let body = answer.slice(header[0].length);
      if (header[1] !== undefined) {
        pages = Number(header[1]);
        const note = body.lastIndexOf('\n[Page ');
        if (note >= 0) body = body.slice(0, note);
      }
      toolAnswer += body;
    }
  }
  store.close();
  return { navigation, survivedJsState: window.beforeReload === true, messages, uuids, reloaded, raw, toolAnswer };
}

/** Several memories on one store at once, plus a second object store in the same database. */
async function share({ conversations, maxToken, databaseName }) {
  const store = new IndexedDBStore({ databaseName, storeName: 'offloads' });
  const other = new IndexedDBStore({ databaseName, storeName: 'other' });
  const memories = Object.entries(conversations).map(([sessionId, conversation]) => {
    const memory = new AutoContextMemory({ maxToken, store, sessionId });
    memory.add(conversation);
    return memory;
  });
  const results = await Promise.all(memories.map((m) => m.compressIfNeeded()));
  await other.put('other/one', 'in the second object store');
  const sessions = {};
  for (const memory of memories) {
    const uuids = markers(JSON.stringify(memory.messages()));
    const reloaded = [];
    for (const uuid of uuids) reloaded.push(await memory.reload(uuid));
    sessions[memory.sessionId] = { keys: await store.keys(`${memory.sessionId}/`), uuids, reloaded };
  }
  const out = {
    compressed: results.map((r) => r.compressed),
    sessions,
    allKeys: await store.keys(),
    otherKeys: await other.keys(),
    otherValue: await other.get('other/one'),
    crossRead: await store.get('other/one'),
    storeNames: await new Promise((ok, fail) => {
      const request = indexedDB.open(databaseName);
      request.onsuccess = () => {
        ok([...request.result.objectStoreNames].sort());
        request.result.close();
      };
      request.onerror = () => fail(request.error);
    }),
  };
  store.close();
  other.close();
  return out;
}

/** The store's own behaviour: missing keys, deletes, bad input, close and reopen. */
async function basics({ databaseName }) {
  const store = new IndexedDBStore({ databaseName });
  const out = {};
  out.missing = await store.get('s/absent');
  out.deleteMissing = await outcome(() => store.delete('s/absent'));
  await store.put('s/a', 'first');
  await store.put('s/a', 'second');
  await store.put('s/empty', '');
  out.overwritten = await store.get('s/a');
  out.empty = await store.get('s/empty');
  await store.delete('s/a');
  out.afterDelete = await store.get('s/a');
  await store.put('s/b', 'kept');
  await store.put('s2/c', 'other session');
  out.keysS = await store.keys('s/');
  await store.clear('s/');
  out.keysAfterClear = await store.keys();
  const badKeys = ['', 'no-slash', '/leading', 'trailing/', 42, null, undefined, {}, 'x/' + 'k'.repeat(2000)];
  out.badKeys = [];
  for (const key of badKeys) {
    for (const op of ['get', 'put', 'delete']) {
      const r = await outcome(() => (op === 'put' ? store.put(key, 'v') : store[op](key)));
      out.badKeys.push({ key: typeof key === 'string' ? key.slice(0, 20) : String(key), op, ...r });
    }
  }
  out.badValues = [];
  for (const value of [42, null, undefined, { text: 'x' }]) out.badValues.push(await outcome(() => store.put('s/v', value)));
  out.badOptions = [];
  for (const options of [{ databaseName: '' }, { storeName: 7 }, { durability: 'eventual' }, { indexedDB: {} }]) {
    out.badOptions.push(await outcome(() => new IndexedDBStore(options)));
  }
  // close() lets the database be deleted (no "blocked"); the store reopens on its next use.
  store.close();
  out.deleteDatabase = await new Promise((ok) => {
    const request = indexedDB.deleteDatabase(databaseName);
    request.onsuccess = () => ok('deleted');
    request.onblocked = () => ok('blocked');
    request.onerror = () => ok('error');
  });
  out.afterReopen = await store.get('s2/c');
  await store.put('s2/c', 'again');
  out.afterReopenPut = await store.get('s2/c');
  // Another connection deleting the database: the store steps aside instead of blocking it.
  out.deleteWhileOpen = await new Promise((ok) => {
    const request = indexedDB.deleteDatabase(databaseName);
    request.onsuccess = () => ok('deleted');
    request.onblocked = () => ok('blocked');
    request.onerror = () => ok('error');
  });
  out.afterForeignDelete = await store.get('s2/c');
  store.close();
  return out;
}

/** Random words: text IndexedDB cannot compress (it compresses large values before the quota check). */
function noise(chars) {
  const bytes = crypto.getRandomValues(new Uint8Array(Math.min(chars, 65_536)));
  let out = '';
  for (let i = 0; out.length < chars; i++) {
    out += i % 7 === 6 ? ' ' : String.fromCharCode(97 + (bytes[i % bytes.length] ^ (i >> 16 & 0xff)) % 26);
  }
  return out;
}

/**
 * Writes `chars` characters of noise; with the origin's quota lowered, IndexedDB refuses. Then a
 * pass whose offload is that large.
 */
async function overQuota({ databaseName, chars, conversation, maxToken }) {
  const store = new IndexedDBStore({ databaseName });
  const direct = await outcome(() => store.put('q/big', noise(chars)));
  const memory = new AutoContextMemory({ maxToken, store, sessionId: 'q', tokenizer: 'estimate' });
  conversation[conversation.length - 1].content = noise(chars);
  memory.add(conversation);
  const before = JSON.stringify(memory.messages());
  const pass = await outcome(() => memory.compressIfNeeded());
  const unchanged = JSON.stringify(memory.messages()) === before;
  const small = await outcome(() => store.put('q/small', 'fits'));
  const keys = await store.keys('q/');
  store.close();
  return { direct, pass, unchanged, small, keys, events: memory.events().length };
}

/** The shared OffloadStore contract (tests/contract), run here against IndexedDBStore. */
async function contract({ databaseName }) {
  const { runStoreContract } = await import('/contract/store-contract.mjs');
  return runStoreContract(() => new IndexedDBStore({ databaseName }), { close: (store) => store.close(), checksKeys: true });
}

/** A tab's turn on a saved session: load it, add a round, compress; the save comes later. */
let turn = null;
async function sessionTurn({ databaseName, sessionId, first, messages, maxToken }) {
  const store = new IndexedDBStore({ databaseName });
  const sessions = new IndexedDBSessionStore({ databaseName });
  if (first) {
    const memory = new AutoContextMemory({ sessionId, maxToken, store });
    memory.add(first);
    await memory.save(sessions);
  }
  const memory = await AutoContextMemory.load(sessions, sessionId, { store });
  memory.add(messages);
  const result = await memory.compressIfNeeded();
  turn = { memory, sessions };
  return { loaded: memory.revision, compressed: result.compressed, originals: (await memory.originalMessages()).length };
}

/** Saves the pending turn: the revision saved, or the error. */
async function sessionSave() {
  const { memory, sessions } = turn;
  return outcome(async () => ({ revision: await memory.save(sessions), originals: (await memory.originalMessages()) }));
}

/** The saved session as a fresh load sees it, with every offload it names reloaded. */
async function sessionCheck({ databaseName, sessionId }) {
  const store = new IndexedDBStore({ databaseName });
  const memory = await AutoContextMemory.load(new IndexedDBSessionStore({ databaseName }), sessionId, { store });
  const reloaded = [];
  for (const o of memory.offloads()) reloaded.push((await memory.reload(o.uuid)).length);
  return { revision: memory.revision, originals: (await memory.originalMessages()), offloads: memory.offloads().length, reloaded };
}

/** The fenced sweep after a stale writer (tests/contract), with both stores in one IndexedDB database. */
async function sweepFenced({ databaseName, sessionId }) {
  const { fencedSweep } = await import('/contract/fenced-sweep.mjs');
  const store = new IndexedDBStore({ databaseName });
  const sessions = new IndexedDBSessionStore({ databaseName });
  try {
    return await fencedSweep(AutoContextMemory, sessions, store, sessionId);
  } finally {
    store.close();
    sessions.close();
  }
}

window.harness = {
  sweepFenced,
  sessionTurn,
  sessionSave,
  sessionCheck,
  coldStart: { moduleMs: t1 - t0, firstCountMs: t2 - t1, totalMs: t2 - t0 },
  compress,
  restore,
  share,
  basics,
  overQuota,
  contract,
};
