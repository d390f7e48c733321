/**
 * An offload store in Deno KV, for Deno (locally, a SQLite file or `:memory:`; on Deno Deploy,
 * the hosted database).
 *
 * ```ts
 * import { AutoContextMemory } from 'autocontext';
 * import { DenoKVStore } from 'autocontext/stores/deno-kv';
 *
 * const kv = await Deno.openKv();            // run with --unstable-kv where Deno asks for it
 * const memory = new AutoContextMemory({ maxToken: 128_000, store: new DenoKVStore(kv), sessionId: 'chat-1' });
 * ```
 *
 * The engine's key `<sessionId>/<uuid>` becomes the Deno KV key `[prefix, sessionId, uuid]`
 * (`prefix` defaults to `'autocontext'`), so one database can hold many conversations and
 * other data beside them, and everything of one conversation lives under
 * `[prefix, sessionId]`.
 *
 * ## Values over Deno KV's 64 KiB limit
 *
 * A value of up to 32,000 UTF-16 code units is stored as it is, under its key. A longer one is
 * encoded (UTF-8; UTF-16LE if it holds lone surrogates, so every string comes back exactly),
 * split into 64 KiB chunks stored under `[prefix, sessionId, uuid, generation, i]`, and the key
 * itself then holds a small header naming the generation, the chunk count and the byte length.
 *
 * Writes are transactional: the header is committed by one atomic operation that checks the
 * key has not changed since it was read, so a reader sees the old value or the new one, whole.
 * When the chunks fit in one atomic operation (Deno KV allows 800 KiB of mutations) they are
 * written by that same operation; larger values write their chunks first, under a fresh
 * generation that nothing points to yet, and then commit the header. The chunks of the value
 * being replaced or deleted are removed by the committing operation (or right after it, when
 * there are more than fit), so overwriting a long value with a shorter one leaves no chunks
 * behind. Only a process that dies while writing the chunks of a value larger than 800 KiB can
 * leave unreferenced chunks, under that value's own key.
 *
 * {@link DenoKVSessionStore} keeps saved sessions (`memory.save(sessions)`) in the same kind of
 * database, refusing a stale revision with `CONFLICT` by an atomic check.
 *
 * @module
 */

import { checkValue, text } from '../bytes.js';
import { AutoContextError, describe, invalidArgument } from '../errors.js';
import { checkSaved, checkSessionId, conflict, storedRevision } from '../session-store.js';
import type { OffloadStore, SavedSession, SessionStore } from '../types.js';

/** One part of a Deno KV key (this store only writes strings and numbers). */
export type KvKeyPart = string | number | bigint | boolean | symbol | Uint8Array;

/** A Deno KV key. */
export type KvKey = readonly KvKeyPart[];

/** One entry read from Deno KV. */
export interface KvEntryLike {
  key: KvKey;
  value: unknown;
  versionstamp: string | null;
}

/** An atomic operation on Deno KV, as `kv.atomic()` returns it. */
export interface AtomicOperationLike {
  check(...checks: { key: KvKey; versionstamp: string | null }[]): AtomicOperationLike;
  set(key: KvKey, value: unknown): AtomicOperationLike;
  delete(key: KvKey): AtomicOperationLike;
  commit(): Promise<{ ok: boolean }>;
}

/**
 * The part of a `Deno.Kv` this store uses. What `Deno.openKv()` returns is one.
 */
export interface DenoKvLike {
  get(key: KvKey, options?: { consistency?: 'strong' | 'eventual' }): Promise<KvEntryLike>;
  list(selector: { prefix: KvKey }, options?: { consistency?: 'strong' | 'eventual'; batchSize?: number }): AsyncIterable<KvEntryLike>;
  atomic(): AtomicOperationLike;
}

/** Options of a {@link DenoKVStore}. */
export interface DenoKVStoreOptions {
  /** First part of every key; default `'autocontext'`. */
  prefix?: string;
}

/** Longest value Deno KV accepts, in bytes: the chunk size. */
export const CHUNK_BYTES = 65_536;

/** Longest string stored without chunking, in UTF-16 code units (two bytes each at most). */
export const INLINE_UNITS = 32_000;

