/**
 * Bounds the host's store calls, so a store that never answers cannot hold a compression pass,
 * a reload, or every later `compressIfNeeded` (which share the running pass) forever.
 *
 * Each `get`, `put` and `delete` the engine makes races a timer of `storeTimeoutMs`; when the
 * timer wins, the call fails with a `STORE_FAILED` {@link AutoContextError} that becomes the
 * `cause` of the engine's own error: the pass fails and leaves the memory exactly as it was, a
 * reload rejects. A put that answers after it timed out belongs to a pass that has already
 * given up and deleted its other offloads, so it is deleted as soon as it lands, leaving no
 * orphan. Whatever the store throws or rejects with passes through unchanged.
 *
 * @module
 */

import { AutoContextError } from './errors.js';
import type { OffloadStore } from './types.js';
import type { WasmStore } from './wasm/autocontext.js';

/** The engine's default `storeTimeoutMs`. */
export const DEFAULT_STORE_TIMEOUT_MS = 30_000;

/** The store as the engine calls it: the same methods, each bounded by `timeoutMs()`. */
export function timedStore(store: OffloadStore, timeoutMs: () => number): WasmStore {
  return {
    get: (key: string) => bounded('get', key, () => store.get(key), timeoutMs()),
    put: (key: string, value: string) =>
      bounded('put', key, () => store.put(key, value), timeoutMs(), () => {
        // The pass gave up on this key before it landed; take it back out.
        void settle(() => store.delete(key)).catch(() => undefined);
      }),
    delete: (key: string) => bounded('delete', key, () => store.delete(key), timeoutMs()),
  };
}

/** The host call as a promise: a synchronous throw becomes a rejection with the same value. */
function settle<T>(op: () => T | Promise<T>): Promise<T> {
  return new Promise<T>((resolve) => resolve(op()));
}

function bounded<T>(name: string, key: string, op: () => T | Promise<T>, ms: number, late?: () => void): Promise<T> {
  const work = settle(op);
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new AutoContextError('STORE_FAILED', `store.${name}(${JSON.stringify(key)}) did not answer within ${ms} ms`));
    }, ms);
  });
  work.then(
    () => {
      if (timedOut) late?.();
    },
    () => undefined,
  );
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
