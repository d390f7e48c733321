// A Worker that runs the store contract inside workerd, against a real KV namespace binding
// (CloudflareKVStore) and MemoryStore, plus the KV store's own behaviour: prefix, TTL, options.
// Bundled by worker.test.mjs the way a Worker build bundles; it answers JSON.
import { MemoryStore } from 'autocontext/stores/memory';
import { CloudflareKVStore } from 'autocontext/stores/cloudflare-kv';
import { equal, runStoreContract, sameList } from '../contract/store-contract.mjs';

/** Runs named checks in order; each throws on failure. */
async function checks(cases) {
  const out = [];
  for (const [name, fn] of Object.entries(cases)) {
    try {
      await fn();
      out.push({ name, ok: true });
    } catch (e) {
      out.push({ name, ok: false, error: `${e?.message}\n${e?.stack ?? ''}` });
    }
  }
  return out;
}

function code(fn) {
  try {
    fn();
  } catch (e) {
    return e?.code;
  }
  return 'no error';
}

const specifics = (env) => ({
  'keys live under the prefix, verbatim, and keys() strips it': async () => {
    const store = new CloudflareKVStore(env.KV, { prefix: 'specific/' });
    await store.put('s1/a', 'A');
    await store.put('s1/b', 'B');
    await store.put('s2/a', 'C');
    equal(await env.KV.get('specific/s1/a'), 'A', 'the raw KV key');
    sameList(await store.keys('s1/'), ['s1/a', 's1/b'], "s1's keys");
    sameList(await store.keys(), ['s1/a', 's1/b', 's2/a'], 'all keys');
    const other = new CloudflareKVStore(env.KV, { prefix: 'other/' });
    equal(await other.get('s1/a'), null, 'another prefix sees nothing');
    sameList(await other.keys(), [], "another prefix's keys");
    const bare = new CloudflareKVStore(env.KV);
    equal(await bare.get('specific/s1/a'), 'A', 'the prefix is prepended verbatim');
  },
  'expirationTtl sets each value to expire': async () => {
    const store = new CloudflareKVStore(env.KV, { prefix: 'ttl/', expirationTtl: 3600 });
    await store.put('s/a', 'x');
    const { keys } = await env.KV.list({ prefix: 'ttl/' });
    equal(keys.length, 1, 'one key');
    const left = keys[0].expiration - Date.now() / 1000;
    if (!(left > 3500 && left <= 3601)) throw new Error(`expiration in ${left} s, expected about 3600`);
    const forever = new CloudflareKVStore(env.KV, { prefix: 'forever/' });
    await forever.put('s/a', 'x');
    equal((await env.KV.list({ prefix: 'forever/' })).keys[0].expiration, undefined, 'no TTL without the option');
  },
  'bad options are refused with INVALID_CONFIG': () => {
    equal(code(() => new CloudflareKVStore(env.KV, { expirationTtl: 30 })), 'INVALID_CONFIG', 'a TTL under 60 s');
    equal(code(() => new CloudflareKVStore(env.KV, { expirationTtl: 90.5 })), 'INVALID_CONFIG', 'a fractional TTL');
    equal(code(() => new CloudflareKVStore(env.KV, { prefix: 7 })), 'INVALID_CONFIG', 'a prefix that is not a string');
    equal(code(() => new CloudflareKVStore(undefined)), 'INVALID_CONFIG', 'no namespace');
    equal(code(() => new CloudflareKVStore({ get() {} })), 'INVALID_CONFIG', 'not a namespace');
  },
  "keys over KV's 512-byte limit are refused before KV sees them": async () => {
    const store = new CloudflareKVStore(env.KV, { prefix: 'long/' });
    let e;
    await store.put(`s/${'é'.repeat(260)}`, 'x').catch((x) => (e = x));
    equal(e?.code, 'INVALID_ARGUMENT', '520 bytes of key');
    await store.put(`s/${'x'.repeat(500)}`, 'x');
    equal(await store.get(`s/${'x'.repeat(500)}`), 'x', 'a key of 507 bytes with its prefix');
  },
  'KV failures reach the caller unchanged': async () => {
    const boom = new Error('KV is down');
    const failing = { get: async () => { throw boom; }, put: async () => { throw boom; }, delete: async () => { throw boom; }, list: async () => { throw boom; } };
    const store = new CloudflareKVStore(failing);
    for (const call of [() => store.get('s/a'), () => store.put('s/a', 'v'), () => store.delete('s/a'), () => store.keys()]) {
      let e;
      await call().catch((x) => (e = x));
      equal(e, boom, 'the namespace error itself');
    }
  },
});

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === '/contract/cloudflare-kv') {
      return Response.json(await runStoreContract(() => new CloudflareKVStore(env.KV, { prefix: 'contract/' }), { checksKeys: true }));
    }
    if (pathname === '/contract/memory') return Response.json(await runStoreContract(() => new MemoryStore()));
    if (pathname === '/specifics') return Response.json(await checks(specifics(env)));
    return new Response('not found', { status: 404 });
  },
};
