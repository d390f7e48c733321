/**
 * An offload store in the browser's IndexedDB: originals survive a page reload, a browser
 * restart, and are shared by every tab of the same origin.
 *
 * ```js
 * import { AutoContextMemory } from 'autocontext';
 * import { IndexedDBStore } from 'autocontext/stores/indexeddb';
 *
 * const store = new IndexedDBStore(); // database "autocontext", object store "offloads"
 * const memory = new AutoContextMemory({ maxToken: 128_000, store, sessionId: 'chat-1', summarize });
 * // ... later, after a reload:
 * const restored = AutoContextMemory.fromJSON(localStorage.getItem('chat-1'), { store, summarize });
 * ```
 *
 * All values live in one object store of one database (both names configurable), under the
 * engine's keys `<sessionId>/<uuid>`, so any number of memories can share one store: each sees
 * its own session's keys. The connection opens on first use; {@link IndexedDBStore.close}
 * releases it. Writes commit with `strict` durability by default, because an offload is the only
 * copy of the messages it replaced.
 *
 * Failures are {@link AutoContextError}s: `INVALID_ARGUMENT` for a malformed key or a value that
 * is not a string, `STORE_FAILED` when IndexedDB fails, with the browser's `DOMException` as
 * `cause` (`QuotaExceededError` when the origin is out of storage).
 *
 * {@link IndexedDBSessionStore} keeps saved sessions (`memory.save(sessions)`) in an object store
 * of the same database, refusing a stale revision with `CONFLICT` inside one transaction: two
 * tabs that restored the same session cannot both save it.
 *
 * @module
 */

import { checkValue, isValue, text } from '../bytes.js';
import { AutoContextError, describe, invalidArgument } from '../errors.js';
import { checkSaved, checkSessionId, conflict, storedRevision } from '../session-store.js';
import type { OffloadStore, SavedSession, SessionStore } from '../types.js';

/** Options of an {@link IndexedDBStore}. */
export interface IndexedDBStoreOptions {
  /** Name of the database; default `'autocontext'`. */
  databaseName?: string;
  /** Name of the object store inside it; default `'offloads'`. It is created when missing. */
  storeName?: string;
  /**
   * Durability of writes: `'strict'` (default) waits until the value is flushed to disk;
   * `'relaxed'` is faster and may lose the last writes on a power failure (not on a reload).
   */
  durability?: 'strict' | 'relaxed' | 'default';
  /** The IndexedDB to use; default `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
}

/** Longest key accepted, in UTF-16 code units (the engine's keys are under 170). */
const MAX_KEY_LENGTH = 1024;

/** How often opening retries when another connection changed the database meanwhile. */
const OPEN_ATTEMPTS = 5;

/**
 * Checks that `key` is a store key: a string `<sessionId>/<id>` with both parts non-empty.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` otherwise.
 */
function checkKey(key: unknown): string {
  if (typeof key !== 'string') throw invalidArgument('key', `a store key must be a string, got ${describe(key)}`);
  const slash = key.indexOf('/');
  if (slash <= 0 || slash === key.length - 1) {
    throw invalidArgument('key', `a store key must look like "<sessionId>/<id>", got ${JSON.stringify(key)}`);
  }
  if (key.length > MAX_KEY_LENGTH) throw invalidArgument('key', `a store key must be at most ${MAX_KEY_LENGTH} characters, got ${key.length}`);
  return key;
}

/** The typed error for what IndexedDB threw or reported. */
function storeFailed(what: string, cause: unknown): AutoContextError {
  if (cause instanceof AutoContextError) return cause;
  const name = cause !== null && typeof cause === 'object' ? (cause as { name?: unknown }).name : undefined;
  const said = cause !== null && typeof cause === 'object' ? (cause as { message?: unknown }).message : undefined;
  const detail = typeof said === 'string' && said.length > 0 ? `: ${said}` : '';
  const message = name === 'QuotaExceededError'
    ? `IndexedDB ${what} failed: the origin is out of storage quota${detail}`
    : `IndexedDB ${what} failed${typeof name === 'string' ? ` (${name})` : ''}${detail}`;
  return new AutoContextError('STORE_FAILED', message, { cause });
}

/** Runs one request in its own transaction of a store (see `IndexedDBStore.#run`). */
type Run = <T>(mode: IDBTransactionMode, what: string, make: (store: IDBObjectStore) => IDBRequest<T>) => Promise<T>;

/** Each store's transaction runner, for the session store built on one. */
const runners = new WeakMap<IndexedDBStore, Run>();

/** Resolves with a request's result; rejects with its error. */
function settle<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/**
 * An {@link OffloadStore} keeping values in one IndexedDB object store.
 *
 * Keys are the engine's `<sessionId>/<uuid>`; values are strings, stored and returned exactly.
 */
export class IndexedDBStore implements OffloadStore {
  /** Values come as UTF-8 bytes, kept as they are; see {@link OffloadStore.acceptsBytes}. */
  readonly acceptsBytes = true;
  /** Name of the database. */
  readonly databaseName: string;
  /** Name of the object store. */
  readonly storeName: string;
  readonly #factory: IDBFactory;
  readonly #durability: 'strict' | 'relaxed' | 'default';
  #db: Promise<IDBDatabase> | null = null;

