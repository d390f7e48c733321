/**
 * An offload store in memory: the simplest {@link OffloadStore}, for tests, request handlers
 * and short-lived sessions. Originals live as long as the store object does.
 *
 * ```js
 * import { MemoryStore } from 'autocontext/stores/memory';
 * const store = new MemoryStore();
 * ```
 *
 * @module
 */

import { text } from '../bytes.js';
import { checkSaved, checkSessionId, conflict } from '../session-store.js';
import type { OffloadStore, SavedSession, SessionStore } from '../types.js';

/**
 * A Map-backed {@link OffloadStore}. It takes the engine's values as bytes and keeps them so
 * (mostly-ASCII text takes a byte a character, where a JavaScript string with any other
 * character takes two); `get` turns them back into text, which only a reload asks for.
 */
export class MemoryStore implements OffloadStore {
  readonly #map = new Map<string, string | Uint8Array>();

  /** Values come as UTF-8 bytes; see {@link OffloadStore.acceptsBytes}. */
  readonly acceptsBytes = true;

  /** The value under `key`, or `null`. */
  async get(key: string): Promise<string | null> {
    const value = this.#map.get(key);
    return value === undefined ? null : text(value);
  }

  /** Stores `value` under `key` (a `Uint8Array` is kept as it is, not copied). */
  async put(key: string, value: string | Uint8Array): Promise<void> {
    this.#map.set(key, value);
  }

  /** Removes `key` (no error when absent). */
  async delete(key: string): Promise<void> {
    this.#map.delete(key);
  }

  /** Number of values stored. */
  get size(): number {
    return this.#map.size;
  }

  /**
   * All keys, in insertion order; with `prefix` (for example `'<sessionId>/'`), only the keys
   * that start with it.
   */
  keys(prefix = ''): string[] {
    return [...this.#map.keys()].filter((key) => key.startsWith(prefix));
  }

  /** Removes every value. */
  clear(): void {
    this.#map.clear();
  }
}

/**
 * A Map-backed {@link SessionStore}: saved sessions live as long as the store object does. A
 * save checks and writes in one synchronous step, so of two memories saving the same revision
 * one gets `CONFLICT`.
 *
 * ```js
 * import { AutoContextMemory } from 'autocontext';
 * import { MemorySessionStore } from 'autocontext/stores/memory';
 * const sessions = new MemorySessionStore();
 * await memory.save(sessions);
 * const again = await AutoContextMemory.load(sessions, memory.sessionId, { store });
 * ```
 */
export class MemorySessionStore implements SessionStore {
  readonly #map = new Map<string, SavedSession>();

  /** The session's last saved state and revision, or `null`. */
  async load(sessionId: string): Promise<SavedSession | null> {
    checkSessionId(sessionId);
    const saved = this.#map.get(sessionId);
    return saved === undefined ? null : { ...saved };
  }

  /**
   * Saves `session` if its revision follows the stored one.
   *
   * @throws `AutoContextError` `CONFLICT` otherwise.
   */
  async save(sessionId: string, session: SavedSession): Promise<void> {
    checkSessionId(sessionId);
    const next = checkSaved(session);
    const stored = this.#map.get(sessionId)?.revision ?? 0;
    if (stored !== next.revision - 1) throw conflict(sessionId, next.revision, stored);
    this.#map.set(sessionId, next);
  }

  /** The ids of the sessions saved. */
  sessions(): string[] {
    return [...this.#map.keys()];
  }
}