/** Mutation bytes one atomic operation may carry (Deno KV allows 819,200), with room to spare. */
const OP_BYTES = 800_000;

/** Mutations one atomic operation may carry (Deno KV allows 1,000). */
const OP_MUTATIONS = 1_000;

/** Longest key Deno KV writes, in encoded bytes. */
const MAX_KEY_BYTES = 2_048;

/** Encoded bytes a chunk key adds to its value's key: a generation (a uuid) and an index. */
const CHUNK_KEY_EXTRA = 2 + 36 + 9;

/** How often a write or read starts over when another writer changed the key meanwhile. */
const ATTEMPTS = 16;

/** What a long value's key holds. */
interface Header {
  autocontext: 'chunked';
  generation: string;
  chunks: number;
  bytes: number;
  encoding: 'utf-8' | 'utf-16le';
}

const utf8 = new TextEncoder();

function failed(message: string, cause?: unknown): AutoContextError {
  return new AutoContextError('STORE_FAILED', message, cause === undefined ? {} : { cause });
}

/** Encoded size of a key, as Deno KV counts it (strings: a tag, the bytes, NUL-escapes, a terminator). */
function keyBytes(key: KvKey): number {
  let n = 0;
  for (const part of key) {
    if (typeof part === 'string') n += 2 + utf8.encode(part).length + (part.match(/\0/g)?.length ?? 0);
    else n += 9;
  }
  return n;
}

function isHeader(value: unknown): value is Header {
  if (value === null || typeof value !== 'object') return false;
  const h = value as Partial<Header>;
  return (
    h.autocontext === 'chunked' &&
    typeof h.generation === 'string' &&
    Number.isSafeInteger(h.chunks) &&
    (h.chunks as number) > 0 &&
    Number.isSafeInteger(h.bytes) &&
    (h.encoding === 'utf-8' || h.encoding === 'utf-16le')
  );
}

/** A lone surrogate, which UTF-8 cannot carry. */
const LONE_SURROGATE = /\p{Cs}/u;

function encode(value: string): { bytes: Uint8Array; encoding: Header['encoding'] } {
  if (!LONE_SURROGATE.test(value)) return { bytes: utf8.encode(value), encoding: 'utf-8' };
  const bytes = new Uint8Array(value.length * 2);
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    bytes[2 * i] = unit & 0xff;
    bytes[2 * i + 1] = unit >> 8;
  }
  return { bytes, encoding: 'utf-16le' };
}

function decode(bytes: Uint8Array, encoding: Header['encoding']): string {
  if (encoding === 'utf-8') return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  let out = '';
  const units = new Array<number>(Math.min(8_192, bytes.length >> 1));
  for (let start = 0; start < bytes.length; start += 2 * units.length) {
    const end = Math.min(bytes.length, start + 2 * units.length);
    units.length = (end - start) >> 1;
    for (let i = start, j = 0; i < end; i += 2, j++) units[j] = bytes[i] | (bytes[i + 1] << 8);
    out += String.fromCharCode(...units);
  }
  return out;
}

/**
 * Groups mutations into atomic operations that stay within Deno KV's limits: the first group
 * joins `first` (the committing operation), later ones go to operations of their own.
 */
class Batches {
  readonly groups: { key: KvKey; value?: Uint8Array }[][] = [[]];
  #bytes: number;
  #count: number;

  constructor(reservedBytes: number, reservedMutations: number) {
    this.#bytes = reservedBytes;
    this.#count = reservedMutations;
  }

  add(key: KvKey, value?: Uint8Array): void {
    const size = keyBytes(key) + (value?.length ?? 0);
    if (this.#bytes + size > OP_BYTES || this.#count + 1 > OP_MUTATIONS) {
      this.groups.push([]);
      this.#bytes = 0;
      this.#count = 0;
    }
    this.groups[this.groups.length - 1].push(value === undefined ? { key } : { key, value });
    this.#bytes += size;
    this.#count += 1;
  }
}

function apply(op: AtomicOperationLike, group: { key: KvKey; value?: Uint8Array }[]): AtomicOperationLike {
  for (const m of group) {
    if (m.value === undefined) op.delete(m.key);
    else op.set(m.key, m.value);
  }
  return op;
}

