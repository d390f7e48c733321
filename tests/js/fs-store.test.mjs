// FsStore (autocontext/stores/fs): the OffloadStore contract on a directory, key safety,
// atomic writes, and use as the engine's store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AutoContextMemory } from 'autocontext';
import { FsStore } from 'autocontext/stores/fs';
import { bigToolResult, markers, rejected } from './helpers.mjs';

async function withDir(fn) {
  const dir = await mkdtemp(join(tmpdir(), 'autocontext-fs-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every file under `dir`, relative, sorted. */
async function files(dir) {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name).slice(dir.length + 1))
    .sort();
}

test('put, get, overwrite, delete; a missing key is null and deleting it is fine', () =>
  withDir(async (dir) => {
    const store = new FsStore(join(dir, 'store'));
    assert.equal(await store.get('s1/a'), null, 'missing, and the directory does not exist yet');
    await store.delete('s1/a');
    await store.put('s1/a', 'first');
    assert.equal(await store.get('s1/a'), 'first');
    await store.put('s1/a', 'second');
    assert.equal(await store.get('s1/a'), 'second');
    await store.put('s1/b', '');
    assert.equal(await store.get('s1/b'), '', 'an empty value is a value, not a missing one');
    await store.delete('s1/a');
    assert.equal(await store.get('s1/a'), null);
    await store.delete('s1/a');
    assert.deepEqual(await store.keys(), ['s1/b']);
    assert.deepEqual(await files(join(dir, 'store')), ['s1/b'], 'one file per key, no temporary files left');
  }));

test('the key names the file: <directory>/<sessionId>/<uuid>', () =>
  withDir(async (dir) => {
    const store = new FsStore(dir);
    const key = 'chat-1/0b6f2a5e-3c1d-4e8f-9a7b-2c4d6e8f0a1b';
    await store.put(key, '{"x":1}');
    assert.equal(store.pathOf(key), join(dir, 'chat-1', '0b6f2a5e-3c1d-4e8f-9a7b-2c4d6e8f0a1b'));
    assert.equal(await readFile(join(dir, 'chat-1', '0b6f2a5e-3c1d-4e8f-9a7b-2c4d6e8f0a1b'), 'utf8'), '{"x":1}');
    assert.equal(new FsStore(pathToFileURL(dir)).directory, dir, 'a file: URL works too');
  }));

test('unicode values and keys, and a 1 MB value, come back exactly', () =>
  withDir(async (dir) => {
    const store = new FsStore(dir);
    const unicode = 'naïve café ☃ 日本語 𝄞 emoji 👩🏽‍💻 combining é, RTL שלום, NUL-free \u2028 line sep';
    await store.put('s/unicode', unicode);
    assert.equal(await store.get('s/unicode'), unicode);
    const big = 'x'.repeat(512 * 1024) + '€'.repeat(180 * 1024) + '\n' + 'tail';
    assert.ok(Buffer.byteLength(big) > 1_000_000);
    await store.put('s/big', big);
    assert.equal(await store.get('s/big'), big);
    const keys = ['sessão/ünï cödé', 'a:b/c?d*e', 'x/100%', 'case/A', 'case/b', 'deep/er/still'];
    for (const k of keys) await store.put(k, `value of ${k}`);
    for (const k of keys) assert.equal(await store.get(k), `value of ${k}`);
    assert.deepEqual(await store.keys(), [...keys, 's/big', 's/unicode'].sort());
    assert.deepEqual(await store.keys('case/'), ['case/A', 'case/b']);
    for (const name of await files(dir)) assert.match(name, /^[A-Za-z0-9._%\/-]+$/, `portable file name: ${name}`);
  }));

test('keys that would escape the directory are refused with INVALID_ARGUMENT', () =>
  withDir(async (dir) => {
    const store = new FsStore(join(dir, 'store'));
    const bad = ['../x', 'a/../../x', '..', '.', 'a/./b', '/etc/passwd', 'a\\b', '..\\x', 'a\0b', '', 'a//b', 'a/', '/', 42, null, undefined];
    for (const key of bad) {
      for (const op of [() => store.get(key), () => store.put(key, 'v'), () => store.delete(key)]) {
        const e = await rejected(op());
        assert.ok(e instanceof Error, String(key));
        assert.equal(e.code, 'INVALID_ARGUMENT', `${JSON.stringify(key)}: ${e.message}`);
      }
      assert.throws(() => store.pathOf(key), { code: 'INVALID_ARGUMENT' });
    }
    const e = await rejected(store.put('s/ok', 42));
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.deepEqual(await readdir(dir), [], 'nothing was written anywhere');
  }));

test('writes are atomic: concurrent writers and readers see whole values only', () =>
  withDir(async (dir) => {
    const store = new FsStore(dir);
    const values = Array.from({ length: 8 }, (_, i) => String(i).repeat(256 * 1024));
    await store.put('s/k', values[0]);
    const reads = [];
    await Promise.all(
      values.map(async (v) => {
        await store.put('s/k', v);
        reads.push(await store.get('s/k'));
      }),
    );
    for (const r of reads) assert.ok(values.includes(r), 'a whole value, never a torn one');
    assert.ok(values.includes(await store.get('s/k')));
    assert.deepEqual(await files(dir), ['s/k'], 'no temporary files left');
    // A leftover temporary file (a crash mid-write) is never mistaken for a key.
    await writeFile(join(dir, 's', 'k~0123abcd.tmp'), 'partial');
    // Nor are files no key maps to (a name encoding a '/', lower-case escapes, stray names).
    for (const stray of ['a%2Fb', 'a%2fb', 'with space', '%ZZ']) await writeFile(join(dir, 's', stray), 'stray');
    assert.deepEqual(await store.keys(), ['s/k']);
  }));

test('as the engine store: offloads land in files and reload byte-exact', () =>
  withDir(async (dir) => {
    const store = new FsStore(dir);
    const conversation = bigToolResult(30_000);
    const memory = new AutoContextMemory({ maxToken: 4_000, store, sessionId: 'fs-test' });
    memory.add(conversation);
    const result = await memory.compressIfNeeded();
    assert.equal(result.compressed, true);
    const [uuid] = markers(JSON.stringify(memory.messages()));
    assert.ok(uuid);
    assert.deepEqual(await store.keys(), [`fs-test/${uuid}`]);
    assert.deepEqual(await memory.reload(uuid), [conversation[2]]);
    // A new store object on the same directory serves a restored memory.
    const restored = AutoContextMemory.fromJSON(memory.toJSON(), { store: new FsStore(dir) });
    assert.deepEqual(await restored.reload(uuid), [conversation[2]]);
  }));