  /**
   * @param options - database and object store names, write durability, and the IndexedDB to use.
   * @throws {@link AutoContextError} `INVALID_CONFIG` for bad options, or when the runtime has no
   *   IndexedDB and none is given.
   */
  constructor(options: IndexedDBStoreOptions = {}) {
    if (options === null || typeof options !== 'object') {
      throw new AutoContextError('INVALID_CONFIG', `IndexedDBStore options must be an object, got ${describe(options)}`);
    }
    const { databaseName = 'autocontext', storeName = 'offloads', durability = 'strict' } = options;
    for (const [field, value] of [['databaseName', databaseName], ['storeName', storeName]] as const) {
      if (typeof value !== 'string' || value.length === 0) {
        throw new AutoContextError('INVALID_CONFIG', `option \`${field}\` must be a non-empty string, got ${describe(value)}`, { field });
      }
    }
    if (durability !== 'strict' && durability !== 'relaxed' && durability !== 'default') {
      throw new AutoContextError('INVALID_CONFIG', `option \`durability\` must be 'strict', 'relaxed' or 'default', got ${JSON.stringify(durability)}`, {
        field: 'durability',
      });
    }
    const factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    if (factory == null || typeof factory.open !== 'function') {
      throw new AutoContextError('INVALID_CONFIG', 'IndexedDB is not available in this runtime; pass option `indexedDB`', { field: 'indexedDB' });
    }
    this.databaseName = databaseName;
    this.storeName = storeName;
    this.#durability = durability;
    this.#factory = factory;
    runners.set(this, (mode, what, make) => this.#run(mode, what, make));
  }

  /** The value under `key`, or `null` when there is none. */
  async get(key: string): Promise<string | null> {
    checkKey(key);
    const value = await this.#run('readonly', 'read', (store) => store.get(key));
    if (value === undefined) return null;
    if (!isValue(value)) {
      throw new AutoContextError('STORE_FAILED', `IndexedDB holds ${describe(value)} under ${JSON.stringify(key)}, not a string or bytes`);
    }
    return text(value);
  }

  /** Stores `value` under `key` (a string or its UTF-8 bytes); resolves once the write has committed. */
  async put(key: string, value: string | Uint8Array): Promise<void> {
    checkKey(key);
    checkValue(value);
    await this.#run('readwrite', 'write', (store) => store.put(value, key));
  }

  /** Removes `key`; removing a key that is not there is not an error. */
  async delete(key: string): Promise<void> {
    checkKey(key);
    await this.#run('readwrite', 'delete', (store) => store.delete(key));
  }

  /**
   * Every key stored, sorted; with `prefix` (for example `'<sessionId>/'`), only the keys that
   * start with it.
   */
  async keys(prefix = ''): Promise<string[]> {
    if (typeof prefix !== 'string') throw invalidArgument('prefix', `a key prefix must be a string, got ${describe(prefix)}`);
    const all = await this.#run('readonly', 'read', (store) => store.getAllKeys(IDBKeyRange.lowerBound(prefix)));
    const out: string[] = [];
    for (const k of all) {
      if (typeof k !== 'string' || !k.startsWith(prefix)) break; // keys sort by code unit: the prefix's run is contiguous
      out.push(k);
    }
    return out;
  }

  /** Removes every key that starts with `prefix` (for example a finished session's `'<sessionId>/'`). */
  async clear(prefix: string): Promise<void> {
    if (typeof prefix !== 'string' || prefix.length === 0) {
      throw invalidArgument('prefix', `clear needs a non-empty key prefix, got ${typeof prefix === 'string' ? 'an empty string' : describe(prefix)}`);
    }
    const keys = await this.keys(prefix);
    if (keys.length === 0) return;
    await this.#run('readwrite', 'delete', (store) => {
      let last!: IDBRequest<undefined>;
      for (const k of keys) last = store.delete(k);
      return last;
    });
  }