/**
 * An {@link OffloadStore} in a Deno KV database, chunking values over Deno KV's 64 KiB limit.
 */
export class DenoKVStore implements OffloadStore {
  /** Values come as UTF-8 bytes; see {@link OffloadStore.acceptsBytes}. */
  readonly acceptsBytes = true;
  /** The database. */
  readonly kv: DenoKvLike;
  /** First part of every key. */
  readonly prefix: string;

  /**
   * @param kv - a database from `Deno.openKv()`.
   * @param options - the first key part (default `'autocontext'`).
   * @throws {@link AutoContextError} `INVALID_CONFIG` when `kv` is not a Deno KV database or an
   *   option is malformed.
   */
  constructor(kv: DenoKvLike, options: DenoKVStoreOptions = {}) {
    for (const method of ['get', 'list', 'atomic'] as const) {
      if (kv === null || typeof kv !== 'object' || typeof (kv as unknown as Record<string, unknown>)[method] !== 'function') {
        throw new AutoContextError('INVALID_CONFIG', `DenoKVStore needs a Deno.Kv (from Deno.openKv()), got ${describe(kv)}`, { field: 'kv' });
      }
    }
    if (options === null || typeof options !== 'object') {
      throw new AutoContextError('INVALID_CONFIG', `DenoKVStore options must be an object, got ${describe(options)}`, { field: 'options' });
    }
    const { prefix = 'autocontext' } = options;
    if (typeof prefix !== 'string' || prefix.length === 0 || keyBytes([prefix]) > MAX_KEY_BYTES / 2) {
      throw new AutoContextError('INVALID_CONFIG', `option \`prefix\` must be a non-empty string of at most ${MAX_KEY_BYTES / 2} bytes, got ${describe(prefix)}`, {
        field: 'prefix',
      });
    }
    this.kv = kv;
    this.prefix = prefix;
  }

  /**
   * The Deno KV key that holds `key`: `[prefix, sessionId, id]`.
   *
   * @throws {@link AutoContextError} `INVALID_ARGUMENT` unless `key` is a string
   *   `<sessionId>/<id>` with both parts non-empty, short enough for Deno KV's key limit.
   */
  keyOf(key: string): [string, string, string] {
    if (typeof key !== 'string') throw invalidArgument('key', `a store key must be a string, got ${describe(key)}`);
    const slash = key.indexOf('/');
    if (slash <= 0 || slash === key.length - 1) {
      throw invalidArgument('key', `a store key must look like "<sessionId>/<id>", got ${JSON.stringify(key)}`);
    }
    const parts: [string, string, string] = [this.prefix, key.slice(0, slash), key.slice(slash + 1)];
    if (keyBytes(parts) + CHUNK_KEY_EXTRA > MAX_KEY_BYTES) {
      throw invalidArgument('key', `store key ${JSON.stringify(key)} is too long for a Deno KV key`);
    }
    return parts;
  }

