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
 * @module
 * @internal
 */

import { AutoContextError } from './errors.js';

/** Items per page. */
export const PAGE = 32;

/** The state's fields kept in pages. */
const FIELDS = ['working', 'offloads', 'events'] as const;

/** The pages a save wrote or named: digest of a page's text → its key. */
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

/** SHA-256 of `text`, as hex. */
async function digest(text: string): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))));
}

/** A random name for a writer's pages. */
export function writerName(): string {
  return hex(crypto.getRandomValues(new Uint8Array(6)));
}

/**
 * Splits a state (JSON text, as `toJSON()` writes it) into a head and pages. `previous` names the
 * pages already stored; `key` names a new page.
 */
export async function paginate(stateText: string, previous: PageIndex, key: () => string): Promise<Paginated> {
  const state = JSON.parse(stateText) as Record<string, unknown>;
  const pages: Record<string, string[]> = {};
  const fresh: { key: string; text: string }[] = [];
  const index: PageIndex = new Map();
  for (const field of FIELDS) {
    const items = (state[field] ?? []) as unknown[];
    delete state[field];
    const keys: string[] = [];
    for (let at = 0; at < items.length; at += PAGE) {
      const text = JSON.stringify(items.slice(at, at + PAGE));
      const d = await digest(text);
      let k = index.get(d) ?? previous.get(d);
      if (k === undefined) {
        k = key();
        fresh.push({ key: k, text });
      }
      index.set(d, k);
      keys.push(k);
    }
    pages[field] = keys;
  }
  state.autocontextPages = { size: PAGE, ...pages };
  return { head: JSON.stringify(state), fresh, index };
}

/**
 * The whole state from a head {@link paginate} wrote, its pages read with `get`, and the index of
 * those pages; a state that is not paged comes back as it is.
 *
 * @throws {@link AutoContextError} `STORE_FAILED` when a page is missing or not a page;
 *   `INVALID_STATE` when the head names pages of another session.
 */
export async function assemble(
  stateText: string,
  sessionId: string,
  get: (key: string) => Promise<string | null | undefined>,
): Promise<{ state: string; index: PageIndex }> {
  let head: Record<string, unknown>;
  try {
    head = JSON.parse(stateText) as Record<string, unknown>;
  } catch {
    return { state: stateText, index: new Map() }; // fromJSON says what is wrong with it
  }
  const paged = head?.autocontextPages as Record<string, unknown> | undefined;
  if (paged === undefined || paged === null || typeof paged !== 'object') return { state: stateText, index: new Map() };
  delete head.autocontextPages;
  const index: PageIndex = new Map();
  for (const field of FIELDS) {
    const keys = paged[field];
    if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string' && k.startsWith(`${sessionId}/state-`))) {
      throw new AutoContextError('INVALID_STATE', `the saved state's pages of ${field} are not pages of session ${JSON.stringify(sessionId)}`, { field });
    }
    const items: unknown[] = [];
    for (const key of keys as string[]) {
      let text: string | null | undefined;
      try {
        text = await get(key);
      } catch (e) {
        throw new AutoContextError('STORE_FAILED', `the offload store failed to get page ${key} of the saved state`, { cause: e });
      }
      let page: unknown;
      try {
        page = typeof text === 'string' ? JSON.parse(text) : undefined;
      } catch {
        page = undefined;
      }
      if (!Array.isArray(page)) {
        throw new AutoContextError('STORE_FAILED', `page ${key} of the saved state is ${text == null ? 'missing from' : 'not a page in'} the offload store; was the store cleared?`);
      }
      index.set(await digest(text as string), key);
      items.push(...page);
    }
    head[field] = items;
  }
  return { state: JSON.stringify(head), index };
}