  /**
   * Closes the connection to the database, so that other code can delete or upgrade it. The store
   * stays usable: the next operation opens a new connection.
   */
  close(): void {
    const db = this.#db;
    this.#db = null;
    db?.then((d) => d.close(), () => {});
  }

  /** The open database, opening (and creating or upgrading) it on first use. */
  #database(): Promise<IDBDatabase> {
    if (this.#db === null) {
      const opening = this.#open();
      this.#db = opening;
      opening.then(
        (db) => {
          const forget = () => {
            if (this.#db === opening) this.#db = null;
          };
          // Another connection wants to upgrade or delete the database: step aside, reopen later.
          db.onversionchange = () => {
            db.close();
            forget();
          };
          db.onclose = forget; // closed by the browser (storage cleared, for example)
        },
        () => {
          if (this.#db === opening) this.#db = null;
        },
      );
    }
    return this.#db;
  }

  async #open(): Promise<IDBDatabase> {
    let version: number | undefined;
    for (let attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
      const request = version === undefined ? this.#factory.open(this.databaseName) : this.#factory.open(this.databaseName, version);
      request.onupgradeneeded = () => {
        const db = request.result;
        if (!db.objectStoreNames.contains(this.storeName)) db.createObjectStore(this.storeName);
      };
      let db: IDBDatabase;
      try {
        db = await settle(request);
      } catch (e) {
        // A concurrent opener got to a higher version first: open that one.
        if ((e as { name?: unknown } | null)?.name === 'VersionError' && version !== undefined) {
          version = undefined;
          continue;
        }
        throw storeFailed('open', e);
      }
      if (db.objectStoreNames.contains(this.storeName)) return db;
      // The database exists without our object store (another store name shares it): add it.
      version = db.version + 1;
      db.close();
    }
    throw new AutoContextError('STORE_FAILED', `IndexedDB open failed: could not create object store ${JSON.stringify(this.storeName)} in ${JSON.stringify(this.databaseName)}`);
  }

  /**
   * Runs one request in its own transaction and resolves with its result once the transaction
   * has committed; any failure (the request's, or the transaction's abort, as for quota) rejects
   * with a `STORE_FAILED` error whose cause is the browser's.
   */
  async #run<T>(mode: IDBTransactionMode, what: string, make: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
    let db = await this.#database();
    let tx: IDBTransaction;
    try {
      tx = this.#transaction(db, mode);
    } catch (e) {
      // The connection closed under us (another tab upgraded or deleted the database): reopen once.
      if ((e as { name?: unknown } | null)?.name !== 'InvalidStateError') throw storeFailed(what, e);
      if (this.#db !== null && (await this.#db.catch(() => null)) === db) this.#db = null;
      db = await this.#database();
      try {
        tx = this.#transaction(db, mode);
      } catch (again) {
        throw storeFailed(what, again);
      }
    }
    return new Promise<T>((resolve, reject) => {
      let request: IDBRequest<T>;
      try {
        request = make(tx.objectStore(this.storeName));
      } catch (e) {
        try {
          tx.abort();
        } catch {
          // already finished
        }
        reject(storeFailed(what, e));
        return;
      }
      tx.oncomplete = () => resolve(request.result);
      tx.onabort = () => reject(storeFailed(what, tx.error ?? request.error ?? new DOMException('The transaction was aborted', 'AbortError')));
    });
  }