  /** The value under `key`, or `null` when there is none. */
  async get(key: string): Promise<string | null> {
    const base = this.keyOf(key);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const entry = await this.kv.get(base, { consistency: 'strong' });
      if (entry.versionstamp === null) return null;
      const { value } = entry;
      if (typeof value === 'string') return value;
      if (!isHeader(value)) throw failed(`Deno KV holds ${describe(value)} under ${JSON.stringify(base)}, not a value this store wrote`);
      const parts = await readChunks(this.kv, [...base, value.generation], value.chunks, value.bytes);
      if (parts !== null) return decode(parts, value.encoding);
      // The chunks are gone: a writer replaced the value after we read its header. Read again,
      // unless the header is still the same one, which would mean the chunks were lost.
      const again = await this.kv.get(base, { consistency: 'strong' });
      if (again.versionstamp === entry.versionstamp) {
        throw failed(`the chunks of ${JSON.stringify(key)} are missing from Deno KV (generation ${value.generation})`);
      }
    }
    throw failed(`could not read ${JSON.stringify(key)}: it kept changing while being read`);
  }

  /**
   * Stores `value` under `key`, chunked when it is long, replacing any value there whole. The
   * UTF-8 bytes of a long value are chunked as they are; a short one is stored as its text.
   */
  async put(key: string, value: string | Uint8Array): Promise<void> {
    const base = this.keyOf(key);
    checkValue(value);

    let stored: string | Header;
    let chunks: { key: KvKey; value: Uint8Array }[] = [];
    // At most INLINE_UNITS bytes of UTF-8 are at most as many code units.
    if (value.length <= INLINE_UNITS) {
      stored = text(value);
    } else {
      const { bytes, encoding } = typeof value === 'string' ? encode(value) : { bytes: value, encoding: 'utf-8' as const };
      const generation = crypto.randomUUID();
      const count = Math.ceil(bytes.length / CHUNK_BYTES);
      stored = { autocontext: 'chunked', generation, chunks: count, bytes: bytes.length, encoding };
      chunks = Array.from({ length: count }, (_, i) => ({
        key: [...base, generation, i],
        value: bytes.subarray(i * CHUNK_BYTES, Math.min(bytes.length, (i + 1) * CHUNK_BYTES)),
      }));
    }
    const headerBytes = keyBytes(base) + (typeof stored === 'string' ? 2 * stored.length + 16 : 256);

    // Chunks that do not fit beside the header go first, in operations of their own; nothing
    // points to their generation until the header is committed.
    const ahead = new Batches(headerBytes, 1);
    for (const c of chunks) ahead.add(c.key, c.value);
    const [withHeader, ...early] = ahead.groups;
    try {
      for (const group of early) await this.#commit(apply(this.kv.atomic(), group));
    } catch (e) {
      await removeQuietly(this.kv, chunks.map((c) => c.key));
      throw e;
    }

    try {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const old = await this.kv.get(base, { consistency: 'strong' });
        const stale = isHeader(old.value) ? chunkKeys(base, old.value) : [];
        const plan = new Batches(headerBytes, 1);
        for (const m of withHeader) plan.add(m.key, m.value);
        for (const k of stale) plan.add(k);
        const [first, ...rest] = plan.groups;
        const op = apply(this.kv.atomic().check({ key: base, versionstamp: old.versionstamp }), first).set(base, stored);
        if (!(await op.commit()).ok) continue; // another writer changed the key: read it again
        // The value is stored. The replaced generation is unreachable now: remove the chunks
        // that did not fit in the commit.
        await removeQuietly(this.kv, rest.flat().map((m) => m.key));
        return;
      }
    } catch (e) {
      await removeQuietly(this.kv, chunks.map((c) => c.key));
      throw e;
    }
    await removeQuietly(this.kv, chunks.map((c) => c.key));
    throw failed(`could not write ${JSON.stringify(key)}: it kept changing while being written`);
  }

  /** Removes `key` and its chunks; removing a key that is not there is not an error. */
  async delete(key: string): Promise<void> {
    const base = this.keyOf(key);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const old = await this.kv.get(base, { consistency: 'strong' });
      if (old.versionstamp === null) return;
      const plan = new Batches(keyBytes(base), 1);
      if (isHeader(old.value)) for (const k of chunkKeys(base, old.value)) plan.add(k);
      const [first, ...rest] = plan.groups;
      const op = apply(this.kv.atomic().check({ key: base, versionstamp: old.versionstamp }), first).delete(base);
      if (!(await op.commit()).ok) continue;
      await removeQuietly(this.kv, rest.flat().map((m) => m.key));
      return;
    }
    throw failed(`could not delete ${JSON.stringify(key)}: it kept changing while being deleted`);
  }

  /**
   * Every key stored under this store's prefix, as `<sessionId>/<id>`, sorted; with `prefix`
   * (for example `'<sessionId>/'`), only the keys that start with it.
   */
  async keys(prefix = ''): Promise<string[]> {
    if (typeof prefix !== 'string') throw invalidArgument('prefix', `a key prefix must be a string, got ${describe(prefix)}`);
    const slash = prefix.indexOf('/');
    const selector: KvKey = slash > 0 ? [this.prefix, prefix.slice(0, slash)] : [this.prefix];
    const out: string[] = [];
    for await (const entry of this.kv.list({ prefix: selector })) {
      const [, session, id] = entry.key;
      if (entry.key.length !== 3 || typeof session !== 'string' || typeof id !== 'string') continue;
      const key = `${session}/${id}`;
      if (key.startsWith(prefix)) out.push(key);
    }
    return out.sort();
  }

  async #commit(op: AtomicOperationLike): Promise<void> {
    const { ok } = await op.commit();
    if (!ok) throw failed('a Deno KV atomic operation without checks did not commit');
  }
}

