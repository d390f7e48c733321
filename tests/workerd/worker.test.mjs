// workerd, through miniflare: the example Worker (examples/worker: one conversation per Durable
// Object, offloads in KV), the store contract and the guarantees of every wire format, each
// bundled from the installed package the
// way a Worker build bundles. AUTOCONTEXT_APP names the app the package is installed in, with
// examples/worker and tests/ copied beside it (scripts/test-runtimes.sh prepares it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Miniflare } from 'miniflare';
import { parse as parseToml } from 'smol-toml';
import { bundleWorker, mb, moduleOptions } from './bundle.mjs';
import { checkFencedSweep } from '../contract/fenced-sweep.mjs';

const app = process.env.AUTOCONTEXT_APP;
if (!app) throw new Error('AUTOCONTEXT_APP must name the app the packed package is installed in (see scripts/test-runtimes.sh)');

/** Cloudflare's limit for a Worker on the free plan, compressed. */
const FREE_PLAN_BYTES = 3 * 1024 * 1024;

let work;
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'autocontext-workerd-'));
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

let exampleBundle;
/** The example Worker, bundled once. */
function bundleExample() {
  exampleBundle ??= bundleWorker(join(app, 'examples/worker/src/index.js'), join(work, 'example'));
  return exampleBundle;
}

/** Miniflare options for the example, from its wrangler.toml, with test-sized vars. */
async function exampleOptions(outdir, persist) {
  const config = parseToml(await readFile(join(app, 'examples/worker/wrangler.toml'), 'utf8'));
  const sqlite = new Set((config.migrations ?? []).flatMap((m) => m.new_sqlite_classes ?? []));
  return {
    ...moduleOptions(outdir),
    compatibilityDate: config.compatibility_date,
    compatibilityFlags: config.compatibility_flags ?? [],
    durableObjects: Object.fromEntries(
      config.durable_objects.bindings.map((b) => [b.name, { className: b.class_name, useSQLite: sqlite.has(b.class_name) }]),
    ),
    kvNamespaces: config.kv_namespaces.map((k) => k.binding),
    bindings: { ...config.vars, MAX_TOKEN: '6000' },
    durableObjectsPersist: join(persist, 'do'),
    kvPersist: join(persist, 'kv'),
  };
}

/** Deterministic prose of `chars` characters. */
function text(chars, seed) {
  const words = ['cache', 'linker', 'module', 'kernel', 'index', 'graph', 'flag', 'heap', 'build', 'delta', '日本', 'façade', '𝄞'];
  let out = '';
  for (let i = seed; out.length < chars; i = (i * 31 + 17) % 10007) out += words[i % words.length] + (i % 9 === 0 ? '.\n' : ' ');
  return /[\ud800-\udbff]/.test(out[chars - 1] ?? '') ? out.slice(0, chars - 1) : out.slice(0, chars); // never half a pair
}

