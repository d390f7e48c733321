/**
 * Incremental saves: what {@link AutoContextMemory.save} writes is the state's small head in the
 * session store, and the state's long lists (the working list, the offload index, the events)
 * in pages of {@link PAGE} items in the offload store. A page whose text a previous save already
 * wrote is named again, not written again, so a save after a turn writes the head and the page
 * or two the turn changed: O(what changed), not O(the working list).
 *
 * Page keys are `<sessionId>/state-<writer>-<n>`, with a random `writer` per memory, so two
 * writers of one session never write the same key: the one whose save is refused (`CONFLICT`)
 * deletes the pages it wrote, and the winner's are untouched. Once a save commits, the pages
 * only the head before it named are deleted. The session store's atomic check of the revision
 * is what makes one writer win; the pages need no check of their own.
 *
 * The engine cuts the state into its head and pages (`WasmMemory.toJsonPages`) and takes them
 * back (`WasmMemory.fromPages`), so neither a save nor a load parses, writes or copies the whole
 * state in JavaScript: a Worker restores and saves its session on every request. The head also
 * carries a line of facts per page of the working list (`pageFacts`), with which the engine
 * leaves the pages before the last exchange unparsed until something needs their messages, and
 * a digest of the events' pages (`eventsDigest`), with which it leaves the events unparsed until
 * a pass or `events()` reads them.
 *
 * @module
 * @internal
 */

import { AutoContextError } from './errors.js';

/** Items per page (the engine cuts pages of as many: src/engine/pages.rs). */
export const PAGE = 32;

/** The state's fields kept in pages. */
const FIELDS = ['working', 'offloads', 'events'] as const;

/**
 * The pages a save wrote or named: a page's text → its key. Keyed by the text itself, so a page
 * is recognized exactly (no digest to compute, nothing to collide); the strings are the pages
 * the memory holds anyway, and the engine cuts an unchanged page to the same text every time.
 */
export type PageIndex = Map<string, string>;

/** What a save writes: the head for the session store, and the pages not already stored. */
export interface Paginated {
  head: string;
  fresh: { key: string; text: string }[];
  index: PageIndex;
}

/** Bytes as lower-case hex. */
function hex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

/** A random name for a writer's pages. */
export function writerName(): string {
  return hex(crypto.getRandomValues(new Uint8Array(6)));
}

/**
 * The head and pages of a state the engine cut (`[head, counts, pages...]`, see
 * `WasmMemory.toJsonPages`) as a save writes them: the head carries `revision` and names the
 * pages. `previous` names the pages already stored; `key` names a new page.
 */
export function paginate(cut: string[], revision: number, previous: PageIndex, key: () => string): Paginated {
  const [headText, counts, ...texts] = cut as [string, string, ...string[]];
  const fresh: { key: string; text: string }[] = [];
  const index: PageIndex = new Map();
  const pages: Record<string, string[]> = {};
  const per = counts.split(',').map(Number);
  let next = 0;
  for (const [i, field] of FIELDS.entries()) {
    const keys: string[] = [];
    for (let n = 0; n < (per[i] ?? 0); n++) {
      const text = texts[next++] as string;
      let k = index.get(text) ?? previous.get(text);
      if (k === undefined) {
        k = key();
        fresh.push({ key: k, text });
      }
      index.set(text, k);
      keys.push(k);
    }
    pages[field] = keys;
  }
  const rest = headText.length > 2 ? `${headText.slice(0, -1)},` : '{';
  const head = `${rest}"revision":${revision},"autocontextPages":${JSON.stringify({ size: PAGE, ...pages })}}`;
  return { head, fresh, index };
}

/** A paged state read back: its head (parsed) and its pages. */
export interface Assembled {
  head: Record<string, unknown>;
  counts: number[];
  pages: string[];
  keys: string[];
  index: PageIndex;
}

/**
 * The head {@link paginate} wrote and its pages, read with `get`, with the index of those pages;
 * `null` for a state that is not paged (it is restored as it is). The pages are not parsed here:
 * the engine parses each where it restores the state (`WasmMemory.fromPages`), and one that is
 * not a JSON array is named by {@link notAPage}.
 *
 * @throws {@link AutoContextError} `STORE_FAILED` when a page is missing;
 *   `INVALID_STATE` when the head names pages of another session.
 */
export async function assemble(stateText: string, sessionId: string, get: (key: string) => Promise<string | null | undefined>): Promise<Assembled | null> {
  // Only a head names pages: a state without the word is restored as it is, unparsed here.
  if (!stateText.includes('"autocontextPages"')) return null;
  let head: Record<string, unknown>;
  try {
    head = JSON.parse(stateText) as Record<string, unknown>;
  } catch {
    return null; // fromJSON says what is wrong with it
  }
  const paged = head?.autocontextPages as Record<string, unknown> | undefined;
  if (paged === undefined || paged === null || typeof paged !== 'object') return null;
  const counts: number[] = [];
  const all: string[] = [];
  for (const field of FIELDS) {
    const keys = paged[field];
    if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string' && k.startsWith(`${sessionId}/state-`))) {
      throw new AutoContextError('INVALID_STATE', `the saved state's pages of ${field} are not pages of session ${JSON.stringify(sessionId)}`, { field });
    }
    all.push(...(keys as string[]));
    counts.push(keys.length);
  }
  const read = await readAll(all, get);
  const index: PageIndex = new Map();
  const pages: string[] = [];
  // The first page in order that failed is the one named, whichever failed first in time.
  for (const [i, key] of all.entries()) {
    const got = read[i] as Read;
    if ('error' in got) throw new AutoContextError('STORE_FAILED', `the offload store failed to get page ${key} of the saved state`, { cause: got.error });
    if (typeof got.text !== 'string') throw notAPage(key, got.text);
    index.set(got.text, key);
    pages.push(got.text);
  }
  return { head, counts, pages, keys: all, index };
}

/** Pages a load asks the store for at once. */
const READS_AT_ONCE = 8;

/** What a get of a page gave: its text, or what it threw. */
type Read = { text: string | null | undefined } | { error: unknown };

/**
 * Gets every key, {@link READS_AT_ONCE} at a time: a get of a KV namespace or a database is a
 * round trip, and one after another a load waited for as many round trips as the state has pages.
 */
async function readAll(keys: readonly string[], get: (key: string) => Promise<string | null | undefined>): Promise<Read[]> {
  const out: Read[] = new Array(keys.length);
  let next = 0;
  const reader = async (): Promise<void> => {
    while (next < keys.length) {
      const i = next++;
      try {
        out[i] = { text: await get(keys[i] as string) };
      } catch (error) {
        out[i] = { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, keys.length) }, reader));
  return out;
}

/** `STORE_FAILED` for page `key`, missing from the store (`text` null or undefined) or not a page. */
export function notAPage(key: string, text: unknown): AutoContextError {
  return new AutoContextError('STORE_FAILED', `page ${key} of the saved state is ${text == null ? 'missing from' : 'not a page in'} the offload store; was the store cleared?`);
}