/** Options of a {@link DenoKVSessionStore}. */
export interface DenoKVSessionStoreOptions {
  /** First part of every key; default `'autocontext-sessions'`. */
  prefix?: string;
}

/** What a session's head key holds: its revision and where its state's bytes are. */
interface SessionHead {
  autocontextSession: 1;
  revision: number;
  generation: string;
  chunks: number;
  bytes: number;
  encoding: Header['encoding'];
}

function isSessionHead(value: unknown): value is SessionHead {
  if (value === null || typeof value !== 'object') return false;
  const h = value as Partial<SessionHead>;
  return (
    h.autocontextSession === 1 &&
    typeof h.generation === 'string' &&
    Number.isSafeInteger(h.chunks) &&
    Number.isSafeInteger(h.bytes) &&
    (h.encoding === 'utf-8' || h.encoding === 'utf-16le')
  );
}

/**
 * A {@link SessionStore} in a Deno KV database: one writer per session, enforced by an atomic
 * check of the session's head.
 *
 * Session `s` lives under `[prefix, s]`: the head `[prefix, s, 'head']` names the revision and
 * the generation of the state's chunks `[prefix, s, generation, i]` (64 KiB each). A save writes
 * the new chunks under a fresh generation, then commits the head in one atomic operation that
 * checks the head it read (revision `n - 1`) is still there; it fails with `CONFLICT` when
 * another writer saved since, and removes its chunks again. The replaced generation's chunks
 * are removed after the commit. Chunks that fit beside the head (800 KiB) go in the same
 * operation; only a process that dies while writing a larger state can leave chunks no head
 * names, under its own session.
 */
export class DenoKVSessionStore implements SessionStore {
  /** The database. */
  readonly kv: DenoKvLike;
  /** First part of every key. */
  readonly prefix: string;

  /**
   * @param kv - a database from `Deno.openKv()`.
   * @param options - the first key part (default `'autocontext-sessions'`).
   * @throws {@link AutoContextError} `INVALID_CONFIG` when `kv` is not a Deno KV database or an
   *   option is malformed.
   */
  constructor(kv: DenoKvLike, options: DenoKVSessionStoreOptions = {}) {
    const { prefix = 'autocontext-sessions' } = options ?? {};
    // The offload store checks the same things.
    const store = new DenoKVStore(kv, { prefix });
    this.kv = store.kv;
    this.prefix = store.prefix;
  }

