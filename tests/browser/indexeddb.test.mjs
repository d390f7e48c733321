// Headless Chromium against the installed package: a page imports the web build by package name,
// compresses a conversation into IndexedDB, keeps toJSON() in localStorage, is reloaded, restores
// the memory with fromJSON and reloads the offload from IndexedDB byte-exact. Also: several
// memories on one store, the store's own contract, and quota errors.
//
// AUTOCONTEXT_PACKAGE_DIR names the installed package (node_modules/autocontext of a throwaway
// app that installed the packed tarball); scripts/test-browser.sh sets it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch, packageImportMap, serve } from './chromium.mjs';
import { call, markers, text } from '../js/helpers.mjs';
import { checkFencedSweep } from '../contract/fenced-sweep.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = process.env.AUTOCONTEXT_PACKAGE_DIR;
assert.ok(packageDir && existsSync(join(packageDir, 'package.json')), 'AUTOCONTEXT_PACKAGE_DIR must name the installed package');

const UNICODE = ' naïve café ☃ 日本語 𝄞 👩🏽‍💻 שלום \u2028 "quoted" \\ back\\slash <tag> &amp;';

/** A round whose tool result is large enough to be truncated and offloaded. */
function conversation(seed, chars = 30_000) {
  return [
    { role: 'system', content: 'You are a careful agent.' },
    { role: 'user', content: `Read log ${seed}.${UNICODE}` },
    { role: 'assistant', content: null, tool_calls: [call(`log${seed}`, 'read_log', { file: `log-${seed}.txt` })] },
    { role: 'tool', tool_call_id: `log${seed}`, content: text(chars, seed) + UNICODE + text(2_000, seed + 1), vendor_field: { kept: [1, 'two', null] } },
  ];
}

let server;
let browser;
let page;

