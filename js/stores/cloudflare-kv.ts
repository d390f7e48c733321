/**
 * An offload store in a Cloudflare Workers KV namespace.
 *
 * ```js
 * import { AutoContextMemory } from 'autocontext';
 * import { CloudflareKVStore } from 'autocontext/stores/cloudflare-kv';
 *
 * export default {
 *   async fetch(request, env) {
 *     const store = new CloudflareKVStore(env.OFFLOADS, { prefix: 'offloads/', expirationTtl: 30 * 86_400 });
 *     const memory = new AutoContextMemory({ maxToken: 128_000, store, sessionId: 'chat-1' });
 *     // ...
 *   },
 * };
 * ```
 *
 * The engine's key `<sessionId>/<uuid>` becomes the KV key `<prefix><sessionId>/<uuid>`, so
 * several memories, and other data under other prefixes, can share one namespace. Values are
 * stored as text (UTF-8), so any string without lone surrogates comes back exactly; the engine
 * only writes such strings, and hands them over as their UTF-8 bytes, which KV stores as they
 * are.
 *
 * Workers KV is eventually consistent across locations: a value written in one location is
 * visible there at once, and elsewhere within about a minute. A conversation whose requests
 * are served from one place (a Durable Object, for example) reads its own offloads back at once.
 *
 * @module
 */

import { checkValue } from '../bytes.js';
import { AutoContextError, describe, invalidArgument } from '../errors.js';
import type { OffloadStore } from '../types.js';

/**
 * The part of a Workers `KVNamespace` binding this store uses. The binding itself
 * (`env.MY_KV`) is one; so is any object with these methods.
 */
export interface KVNamespaceLike {
  get(key: string, type: 'text'): Promise<string | null>;
  put(key: string, value: string | Uint8Array, options?: { expirationTtl?: number }): Promise<unknown>;
  delete(key: string): Promise<unknown>;
  list(options?: { prefix?: string; cursor?: string; limit?: number }): Promise<{
    keys: { name: string }[];
    list_complete: boolean;
    cursor?: string;
  }>;
}

/** Options of a {@link CloudflareKVStore}. */
export interface CloudflareKVStoreOptions {
  /** Put before every key, verbatim (for example `'offloads/'`); default none. */
  prefix?: string;
  /**
   * Seconds after which KV removes each value it stores (Cloudflare's minimum is 60); default:
   * values never expire. A reload after that finds nothing.
   */
  expirationTtl?: number;
}

/** Longest key Workers KV accepts, in UTF-8 bytes. */
const MAX_KEY_BYTES = 512;

/** Fewest seconds Workers KV accepts as `expirationTtl`. */
const MIN_TTL_SECONDS = 60;

const utf8 = new TextEncoder();

function configError(field: string, message: string): AutoContextError {
  return new AutoContextError('INVALID_CONFIG', message, { field });
}

/**
 * An {@link OffloadStore} keeping each value under its own key in a Workers KV namespace.
 */
export class CloudflareKVStore implements OffloadStore {
  /** Values come as UTF-8 bytes; see {@link OffloadStore.acceptsBytes}. */
  readonly acceptsBytes = true;
  /** The namespace binding. */
  readonly namespace: KVNamespaceLike;
  /** What every key starts with. */
  readonly prefix: string;
  /** Seconds each value lives, or `undefined` for ever. */
  readonly expirationTtl: number | undefined;

  /**
   * @param namespace - a `KVNamespace` binding, such as `env.OFFLOADS`.
   * @param options - a key prefix and an optional time to live.
   * @throws {@link AutoContextError} `INVALID_CONFIG` when the namespace is not a KV binding or
   *   an option is malformed.
   */
  constructor(namespace: KVNamespaceLike, options: CloudflareKVStoreOptions = {}) {
    for (const method of ['get', 'put', 'delete', 'list'] as const) {
      if (namespace === null || typeof namespace !== 'object' || typeof (namespace as unknown as Record<string, unknown>)[method] !== 'function') {
        throw configError('namespace', `CloudflareKVStore needs a KV namespace binding (an object with get, put, delete and list), got ${describe(namespace)}`);
      }
    }
    if (options === null || typeof options !== 'object') {
      throw configError('options', `CloudflareKVStore options must be an object, got ${describe(options)}`);
    }
    const { prefix = '', expirationTtl } = options;
    if (typeof prefix !== 'string') throw configError('prefix', `option \`prefix\` must be a string, got ${describe(prefix)}`);
    if (utf8.encode(prefix).length > MAX_KEY_BYTES / 2) {
      throw configError('prefix', `option \`prefix\` must be at most ${MAX_KEY_BYTES / 2} bytes, leaving room for the keys`);
    }
    if (expirationTtl !== undefined && !(Number.isInteger(expirationTtl) && expirationTtl >= MIN_TTL_SECONDS)) {
      throw configError('expirationTtl', `option \`expirationTtl\` must be a whole number of seconds, at least ${MIN_TTL_SECONDS}, got ${String(expirationTtl)}`);
    }
    this.namespace = namespace;
    this.prefix = prefix;
    this.expirationTtl = expirationTtl;
  }

  /**
   * The KV key that holds `key`.
   *
   * @throws {@link AutoContextError} `INVALID_ARGUMENT` unless `key` is a string
   *   `<sessionId>/<id>` with both parts non-empty that fits Workers KV's 512-byte key limit.
   */
  keyOf(key: string): string {
    if (typeof key !== 'string') throw invalidArgument('key', `a store key must be a string, got ${describe(key)}`);
    const slash = key.indexOf('/');
    if (slash <= 0 || slash === key.length - 1) {
      throw invalidArgument('key', `a store key must look like "<sessionId>/<id>", got ${JSON.stringify(key)}`);
    }
    const full = this.prefix + key;
    if (utf8.encode(full).length > MAX_KEY_BYTES) {
      throw invalidArgument('key', `store key ${JSON.stringify(key)} is longer than Workers KV's ${MAX_KEY_BYTES}-byte key limit`);
    }
    return full;
  }

  /** The value under `key`, or `null` when there is none. */
  async get(key: string): Promise<string | null> {
    const value = await this.namespace.get(this.keyOf(key), 'text');
    return value ?? null;
  }

  /** Stores `value` under `key` (with the store's time to live, if it has one). */
  async put(key: string, value: string | Uint8Array): Promise<void> {
    const full = this.keyOf(key);
    checkValue(value);
    await this.namespace.put(full, value, this.expirationTtl === undefined ? undefined : { expirationTtl: this.expirationTtl });
  }

  /** Removes `key`; removing a key that is not there is not an error. */
  async delete(key: string): Promise<void> {
    await this.namespace.delete(this.keyOf(key));
  }

  /**
   * Every key stored under this store's prefix, sorted, without the prefix; with `prefix`
   * (for example `'<sessionId>/'`), only the keys that start with it. Keys written in another
   * location may take a while to be listed.
   */
  async keys(prefix = ''): Promise<string[]> {
    if (typeof prefix !== 'string') throw invalidArgument('prefix', `a key prefix must be a string, got ${describe(prefix)}`);
    const out: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.namespace.list(cursor === undefined ? { prefix: this.prefix + prefix } : { prefix: this.prefix + prefix, cursor });
      for (const { name } of page.keys) out.push(name.slice(this.prefix.length));
      cursor = page.list_complete ? undefined : page.cursor;
    } while (cursor !== undefined && cursor !== '');
    return out.sort();
  }
}