  /** The session's last saved state and revision, or `null`. */
  async load(sessionId: string): Promise<SavedSession | null> {
    const base: KvKey = [this.prefix, checkSessionId(sessionId)];
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const entry = await this.kv.get([...base, 'head'], { consistency: 'strong' });
      if (entry.versionstamp === null) return null;
      if (!isSessionHead(entry.value)) throw failed(`Deno KV holds ${describe(entry.value)} as the head of session ${JSON.stringify(sessionId)}, not one this store wrote`);
      const head = entry.value;
      const revision = storedRevision(sessionId, head.revision);
      const bytes = await readChunks(this.kv, [...base, head.generation], head.chunks, head.bytes);
      if (bytes !== null) return { revision, state: decode(bytes, head.encoding) };
      // A save replaced the state after we read its head: read again, unless the head is the same.
      const again = await this.kv.get([...base, 'head'], { consistency: 'strong' });
      if (again.versionstamp === entry.versionstamp) throw failed(`the chunks of session ${JSON.stringify(sessionId)} are missing from Deno KV`);
    }
    throw failed(`could not read session ${JSON.stringify(sessionId)}: it kept changing while being read`);
  }

  /**
   * Saves `session` if its revision follows the stored one, committed by one atomic check.
   *
   * @throws `AutoContextError` `CONFLICT` otherwise (nothing is written).
   */
  async save(sessionId: string, session: SavedSession): Promise<void> {
    const base: KvKey = [this.prefix, checkSessionId(sessionId)];
    const next = checkSaved(session);
    const headKey: KvKey = [...base, 'head'];
    const old = await this.kv.get(headKey, { consistency: 'strong' });
    if (old.versionstamp !== null && !isSessionHead(old.value)) {
      throw failed(`Deno KV holds ${describe(old.value)} as the head of session ${JSON.stringify(sessionId)}, not one this store wrote`);
    }
    const stored = old.versionstamp === null ? 0 : storedRevision(sessionId, (old.value as SessionHead).revision);
    if (stored !== next.revision - 1) throw conflict(sessionId, next.revision, stored);

    const { bytes, encoding } = encode(next.state);
    const generation = crypto.randomUUID();
    const count = Math.max(1, Math.ceil(bytes.length / CHUNK_BYTES));
    const chunks = Array.from({ length: count }, (_, i) => ({
      key: [...base, generation, i] as KvKey,
      value: bytes.subarray(i * CHUNK_BYTES, Math.min(bytes.length, (i + 1) * CHUNK_BYTES)),
    }));
    const head: SessionHead = { autocontextSession: 1, revision: next.revision, generation, chunks: count, bytes: bytes.length, encoding };
    const plan = new Batches(keyBytes(headKey) + 256, 1);
    for (const c of chunks) plan.add(c.key, c.value);
    const [withHead, ...early] = plan.groups;
    const ours = chunks.map((c) => c.key);
    let committed = false;
    try {
      for (const group of early) {
        if (!(await apply(this.kv.atomic(), group).commit()).ok) throw failed('a Deno KV atomic operation without checks did not commit');
      }
      const op = apply(this.kv.atomic().check({ key: headKey, versionstamp: old.versionstamp }), withHead).set(headKey, head);
      committed = (await op.commit()).ok;
    } finally {
      if (!committed) await removeQuietly(this.kv, ours);
    }
    if (!committed) {
      const now = await this.kv.get(headKey, { consistency: 'strong' });
      const found = isSessionHead(now.value) ? now.value.revision : 0;
      throw conflict(sessionId, next.revision, found);
    }
    // The replaced state is unreachable now.
    if (isSessionHead(old.value)) {
      const h = old.value;
      await removeQuietly(this.kv, chunkKeys(base, h));
    }
  }
}

/** The bytes of `chunks` chunks under `prefix`, or `null` when some are missing. */
async function readChunks(kv: DenoKvLike, prefix: KvKey, chunks: number, size: number): Promise<Uint8Array | null> {
  const out = new Uint8Array(size);
  let next = 0;
  let offset = 0;
  for await (const entry of kv.list({ prefix }, { consistency: 'strong' })) {
    const index = entry.key[entry.key.length - 1];
    const { value } = entry;
    if (index !== next || !(value instanceof Uint8Array) || offset + value.length > out.length) return null;
    out.set(value, offset);
    offset += value.length;
    next += 1;
  }
  return next === chunks && offset === size ? out : null;
}

/** The keys of the chunks a header (of a value or of a saved session) points to. */
function chunkKeys(base: KvKey, header: { generation: string; chunks: number }): KvKey[] {
  return Array.from({ length: header.chunks }, (_, i) => [...base, header.generation, i]);
}

/**
 * Removes keys, best effort: chunks no header points to (those of a write that failed, or of a
 * value just replaced). A failure here only leaves such chunks behind; the write's own error, if
 * any, is the one the caller sees.
 */
async function removeQuietly(kv: DenoKvLike, keys: KvKey[]): Promise<void> {
  const plan = new Batches(0, 0);
  for (const k of keys) plan.add(k);
  for (const group of plan.groups) {
    try {
      await apply(kv.atomic(), group).commit();
    } catch {
      // Only leaves unreferenced chunks behind.
    }
  }
}
