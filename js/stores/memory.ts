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

import type { OffloadStore } from '../types.js';

/** A Map-backed {@link OffloadStore}. */
export class MemoryStore implements OffloadStore {
  readonly #map = new Map<string, string>();

  /** The value under `key`, or `null`. */
  async get(key: string): Promise<string | null> {
    return this.#map.get(key) ?? null;
  }

  /** Stores `value` under `key`. */
  async put(key: string, value: string): Promise<void> {
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