/** Round `n` of an agent conversation, as the requests that send it (split mid-round). */
function roundRequests(n) {
  const calls = [0, 1].map((k) => ({ id: `r${n}c${k}`, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/m${n}_${k}.rs` }) } }));
  return [
    [
      { role: 'user', content: `Question ${n}: what do the modules of part ${n} do?` },
      { role: 'assistant', content: null, tool_calls: calls },
    ],
    [
      { role: 'tool', tool_call_id: calls[0].id, content: text(n % 3 === 0 ? 30_000 : 3_000, n * 10) },
      { role: 'tool', tool_call_id: calls[1].id, content: text(2_500, n * 10 + 1) },
      { role: 'assistant', content: `Part ${n} parses its input and builds the graph.` },
    ],
  ];
}

test('the Worker bundle resolves the workerd entry point, carries no IndexedDB or fs code, and fits the free plan', async (t) => {
  const bundle = await bundleExample();
  const ours = bundle.inputs.filter((i) => i.includes('node_modules/autocontext/'));
  assert.ok(ours.some((i) => i.endsWith('dist/entrypoints/workerd.js')), `inputs: ${ours.join(', ')}`);
  assert.ok(!ours.some((i) => /entrypoints\/(web|node)\.js$|stores\/(indexeddb|fs)\.js$/.test(i)), `inputs: ${ours.join(', ')}`);
  assert.ok(ours.some((i) => i.endsWith('dist/stores/cloudflare-kv.js')));
  assert.ok(bundle.files.some((f) => f.name.endsWith('.wasm')), 'the .wasm is a module of its own');
  t.diagnostic(
    `worker bundle: ${bundle.files.map((f) => `${f.name} ${f.bytes} B`).join(', ')}; raw ${mb(bundle.raw)}; ` +
      `gzip -9 ${bundle.gzip9} B, gzip -6 ${bundle.gzip6} B = ${((100 * bundle.gzip6) / FREE_PLAN_BYTES).toFixed(1)}% of the free plan's 3 MiB`,
  );
  if (bundle.gzip6 > FREE_PLAN_BYTES) t.diagnostic('WARNING: the worker bundle is over the free plan limit (3 MiB compressed)');
});

test('the example Worker keeps a conversation in a Durable Object and reloads offloads from KV', async (t) => {
  await bundleExample();
  const options = await exampleOptions(join(work, 'example'), join(work, 'persist'));

  // Cold start: workerd up with the module loaded, then the first request, which counts tokens.
  let started = performance.now();
  let mf = new Miniflare(options);
  try {
    const url = await mf.ready;
    const ready = performance.now();
    const first = await mf.dispatchFetch(new URL('/tokens?text=hello%20world', url));
    assert.deepEqual(await first.json(), { tokens: 2 });
    const firstDone = performance.now();
    const second = await mf.dispatchFetch(new URL(`/tokens?text=${encodeURIComponent(text(2000, 1))}`, url));
    assert.equal(second.status, 200);
    const secondDone = performance.now();
    t.diagnostic(
      `workerd cold start: miniflare ready ${(ready - started).toFixed(0)} ms, first request (module init + first count) ` +
        `${(firstDone - ready).toFixed(0)} ms, second request ${(secondDone - firstDone).toFixed(0)} ms`,
    );

    // A long conversation over many requests: each round is split across two requests, so the
    // memory crosses requests (and a tool exchange crosses requests) through the object.
    const post = async (path, body) => {
      const response = await mf.dispatchFetch(new URL(path, url), { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
      return { status: response.status, body: await response.json() };
    };
    const sent = new Map();
    const results = [];
    for (let n = 1; n <= 12; n++) {
      for (const messages of roundRequests(n)) {
        for (const m of messages) if (m.role === 'tool') sent.set(m.tool_call_id, m);
        const { status, body } = await post('/conversations/chat-1/messages', { messages });
        assert.equal(status, 200, JSON.stringify(body));
        results.push(body);
      }
    }
    const compressedAt = results.filter((r) => r.compressed).length;
    assert.ok(compressedAt > 0, 'some request compressed the conversation');
    const last = results.at(-1);
    assert.ok(last.offloadCount > 0, 'originals were offloaded');
    assert.equal(last.offloads.length, Math.min(last.offloadCount, 8), 'the answer names the newest offloads, at most 8');
    assert.ok(last.tokenCount <= 6000 * 0.75, `under the target: ${last.tokenCount}`);
    t.diagnostic(`${results.length} requests, ${compressedAt} compressed; ${last.offloadCount} offloads; working list ${last.messageCount} messages, ${last.tokenCount} tokens`);

    // Offloads are in the KV namespace, under the prefix and this conversation's session, and
    // so is the log of what was added, in chunks (every save writes one).
    const kv = await mf.getKVNamespace('OFFLOADS');
    const keys = (await kv.list({ prefix: 'offloads/' })).keys.map((k) => k.name);
    const listed = keys.filter((k) => !/\/log-/.test(k));
    assert.equal(listed.length, last.offloadCount);
    const session = listed[0].split('/')[1];
    assert.match(session, /^[0-9a-f]{64}$/, 'the Durable Object id is the session id');
    for (const o of last.offloads) assert.ok(listed.includes(`offloads/${session}/${o.uuid}`), o.uuid);
    const named = new Set(results.flatMap((r) => r.offloads.map((o) => `offloads/${session}/${o.uuid}`)));
    assert.deepEqual(listed.sort(), [...named].sort(), 'every offload was among the newest of some answer');
    const chunks = keys.filter((k) => /\/log-/.test(k));
    assert.ok(chunks.length > 0, 'the log of what was added is in KV');
    for (const k of chunks) assert.match(k, new RegExp(`^offloads/${session}/log-\\d+-`));

    // Restart workerd on the same storage: everything below comes from the object's storage
    // and KV, nothing from a live isolate.
    await mf.dispose();
    started = performance.now();
    mf = new Miniflare(options);
    const url2 = await mf.ready;
    const post2 = async (path, body) => {
      const response = await mf.dispatchFetch(new URL(path, url2), { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
      return { status: response.status, body: await response.json() };
    };
    const working = await (await mf.dispatchFetch(new URL('/conversations/chat-1/messages', url2))).json();
    assert.equal(working.messages.length, last.messageCount, 'the working list survived the restart');
    assert.equal(working.tools[0].function.name, 'context_reload');
    const markers = [...JSON.stringify(working.messages).matchAll(/<!-- CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36}) -->/g)].map((m) => m[1]);
    assert.ok(markers.length > 0, 'the working list names its offloads');

    // The model calls context_reload on every marker it sees, and again on the markers inside
    // what comes back (an offload may hold messages that were themselves shortened), until
    // every original tool result is back, byte-exact.
    const recovered = new Set();
    const queue = [...markers];
    const seen = new Set(queue);
    let calls = 0;
    // One context_reload exchange through the Worker, as the model makes it; the answer comes
    // in pages when it is long, and the model follows each page's note to the next one.
    const reloadThroughWorker = async (uuid) => {
      let text = '';
      for (let page = 1, pages = 1; page <= pages; page++) {
        const args = page === 1 ? { working_context_offload_uuid: uuid } : { working_context_offload_uuid: uuid, page };
        const call = { id: `reload${calls++}`, type: 'function', function: { name: 'context_reload', arguments: JSON.stringify(args) } };
        const asked = await post2('/conversations/chat-1/messages', { messages: [{ role: 'user', content: 'Show me the original.' }, { role: 'assistant', content: null, tool_calls: [call] }] });
        assert.equal(asked.status, 200, JSON.stringify(asked.body));
        const reload = await post2('/conversations/chat-1/reload', call);
        assert.equal(reload.status, 200, JSON.stringify(reload.body));
        const { role, tool_call_id, content } = reload.body.message;
        assert.equal(role, 'tool');
        assert.equal(tool_call_id, call.id);
        const header = content.match(/^Original content of offload ([0-9a-f-]{36}) \(\d+ messages?\)(?:, page (\d+) of (\d+))?:\n/);
        assert.ok(header && header[1] === uuid, content.slice(0, 200));
        if (header[3] !== undefined) {
          assert.equal(Number(header[2]), page);
          pages = Number(header[3]);
        }
        const note = content.lastIndexOf('\n[Page ');
        text += content.slice(header[0].length, header[3] !== undefined && note >= 0 ? note : content.length);
        const answered = await post2('/conversations/chat-1/messages', { messages: [reload.body.message, { role: 'assistant', content: 'Here it is.' }] });
        assert.equal(answered.status, 200, JSON.stringify(answered.body));
      }
      return text;
    };
    while (queue.length > 0) {
      const uuid = queue.shift();
      const answer = await reloadThroughWorker(uuid);

      // The same originals, as messages.
      const originals = await (await mf.dispatchFetch(new URL(`/conversations/chat-1/offloads/${uuid}`, url2))).json();
      assert.ok(originals.messages.length > 0);
      for (const m of originals.messages) {
        const json = JSON.stringify(m);
        if (m.role === 'tool' && json === JSON.stringify(sent.get(m.tool_call_id))) {
          recovered.add(m.tool_call_id);
          assert.ok(answer.includes(m.content), 'the tool messages carry the original content');
        }
        for (const [, inner] of json.matchAll(/<!-- CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36}) -->/g)) {
          if (!seen.has(inner)) queue.push(inner), seen.add(inner);
        }
      }
    }
    const inWorking = new Set(working.messages.filter((m) => m.role === 'tool' && JSON.stringify(m) === JSON.stringify(sent.get(m.tool_call_id))).map((m) => m.tool_call_id));
    const lost = [...sent.keys()].filter((id) => !recovered.has(id) && !inWorking.has(id));
    assert.deepEqual(lost, [], 'every tool result is in the working list unchanged or reloaded byte-exact');
    t.diagnostic(`after a restart: ${calls} context_reload calls through the Worker; ${recovered.size} of ${sent.size} tool results reloaded byte-exact, ${inWorking.size} still in the working list`);

    // Typed errors, as JSON with the stable codes.
    const bad = await post2('/conversations/chat-1/messages', { messages: [{ role: 'robot', content: 'hi' }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'INVALID_MESSAGE');
    const notJson = await mf.dispatchFetch(new URL('/conversations/chat-1/messages', url2), { method: 'POST', body: '{' });
    assert.equal(notJson.status, 400);
    assert.equal((await notJson.json()).error.code, 'INVALID_ARGUMENT');
    const missing = await mf.dispatchFetch(new URL('/conversations/chat-1/offloads/00000000-0000-4000-8000-000000000000', url2));
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'NOT_FOUND');
    const unknown = await post2('/conversations/chat-1/reload', { id: 'x', type: 'function', function: { name: 'context_reload', arguments: '{"working_context_offload_uuid":"00000000-0000-4000-8000-000000000000"}' } });
    assert.equal(unknown.status, 200);
    assert.match(unknown.body.message.content, /^No offloaded context/);
    // A failed request left the conversation as it was.
    const after = await (await mf.dispatchFetch(new URL('/conversations/chat-1/messages', url2))).json();
    assert.equal(after.messages.at(-1).content, 'Here it is.');
    // Another conversation is another object, with its own session.
    const other = await post2('/conversations/chat-2/messages', { messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(other.status, 200);
    assert.equal(other.body.messageCount, 1);
  } finally {
    await mf.dispose();
  }
});

test("the README's esbuild command line bundles the example Worker, which then runs in workerd", async () => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  const line = readme.split('\n').find((l) => l.startsWith('npx esbuild '));
  assert.ok(line, 'the README gives an esbuild command line');
  // The command as documented, on the example's entry and into a directory of the test's own.
  const outdir = join(work, 'esbuild-cli');
  const args = line
    .slice('npx esbuild '.length)
    .split(' ')
    .map((a) => (a === 'src/index.js' ? 'examples/worker/src/index.js' : a.startsWith('--outdir=') ? `--outdir=${outdir}` : a));
  execFileSync(fileURLToPath(new URL('../../node_modules/.bin/esbuild', import.meta.url)), [...args, '--log-level=warning'], { cwd: app });
  const mf = new Miniflare(await exampleOptions(outdir, join(work, 'persist-esbuild-cli')));
  try {
    const url = await mf.ready;
    const counted = await mf.dispatchFetch(new URL('/tokens?text=hello%20world', url));
    assert.deepEqual(await counted.json(), { tokens: 2 });
    const added = await mf.dispatchFetch(new URL('/conversations/c/messages', url), {
      method: 'POST',
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(added.status, 200);
    assert.equal((await added.json()).messageCount, 1);
  } finally {
    await mf.dispose();
  }
});

test('the store contract in workerd: CloudflareKVStore on a KV binding, and MemoryStore', async (t) => {
  const outdir = join(work, 'stores');
  await bundleWorker(join(app, 'tests/workerd/store-worker.mjs'), outdir);
  const mf = new Miniflare({ ...moduleOptions(outdir), compatibilityDate: '2026-07-01', kvNamespaces: ['KV'] });
  try {
    const url = await mf.ready;
    for (const path of ['/contract/cloudflare-kv', '/contract/memory', '/specifics']) {
      const results = await (await mf.dispatchFetch(new URL(path, url))).json();
      assert.ok(results.length > 0);
      for (const r of results) {
        await t.test(`${path.slice(1)}: ${r.name}`, () => {
          if (!r.ok) assert.fail(r.error);
        });
      }
    }
  } finally {
    await mf.dispose();
  }
});

test("a memory made in a Worker's global scope, which gives no random values, is UNAVAILABLE; in the request handler it works", async () => {
  const outdir = join(work, 'global-scope');
  await bundleWorker(join(app, 'tests/workerd/global-scope-worker.mjs'), outdir);
  const mf = new Miniflare({ ...moduleOptions(outdir), compatibilityDate: '2026-07-01' });
  try {
    const { atStartup, inRequest } = await (await mf.dispatchFetch(new URL('/', await mf.ready))).json();
    // Not the module aborting with `unreachable`: a typed error that says what to do, with
    // the runtime's own refusal as its cause.
    assert.equal(atStartup.ok, false);
    assert.equal(atStartup.isAutoContextError, true, JSON.stringify(atStartup));
    assert.equal(atStartup.code, 'UNAVAILABLE');
    assert.match(atStartup.message, /random values.*request handler/);
    assert.ok(atStartup.cause, 'the runtime\'s error is the cause');
    // The refusal left the module whole: the same memory, made in the request, works.
    assert.deepEqual(inRequest, { ok: true, messages: 1 });
  } finally {
    await mf.dispose();
  }
});

test('the guarantees of every wire format hold in workerd', async (t) => {
  const outdir = join(work, 'formats');
  await bundleWorker(join(app, 'tests/workerd/format-worker.mjs'), outdir);
  const mf = new Miniflare({ ...moduleOptions(outdir), compatibilityDate: '2026-07-01' });
  try {
    const url = await mf.ready;
    const results = await (await mf.dispatchFetch(new URL('/formats', url))).json();
    assert.ok(results.some((r) => r.name.startsWith('gemini:')), 'the Gemini cases ran');
    for (const r of results) {
      await t.test(r.name, () => {
        if (!r.ok) assert.fail(r.error);
      });
    }
  } finally {
    await mf.dispose();
  }
});

let sessionBundle;
/** tests/workerd/session-worker.mjs in miniflare, bundled once; a fresh KV and Durable Object per call. */
async function sessionWorker() {
  const outdir = join(work, 'sessions');
  sessionBundle ??= bundleWorker(join(app, 'tests/workerd/session-worker.mjs'), outdir);
  await sessionBundle;
  return new Miniflare({
    ...moduleOptions(outdir),
    compatibilityDate: '2026-07-01',
    kvNamespaces: ['KV'],
    durableObjects: { SESSIONS: { className: 'Sessions', useSQLite: true } },
  });
}

test('DurableObjectSessionStore in workerd: two writers on one session, the stale save refused, nothing lost', async () => {
  const mf = await sessionWorker();
  try {
    const out = await (await mf.dispatchFetch(await mf.ready)).json();
    assert.equal(out.first, 1);
    assert.deepEqual([...out.statuses].sort(), ['fulfilled', 'rejected'], JSON.stringify(out));
    assert.ok(out.codes.includes('CONFLICT'), JSON.stringify(out));
    assert.equal(out.revision, 2);
    assert.ok(out.sameAsWinner, "the saved session is the winner's, whole");
    assert.ok(out.offloads > 0 && out.reloaded === out.offloads, JSON.stringify(out));
    assert.ok(out.bigBack, 'a state over 128 KiB comes back whole');
    assert.equal(out.bigKeys, 3, 'revision, part count and one part: the big state left nothing');
    assert.equal(out.stale, 'CONFLICT');
    assert.equal(out.disposed, 'INVALID_STATE', 'a disposed memory refuses its use');
    assert.ok(out.againSame, 'the session loads again whole after its memories were disposed of');
  } finally {
    await mf.dispose();
  }
});

test("DurableObjectSessionStore and CloudflareKVStore in workerd: sweep({ sessions }) deletes exactly a fenced-out writer's keys; the saved session stays whole", async () => {
  const mf = await sessionWorker();
  try {
    checkFencedSweep(await (await mf.dispatchFetch(new URL('/sweep', await mf.ready))).json());
  } finally {
    await mf.dispose();
  }
});