  #transaction(db: IDBDatabase, mode: IDBTransactionMode): IDBTransaction {
    return mode === 'readwrite'
      ? db.transaction(this.storeName, mode, { durability: this.#durability })
      : db.transaction(this.storeName, mode);
  }
}

/** Options of an {@link IndexedDBSessionStore}: those of an {@link IndexedDBStore}, whose object store defaults to `'sessions'`. */
export type IndexedDBSessionStoreOptions = IndexedDBStoreOptions;

/** What a session's record holds. */
interface SessionRecord {
  revision: number;
  state: string;
}

/**
 * A {@link SessionStore} in the browser's IndexedDB: one record per session (its id the key) in
 * an object store of its own (default database `'autocontext'`, object store `'sessions'`). A
 * save reads the stored revision and writes the new record in one `readwrite` transaction, so
 * of two tabs saving the same revision the second gets `CONFLICT` and the first's state stays.
 *
 * ```js
 * import { AutoContextMemory } from 'autocontext';
 * import { IndexedDBSessionStore, IndexedDBStore } from 'autocontext/stores/indexeddb';
 *
 * const store = new IndexedDBStore();
 * const sessions = new IndexedDBSessionStore();
 * const memory = (await AutoContextMemory.load(sessions, 'chat-1', { store, summarize }))
 *   ?? new AutoContextMemory({ sessionId: 'chat-1', store, summarize });
 * ```
 */
export class IndexedDBSessionStore implements SessionStore {
  /** The object store holding the sessions. */
  readonly #store: IndexedDBStore;

  /**
   * @param options - database and object store names (default `'autocontext'` and
   *   `'sessions'`), write durability, and the IndexedDB to use.
   * @throws {@link AutoContextError} `INVALID_CONFIG` for bad options.
   */
  constructor(options: IndexedDBSessionStoreOptions = {}) {
    if (options === null || typeof options !== 'object') {
      throw new AutoContextError('INVALID_CONFIG', `IndexedDBSessionStore options must be an object, got ${describe(options)}`);
    }
    this.#store = new IndexedDBStore({ ...options, storeName: options.storeName ?? 'sessions' });
  }

  /** Name of the database. */
  get databaseName(): string {
    return this.#store.databaseName;
  }

  /** Name of the object store. */
  get storeName(): string {
    return this.#store.storeName;
  }

  /** The session's last saved state and revision, or `null`. */
  async load(sessionId: string): Promise<SavedSession | null> {
    checkSessionId(sessionId);
    const run = runners.get(this.#store) as Run;
    const record = await run('readonly', 'read', (store) => store.get(sessionId) as IDBRequest<unknown>);
    if (record === undefined) return null;
    const r = record as Partial<SessionRecord> | null;
    if (r === null || typeof r !== 'object' || typeof r.state !== 'string') {
      throw new AutoContextError('STORE_FAILED', `IndexedDB holds ${describe(record)} as session ${JSON.stringify(sessionId)}, not one this store wrote`);
    }
    return { revision: storedRevision(sessionId, r.revision), state: r.state };
  }

  /**
   * Saves `session` if its revision follows the stored one, in one transaction.
   *
   * @throws `AutoContextError` `CONFLICT` otherwise (nothing is written).
   */
  async save(sessionId: string, session: SavedSession): Promise<void> {
    checkSessionId(sessionId);
    const next = checkSaved(session);
    const run = runners.get(this.#store) as Run;
    let refused: AutoContextError | null = null;
    try {
      await run('readwrite', 'write', (store) => {
        const read = store.get(sessionId) as IDBRequest<unknown>;
        read.onsuccess = () => {
          const found = read.result as Partial<SessionRecord> | undefined;
          let stored: number;
          try {
            stored = storedRevision(sessionId, found?.revision);
          } catch (e) {
            refused = e as AutoContextError;
            read.transaction?.abort();
            return;
          }
          if (stored !== next.revision - 1) {
            refused = conflict(sessionId, next.revision, stored);
            read.transaction?.abort();
            return;
          }
          store.put({ revision: next.revision, state: next.state } satisfies SessionRecord, sessionId);
        };
        return read;
      });
    } catch (e) {
      throw refused ?? e;
    }
  }

  /** Closes the connection to the database (the store stays usable). */
  close(): void {
    this.#store.close();
  }
}
