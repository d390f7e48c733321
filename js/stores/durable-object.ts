/**
 * Saved sessions in a Cloudflare Durable Object's storage, with one writer per session
 * enforced.
 *
 * ```js
 * import { DurableObject } from 'cloudflare:workers';
 * import { AutoContextMemory } from 'autocontext';
 * import { CloudflareKVStore } from 'autocontext/stores/cloudflare-kv';
 * import { DurableObjectSessionStore } from 'autocontext/stores/durable-object';
 *
 * export class Conversation extends DurableObject {
 *   async turn(messages) {
 *     const sessions = new DurableObjectSessionStore(this.ctx.storage);
 *     const host = { store: new CloudflareKVStore(this.env.OFFLOADS), summarize };
 *     const id = this.ctx.id.toString();
 *     const memory = (await AutoContextMemory.load(sessions, id, host)) ?? new AutoContextMemory({ sessionId: id, ...host });
 *     memory.add(messages);
 *     await memory.compressIfNeeded();
 *     await memory.save(sessions); // CONFLICT if another request saved this session meanwhile
 *   }
 * }
 * ```
 *
 * A session lives under the storage keys `session:<sessionId>:revision`, `…:parts` and
 * `…:<i>` (the state in parts of at most 60,000 UTF-16 code units, under the 128 KiB value
 * limit of every Durable Object storage backend). A save reads the stored revision and writes
 * every part inside one storage transaction, so it is atomic: of two requests of one object
 * that saved the same revision (two memories restored from one state), the second gets
 * `CONFLICT` and the first's state stays whole.
 *
 * @module
 */

import { AutoContextError, describe } from '../errors.js';
import { checkSaved, checkSessionId, conflict, split, storedRevision } from '../session-store.js';
import type { SavedSession, SessionStore } from '../types.js';

/** The operations of a Durable Object's storage (or of a transaction in it) this store uses. */
export interface DurableObjectStorageOps {
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(keys: string[]): Promise<number>;
}

/** The part of `DurableObjectStorage` (`this.ctx.storage`) this store uses. */
export interface DurableObjectStorageLike extends DurableObjectStorageOps {
  transaction<T>(closure: (txn: DurableObjectStorageOps) => Promise<T>): Promise<T>;
}

/** UTF-16 code units per stored part of a state: 120 KB at most, under every backend's 128 KiB value limit. */
export const PART_UNITS = 60_000;

/** Keys one storage call may take. */
const KEYS_PER_CALL = 128;

function failed(message: string, cause?: unknown): AutoContextError {
  return new AutoContextError('STORE_FAILED', message, cause === undefined ? {} : { cause });
}

/** Runs `fn` on `keys` in groups a storage call accepts. */
async function inGroups<T>(keys: string[], fn: (group: string[]) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let at = 0; at < keys.length; at += KEYS_PER_CALL) out.push(await fn(keys.slice(at, at + KEYS_PER_CALL)));
  return out;
}

/**
 * A {@link SessionStore} in a Durable Object's storage: one writer per session, checked and
 * written in one storage transaction.
 */
export class DurableObjectSessionStore implements SessionStore {
  /** The object's storage. */
  readonly storage: DurableObjectStorageLike;

  /**
   * @param storage - the Durable Object's `this.ctx.storage`.
   * @throws {@link AutoContextError} `INVALID_CONFIG` when it is not a Durable Object storage.
   */
  constructor(storage: DurableObjectStorageLike) {
    for (const method of ['get', 'put', 'delete', 'transaction'] as const) {
      if (storage === null || typeof storage !== 'object' || typeof (storage as unknown as Record<string, unknown>)[method] !== 'function') {
        throw new AutoContextError('INVALID_CONFIG', `DurableObjectSessionStore needs a Durable Object's storage (this.ctx.storage), got ${describe(storage)}`, {
          field: 'storage',
        });
      }
    }
    this.storage = storage;
  }

  /** The session's last saved state and revision, or `null`. */
  async load(sessionId: string): Promise<SavedSession | null> {
    const base = `session:${checkSessionId(sessionId)}:`;
    return this.storage.transaction(async (txn) => {
      const head = await txn.get([`${base}revision`, `${base}parts`]);
      const revision = storedRevision(sessionId, head.get(`${base}revision`));
      if (revision === 0) return null;
      const parts = head.get(`${base}parts`);
      if (!Number.isSafeInteger(parts) || (parts as number) < 1) throw failed(`session ${JSON.stringify(sessionId)} has no valid part count in storage`);
      const keys = Array.from({ length: parts as number }, (_, i) => `${base}${i}`);
      const maps = await inGroups(keys, (group) => txn.get(group));
      const texts = keys.map((k) => maps.find((m) => m.has(k))?.get(k));
      const missing = texts.findIndex((t) => typeof t !== 'string');
      if (missing >= 0) throw failed(`part ${missing} of session ${JSON.stringify(sessionId)} is missing from storage`);
      return { revision, state: texts.join('') };
    });
  }

  /**
   * Saves `session` if its revision follows the stored one, in one transaction.
   *
   * @throws `AutoContextError` `CONFLICT` otherwise (nothing is written).
   */
  async save(sessionId: string, session: SavedSession): Promise<void> {
    const base = `session:${checkSessionId(sessionId)}:`;
    const next = checkSaved(session);
    const parts = split(next.state, PART_UNITS);
    await this.storage.transaction(async (txn) => {
      const head = await txn.get([`${base}revision`, `${base}parts`]);
      const stored = storedRevision(sessionId, head.get(`${base}revision`));
      if (stored !== next.revision - 1) throw conflict(sessionId, next.revision, stored);
      const before = head.get(`${base}parts`);
      const entries: [string, unknown][] = parts.map((p, i) => [`${base}${i}`, p]);
      entries.push([`${base}parts`, parts.length], [`${base}revision`, next.revision]);
      for (let at = 0; at < entries.length; at += KEYS_PER_CALL) await txn.put(Object.fromEntries(entries.slice(at, at + KEYS_PER_CALL)));
      if (Number.isSafeInteger(before) && (before as number) > parts.length) {
        const stale = Array.from({ length: (before as number) - parts.length }, (_, i) => `${base}${parts.length + i}`);
        await inGroups(stale, (group) => txn.delete(group));
      }
    });
  }
}