before(async () => {
  server = await serve(
    { '/pkg/': packageDir, '/contract/': join(here, '..', 'contract'), '/': here },
    { importMap: packageImportMap(packageDir, '/pkg/') },
  );
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Loads (or reloads) the page and waits until its module has run. */
async function ready(load) {
  await load();
  await page.waitForFunction(() => window.harness !== undefined, null, { timeout: 60_000 });
  return page.evaluate(() => window.harness.coldStart);
}

test('the page imports the package by name: the web build, its wasm served as application/wasm', async (t) => {
  const cold = await ready(async () => {
    page = await browser.open(`${server.url}/page.html`);
  });
  for (const k of ['moduleMs', 'firstCountMs', 'totalMs']) assert.ok(Number.isFinite(cold[k]) && cold[k] >= 0, k);
  t.diagnostic(`cold start (first load): module load + init ${cold.moduleMs.toFixed(0)} ms, first count ${cold.firstCountMs.toFixed(0)} ms, total ${cold.totalMs.toFixed(0)} ms`);
  assert.ok(server.requests.includes('/pkg/dist/entrypoints/web.js'), 'the browser condition: the web entry');
  assert.ok(server.requests.includes('/pkg/dist/wasm/autocontext_bg.wasm'));
  assert.ok(server.requests.includes('/pkg/dist/stores/indexeddb.js'));
  assert.ok(!server.requests.some((r) => /entrypoints\/(node|workerd)\.js|stores\/fs\.js/.test(r)), server.requests.join(' '));
  assert.deepEqual(browser.errors, []);
});

test('compress into IndexedDB, reload the page, restore from localStorage, reload the offload byte-exact', async (t) => {
  const sessionId = 'chat-reload';
  const sent = conversation(1);
  const before = await page.evaluate((args) => window.harness.compress(args), { conversation: sent, sessionId, maxToken: 4_000 });
  assert.equal(before.result.compressed, true);
  const uuids = markers(JSON.stringify(before.messages));
  assert.equal(uuids.length, 1, 'one offload marker in the working list');
  assert.deepEqual(before.keys, [`${sessionId}/${uuids[0]}`], 'keys are <sessionId>/<uuid>');

  const cold = await ready(() => page.reload());
  t.diagnostic(`after reload: module load + init ${cold.moduleMs.toFixed(0)} ms, first count ${cold.firstCountMs.toFixed(0)} ms`);
  const after = await page.evaluate((args) => window.harness.restore(args), { sessionId });
  assert.equal(after.navigation, 'reload');
  assert.equal(after.survivedJsState, false, 'a fresh page: nothing survived in JavaScript memory');
  assert.deepEqual(after.messages, before.messages, 'fromJSON restores the working list');
  assert.deepEqual(after.uuids, uuids);
  const { originals, text: reloadedText } = after.reloaded[uuids[0]];
  assert.deepEqual(originals, [sent[3]], 'the offloaded tool result, as it was added');
  assert.equal(reloadedText, JSON.stringify([sent[3]]), 'byte-exact, unicode and unknown fields included');
  assert.deepEqual(after.raw, before.raw, 'IndexedDB holds the same value before and after the reload');
  assert.ok(after.toolAnswer.includes(sent[3].content.slice(-200)), 'context_reload through the model answers with the original');
  assert.deepEqual(browser.errors, []);
});

test('several memories share one store: concurrent passes, each session sees its own keys', async () => {
  const out = await page.evaluate((args) => window.harness.share(args), {
    conversations: { alpha: conversation(2), beta: conversation(3), gamma: conversation(4, 20_000) },
    maxToken: 4_000,
    databaseName: 'autocontext-shared',
  });
  assert.deepEqual(out.compressed, [true, true, true]);
  const expected = { alpha: conversation(2)[3], beta: conversation(3)[3], gamma: conversation(4, 20_000)[3] };
  const all = [];
  for (const [sessionId, s] of Object.entries(out.sessions)) {
    assert.equal(s.uuids.length, 1, sessionId);
    assert.deepEqual(s.keys, [`${sessionId}/${s.uuids[0]}`], `${sessionId} sees only its own key`);
    assert.deepEqual(s.reloaded, [[expected[sessionId]]], `${sessionId} reloads its own original`);
    all.push(...s.keys);
  }
  assert.deepEqual(out.allKeys, all.sort(), 'one object store holds every session');
  assert.deepEqual(out.storeNames, ['offloads', 'other'], 'a second store name adds an object store to the same database');
  assert.deepEqual(out.otherKeys, ['other/one']);
  assert.equal(out.otherValue, 'in the second object store');
  assert.equal(out.crossRead, null, 'object stores do not see each other');
});

test('store behaviour: missing is null, overwrite, clear by prefix, typed errors, close and reopen', async () => {
  const out = await page.evaluate((args) => window.harness.basics(args), { databaseName: 'autocontext-basics' });
  assert.equal(out.missing, null);
  assert.equal(out.deleteMissing.ok, true, 'deleting a missing key is fine');
  assert.equal(out.overwritten, 'second');
  assert.equal(out.empty, '', 'an empty value is a value');
  assert.equal(out.afterDelete, null);
  assert.deepEqual(out.keysS, ['s/b', 's/empty']);
  assert.deepEqual(out.keysAfterClear, ['s2/c'], 'clear removes only the prefix');
  for (const r of out.badKeys) {
    assert.equal(r.ok, false, `${r.op}(${r.key}) must fail`);
    assert.equal(r.error.isAutoContextError, true);
    assert.equal(r.error.code, 'INVALID_ARGUMENT', `${r.op}(${r.key}): ${r.error.message}`);
    assert.equal(r.error.field, 'key');
  }
  for (const r of out.badValues) assert.deepEqual([r.ok, r.error.code, r.error.field], [false, 'INVALID_ARGUMENT', 'value']);
  for (const r of out.badOptions) assert.deepEqual([r.ok, r.error.code], [false, 'INVALID_CONFIG'], r.error?.message);
  assert.equal(out.deleteDatabase, 'deleted', 'close() released the connection');
  assert.equal(out.afterReopen, null, 'the store reopened a fresh database');
  assert.equal(out.afterReopenPut, 'again');
  assert.equal(out.deleteWhileOpen, 'deleted', 'an open store does not block deleting the database');
  assert.equal(out.afterForeignDelete, null);
});

test('the shared store contract, in the page', async (t) => {
  const results = await page.evaluate((args) => window.harness.contract(args), { databaseName: 'autocontext-contract' });
  assert.ok(results.length >= 7, 'every case ran');
  for (const { name, ok, error } of results) {
    await t.test(`IndexedDBStore: ${name}`, () => assert.ok(ok, error));
  }
});

test('over quota: STORE_FAILED with the QuotaExceededError as cause; a pass fails and changes nothing', async () => {
  // A fresh origin (another port), so its quota is set before it ever stored anything.
  const other = await serve({ '/pkg/': packageDir, '/': here }, { importMap: packageImportMap(packageDir, '/pkg/') });
  const cdp = await browser.context.newCDPSession(page);
  const origin = new URL(other.url).origin;
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 1024 * 1024 });
  try {
    await ready(() => page.goto(`${other.url}/page.html`));
    const out = await page.evaluate((args) => window.harness.overQuota(args), {
      databaseName: 'autocontext-quota',
      chars: 3 * 1024 * 1024,
      conversation: conversation(5, 100),
      maxToken: 4_000,
    });
    assert.equal(out.direct.ok, false);
    assert.equal(out.direct.error.isAutoContextError, true);
    assert.equal(out.direct.error.code, 'STORE_FAILED');
    assert.equal(out.direct.error.cause?.name, 'QuotaExceededError', JSON.stringify(out.direct.error));
    assert.equal(out.direct.error.cause?.isDOMException, true);
    assert.match(out.direct.error.message, /quota/i);
    assert.equal(out.pass.ok, false, 'the pass could not offload');
    assert.equal(out.pass.error.code, 'STORE_FAILED');
    assert.equal(out.unchanged, true, 'the working list is as it was');
    assert.equal(out.events, 0, 'no phantom events');
    assert.equal(out.small.ok, true, 'a small write still fits');
    // The log's chunk, written after the failed pass, is the session's own, not an orphan.
    assert.deepEqual(out.keys.filter((k) => !k.includes('/log-')), ['q/small'], 'no orphan offloads');
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    await cdp.detach();
    await other.close();
  }
});

