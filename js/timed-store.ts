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
 * The engine hands each value over as UTF-8 bytes: a store that says it takes them
 * ({@link OffloadStore.acceptsBytes}) gets a copy of those bytes, any other store the text decoded from
 * them, as before.
 *
 * @module
 */

import { text } from './bytes.js';
import { AutoContextError } from './errors.js';
import type { OffloadStore } from './types.js';
import type { WasmStore } from './wasm/autocontext.js';

/** The engine's default `storeTimeoutMs`. */
export const DEFAULT_STORE_TIMEOUT_MS = 30_000;

/** What {@link timedStore} reports for a call that failed or timed out, as it happens. */
export type StoreFailure = (operation: 'get' | 'put' | 'delete', key: string, error: AutoContextError) => void;

/**
 * The store as the engine calls it: the same methods, each bounded by `timeoutMs()`; a call
 * that fails or times out is reported to `onFailure` as well.
 */
export function timedStore(store: OffloadStore, timeoutMs: () => number, onFailure?: StoreFailure): WasmStore {
  const acceptsBytes = store.acceptsBytes === true;
  return {
    get: (key: string) => bounded('get', key, () => store.get(key), timeoutMs(), onFailure),
    // `view` lives in the engine's memory only during this call: copied or decoded right away.
    put: (key: string, view: Uint8Array) => {
      const value = acceptsBytes ? view.slice() : text(view);
      return bounded('put', key, () => store.put(key, value), timeoutMs(), onFailure, () => {
        // The pass gave up on this key before it landed; take it back out.
        void settle(() => store.delete(key)).catch(() => undefined);
      });
    },
    delete: (key: string) => bounded('delete', key, () => store.delete(key), timeoutMs(), onFailure),
  };
}

/** The host call as a promise: a synchronous throw becomes a rejection with the same value. */
function settle<T>(op: () => T | Promise<T>): Promise<T> {
  return new Promise<T>((resolve) => resolve(op()));
}

function bounded<T>(
  name: 'get' | 'put' | 'delete',
  key: string,
  op: () => T | Promise<T>,
  ms: number,
  onFailure?: StoreFailure,
  late?: () => void,
): Promise<T> {
  const work = settle(op);
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      const error = new AutoContextError('STORE_FAILED', `store.${name}(${JSON.stringify(key)}) did not answer within ${ms} ms`);
      onFailure?.(name, key, error);
      reject(error);
    }, ms);
  });
  work.then(
    () => {
      if (timedOut) late?.();
    },
    (e: unknown) => {
      if (!timedOut) onFailure?.(name, key, new AutoContextError('STORE_FAILED', `store.${name}(${JSON.stringify(key)}) failed`, { cause: e }));
    },
  );
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
