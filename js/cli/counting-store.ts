/**
 * An offload store wrapper that remembers the size of every value still stored, so a report
 * can say how much the offloads hold.
 *
 * @module
 */

import type { OffloadStore } from '../types.js';

const encoder = new TextEncoder();

/** Passes every call to `inner` and counts the bytes per key written. */
export class CountingStore implements OffloadStore {
  /** UTF-8 bytes of each key's value. */
  readonly sizes = new Map<string, number>();

  /** Takes bytes when `inner` does. */
  readonly acceptsBytes: boolean;

  constructor(readonly inner: OffloadStore) {
    this.acceptsBytes = inner.acceptsBytes === true;
  }

  async get(key: string): Promise<string | null> {
    return (await this.inner.get(key)) ?? null;
  }

  async put(key: string, value: string | Uint8Array): Promise<void> {
    await this.inner.put(key, value);
    this.sizes.set(key, typeof value === 'string' ? encoder.encode(value).length : value.length);
  }

  async delete(key: string): Promise<void> {
    await this.inner.delete(key);
    this.sizes.delete(key);
  }
}