test('two tabs on one saved session (IndexedDBSessionStore): the stale save refused, nothing lost', async () => {
  // Two tabs of the same browser on the test page: same origin, same IndexedDB.
  await ready(() => page.goto(`${server.url}/page.html`));
  const other = await browser.context.newPage();
  try {
    await other.goto(`${server.url}/page.html`);
    await other.waitForFunction(() => window.harness !== undefined, null, { timeout: 60_000 });
    const args = { databaseName: 'autocontext-sessions', sessionId: 'tabs', maxToken: 4_000 };
    const a = await page.evaluate((x) => window.harness.sessionTurn(x), { ...args, first: conversation(10), messages: conversation(11).slice(1) });
    const b = await other.evaluate((x) => window.harness.sessionTurn(x), { ...args, messages: conversation(12).slice(1) });
    assert.equal(a.loaded, 1);
    assert.equal(b.loaded, 1, 'both tabs restored revision 1');
    const [sa, sb] = await Promise.all([page.evaluate(() => window.harness.sessionSave()), other.evaluate(() => window.harness.sessionSave())]);
    const outcomes = [sa, sb];
    assert.equal(outcomes.filter((o) => o.ok).length, 1, JSON.stringify(outcomes.map((o) => o.error ?? o.value.revision)));
    const refused = outcomes.find((o) => !o.ok).error;
    assert.equal(refused.code, 'CONFLICT');
    assert.ok(refused.isAutoContextError);
    const winner = outcomes.find((o) => o.ok).value;
    assert.equal(winner.revision, 2);
    const saved = await page.evaluate((x) => window.harness.sessionCheck(x), args);
    assert.equal(saved.revision, 2);
    assert.deepEqual(saved.originals, winner.originals, "the saved session is the winning tab's, whole");
    assert.ok(saved.offloads > 0 && saved.reloaded.every((n) => n > 0), JSON.stringify(saved));
    assert.deepEqual(browser.errors, []);
  } finally {
    await other.close();
  }
});

test("IndexedDBSessionStore: sweep({ sessions }) deletes exactly a fenced-out writer's keys; the saved session stays whole", async () => {
  await ready(() => page.goto(`${server.url}/page.html`));
  checkFencedSweep(await page.evaluate((x) => window.harness.sweepFenced(x), { databaseName: 'autocontext-sweep', sessionId: 'sweep' }));
  assert.deepEqual(browser.errors, []);
});
