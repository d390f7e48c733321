// The OffloadStore contract, for every store in the runtime where it lives (Node, Deno, workerd,
// a browser page). Plain ESM with no imports, so any runtime can load it.
//
//   import { storeContract } from '../contract/store-contract.mjs';
//   for (const { name, run } of storeContract(() => new MemoryStore())) test(name, run);
//
// Each case opens its own store (the factory may return a promise), uses session ids no other
// case or run uses, and closes the store afterwards when `close` is given. A case fails by
// throwing an Error whose message says what differed.

/** @typedef {{ acceptsBytes?: boolean, get(key: string): unknown, put(key: string, value: string | Uint8Array): unknown, delete(key: string): unknown, keys?: (prefix?: string) => unknown }} Store */

/** Throws unless `actual === expected`; for strings, names the first differing position. */
export function equal(actual, expected, what) {
  if (Object.is(actual, expected)) return;
  let detail;
  if (typeof actual === 'string' && typeof expected === 'string') {
    let i = 0;
    while (i < actual.length && i < expected.length && actual.charCodeAt(i) === expected.charCodeAt(i)) i++;
    const around = (s) => JSON.stringify(s.slice(Math.max(0, i - 8), i + 8));
    detail = `strings of ${actual.length} and ${expected.length} code units first differ at ${i}: ${around(actual)} vs ${around(expected)}`;
  } else {
    const show = (v) => (typeof v === 'string' && v.length > 80 ? `${JSON.stringify(v.slice(0, 80))}… (${v.length} code units)` : typeof v === 'string' ? JSON.stringify(v) : String(v));
    detail = `got ${show(actual)}, expected ${show(expected)}`;
  }
  throw new Error(`${what}: ${detail}`);
}

/** Throws unless the two arrays hold the same strings in the same order. */
export function sameList(actual, expected, what) {
  if (!Array.isArray(actual)) throw new Error(`${what}: got ${typeof actual}, expected an array`);
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: got ${a}, expected ${e}`);
}

/** The error `promise` rejects with, or an Error when it resolves. */
async function rejection(promise, what) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error(`${what}: expected a rejection, but it resolved`);
}

/** A random token, so runs against a persistent store never see each other's keys. */
function token() {
  return globalThis.crypto.randomUUID().slice(0, 8);
}

/**
 * A deterministic string of more than `bytes` UTF-8 bytes mixing ASCII, two- and three-byte
 * characters (Latin, CJK) and astral characters (surrogate pairs), and no lone surrogates.
 */
export function bigValue(bytes = 1_048_576) {
  const pieces = ['{"role":"tool","content":"', 'línea ñ é ü ß ', '日本語の文章と中文字符 ', '𝄞 👩🏽‍💻 🚀 𠀋 ', 'plain ascii text 0123456789 ', '\\n\\t\\"quoted\\" ', '\u2028\u00a0\u200d '];
  const parts = [];
  let size = 0;
  for (let i = 0; size <= bytes; i++) {
    const piece = pieces[i % pieces.length] + (i % 97) + ' ';
    parts.push(piece);
    size += new TextEncoder().encode(piece).length;
  }
  return parts.join('') + '"}';
}

/** Values whose every code unit must come back. */
export const UNICODE_VALUES = [
  'naïve café ☃ — “quotes” ‘single’ …',
  '日本語のテキスト, 中文, 한국어',
  'astral: 𝄞 😀 👩🏽‍💻 🏳️‍🌈 𠀋 (surrogate pairs)',
  'combining, never normalized: e\u0301 n\u0303 A\u030a \u212b; RTL: שלום مرحبا',
  '\ufeffa leading byte order mark, kept',
  'separators: \u2028 \u2029 \u0085 \u00a0 zero-width: \u200b\u200c\u200d BOM: \ufeff',
  'controls: \u0000 \u0001 \t \r\n \u001f \u007f',
  '{"json":"with \\"escapes\\" and \\\\ backslashes","n":1e400}',
];

/**
 * The contract's cases for one store.
 *
 * @param {() => Store | Promise<Store>} open - a store; each case calls it once.
 * @param {object} [options]
 * @param {(store: Store) => unknown} [options.close] - called after each case.
 * @param {boolean} [options.checksKeys] - the store refuses malformed keys with an error whose
 *   `code` is `INVALID_ARGUMENT` (every store but the memory one).
 * @param {number} [options.bigBytes] - size of the big value, in UTF-8 bytes (default 1 MiB).
 * @param {boolean} [options.acceptsBytes] - the store says `acceptsBytes: true` and takes values as the UTF-8
 *   bytes of their text (every shipped store; default true).
 * @returns {{ name: string, run: () => Promise<void> }[]}
 */
export function storeContract(open, { close, checksKeys = false, bigBytes = 1_048_576, acceptsBytes = true } = {}) {
  const run = (fn) => async () => {
    const store = await open();
    try {
      await fn(store, `contract-${token()}`);
    } finally {
      if (close) await close(store);
    }
  };

  const cases = [
    {
      name: 'put, get, delete',
      run: run(async (store, s) => {
        const key = `${s}/0b6f2a5e-3c1d-4e8f-9a7b-2c4d6e8f0a1b`;
        await store.put(key, '[{"role":"user","content":"hello"}]');
        equal(await store.get(key), '[{"role":"user","content":"hello"}]', 'get after put');
        await store.delete(key);
        equal(await store.get(key), null, 'get after delete');
      }),
    },
    {
      name: 'a missing key is null; deleting a missing key is fine; an empty value is a value',
      run: run(async (store, s) => {
        equal(await store.get(`${s}/never-written`), null, 'get of a key never written');
        await store.delete(`${s}/never-written`);
        await store.delete(`${s}/never-written`);
        await store.put(`${s}/empty`, '');
        equal(await store.get(`${s}/empty`), '', 'an empty value');
      }),
    },
    {
      name: 'overwrite replaces the whole value, longer and shorter',
      run: run(async (store, s) => {
        const key = `${s}/k`;
        const long = bigValue(300_000);
        await store.put(key, 'short');
        await store.put(key, long);
        equal(await store.get(key), long, 'short overwritten by long');
        await store.put(key, 'x');
        equal(await store.get(key), 'x', 'long overwritten by short');
        await store.put(key, long + long);
        await store.put(key, long);
        equal(await store.get(key), long, 'long overwritten by a shorter long one');
        await store.delete(key);
        equal(await store.get(key), null, 'deleted after overwrites');
      }),
    },
    {
      name: 'unicode values come back code unit for code unit',
      run: run(async (store, s) => {
        for (const [i, value] of UNICODE_VALUES.entries()) await store.put(`${s}/u${i}`, value);
        for (const [i, value] of UNICODE_VALUES.entries()) equal(await store.get(`${s}/u${i}`), value, `unicode value ${i}`);
        const all = UNICODE_VALUES.join('\n').repeat(2000);
        await store.put(`${s}/all`, all);
        equal(await store.get(`${s}/all`), all, 'all of them, repeated');
      }),
    },
    {
      name: `a value over ${bigBytes.toLocaleString('en')} bytes comes back byte-exact`,
      run: run(async (store, s) => {
        const big = bigValue(bigBytes);
        await store.put(`${s}/big`, big);
        const back = await store.get(`${s}/big`);
        equal(typeof back, 'string', 'type of the value read');
        equal(back, big, 'the big value');
        await store.delete(`${s}/big`);
        equal(await store.get(`${s}/big`), null, 'the big value after delete');
      }),
    },
    {
      name: "keys of other sessions are neither visible nor returned",
      run: run(async (store, s) => {
        const [a, b] = [`${s}-a`, `${s}-b`];
        await store.put(`${a}/one`, 'A1');
        await store.put(`${b}/one`, 'B1');
        await store.put(`${b}/two`, 'B2');
        equal(await store.get(`${a}/one`), 'A1', "a's value");
        equal(await store.get(`${b}/one`), 'B1', "b's value under the same id");
        equal(await store.get(`${a}/two`), null, "an id only b has, under a");
        await store.delete(`${a}/one`);
        equal(await store.get(`${b}/one`), 'B1', "b's value after a deleted the same id");
        await store.put(`${a}/three`, 'A3');
        if (typeof store.keys === 'function') {
          sameList([...(await store.keys(`${a}/`))].sort(), [`${a}/three`], "a's keys");
          sameList([...(await store.keys(`${b}/`))].sort(), [`${b}/one`, `${b}/two`], "b's keys");
        }
      }),
    },
    {
      name: 'concurrent puts of different keys all land',
      run: run(async (store, s) => {
        const keys = Array.from({ length: 24 }, (_, i) => `${s}/c${i}`);
        await Promise.all(keys.map((k, i) => store.put(k, `value ${i} ${'·'.repeat(i * 1000)}`)));
        const back = await Promise.all(keys.map((k) => store.get(k)));
        back.forEach((v, i) => equal(v, `value ${i} ${'·'.repeat(i * 1000)}`, `key ${i}`));
      }),
    },
  ];

  if (acceptsBytes) {
    cases.push({
      name: 'values given as UTF-8 bytes come back as their text',
      run: run(async (store, s) => {
        equal(store.acceptsBytes, true, 'store.acceptsBytes');
        const utf8 = (t) => new TextEncoder().encode(t);
        for (const [i, value] of UNICODE_VALUES.entries()) await store.put(`${s}/u${i}`, utf8(value));
        for (const [i, value] of UNICODE_VALUES.entries()) equal(await store.get(`${s}/u${i}`), value, `unicode value ${i}, put as bytes`);
        await store.put(`${s}/empty`, new Uint8Array(0));
        equal(await store.get(`${s}/empty`), '', 'no bytes');
        // Sizes around the limits stores chunk at (64 KiB), and the big value.
        for (const size of [32_000, 65_536, bigBytes]) {
          const value = bigValue(size);
          await store.put(`${s}/big`, utf8(value));
          const back = await store.get(`${s}/big`);
          equal(typeof back, 'string', `type of the ${size}-byte value read`);
          equal(back, value, `the ${size}-byte value, put as bytes`);
        }
        // Bytes and strings replace each other whole.
        await store.put(`${s}/big`, 'short');
        equal(await store.get(`${s}/big`), 'short', 'bytes overwritten by a string');
        await store.put(`${s}/big`, utf8('x'));
        equal(await store.get(`${s}/big`), 'x', 'a string overwritten by bytes');
        await store.delete(`${s}/big`);
        equal(await store.get(`${s}/big`), null, 'deleted');
      }),
    });
  }

  if (checksKeys) {
    cases.push({
      name: 'malformed keys and values are refused with INVALID_ARGUMENT',
      run: run(async (store, s) => {
        const bad = ['', `/${s}`, `${s}/`, '/', 42, null, undefined, { toString: () => `${s}/x` }];
        for (const key of bad) {
          for (const [op, call] of [
            ['get', () => store.get(key)],
            ['put', () => store.put(key, 'v')],
            ['delete', () => store.delete(key)],
          ]) {
            const what = `${op}(${typeof key === 'string' ? JSON.stringify(key) : String(key)})`;
            const e = await rejection((async () => call())(), what);
            equal(e?.code, 'INVALID_ARGUMENT', `${what}: code of ${e?.name}: ${e?.message}`);
          }
        }
        const e = await rejection((async () => store.put(`${s}/x`, 42))(), 'put of a number');
        equal(e?.code, 'INVALID_ARGUMENT', `put of a number: code of ${e?.message}`);
        equal(await store.get(`${s}/x`), null, 'nothing was written');
      }),
    });
  }
  return cases;
}

/**
 * Runs every case in order and returns what happened, for runtimes without a test runner.
 *
 * @returns {Promise<{ name: string, ok: boolean, error?: string }[]>}
 */
export async function runStoreContract(open, options) {
  const results = [];
  for (const { name, run } of storeContract(open, options)) {
    try {
      await run();
      results.push({ name, ok: true });
    } catch (e) {
      results.push({ name, ok: false, error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
    }
  }
  return results;
}
