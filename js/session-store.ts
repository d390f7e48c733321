/**
 * What every session store shares: the checks on its arguments, the `CONFLICT` error a stale
 * save gets, and the splitting of a long state into parts for stores whose values are small.
 *
 * A session store keeps one saved state per session with the revision it was saved as. A save
 * names the revision it makes; it goes through only when the stored revision is the one before
 * (none stored, for revision 1), checked and written in one atomic step of the store, so of two
 * writers that loaded the same revision the second to save is refused, whole, and the first's
 * state stays. This is how one writer per session is enforced: see
 * {@link AutoContextMemory.save} and {@link AutoContextMemory.load}.
 *
 * @module
 * @internal
 */

import { AutoContextError, describe, invalidArgument } from './errors.js';
import type { SavedSession } from './types.js';

/**
 * Checks a session id as the engine's `sessionId` option does: 1–128 characters of
 * `A–Z a–z 0–9 - _ . :`, neither beginning nor ending with `.`, without `..`.
 */
export function checkSessionId(sessionId: unknown): string {
  if (
    typeof sessionId !== 'string' ||
    !/^[A-Za-z0-9._:-]{1,128}$/.test(sessionId) ||
    sessionId.startsWith('.') ||
    sessionId.endsWith('.') ||
    sessionId.includes('..')
  ) {
    throw invalidArgument(
      'sessionId',
      `a session id must be 1–128 characters of A–Z, a–z, 0–9, '-', '_', '.', ':', neither beginning nor ending with '.' and without "..", got ${
        typeof sessionId === 'string' ? JSON.stringify(sessionId) : describe(sessionId)
      }`,
    );
  }
  return sessionId;
}

/** Checks a session to save: a whole revision from 1 and a state string. */
export function checkSaved(session: unknown): SavedSession {
  if (session === null || typeof session !== 'object') throw invalidArgument('session', `a saved session must be an object { revision, state }, got ${describe(session)}`);
  const { revision, state } = session as Partial<SavedSession>;
  if (!Number.isSafeInteger(revision) || (revision as number) < 1) {
    throw invalidArgument('revision', `a saved session's revision must be a whole number from 1, got ${String(revision)}`);
  }
  if (typeof state !== 'string') throw invalidArgument('state', `a saved session's state must be a string (toJSON() as JSON), got ${describe(state)}`);
  return { revision: revision as number, state };
}

/** The error of a save whose revision does not follow the stored one. */
export function conflict(sessionId: string, revision: number, stored: number): AutoContextError {
  const what = stored === 0 ? 'no saved state' : `revision ${stored}`;
  return new AutoContextError(
    'CONFLICT',
    `session ${JSON.stringify(sessionId)} holds ${what}, so revision ${revision} (made from revision ${revision - 1}) is stale: another writer saved it since; ` +
      'load the session again and redo this turn on it',
    { field: 'revision' },
  );
}

/** Checks a revision read back from a store. */
export function storedRevision(sessionId: string, value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (!Number.isSafeInteger(value) || (value as number) < 1) {
    throw new AutoContextError('STORE_FAILED', `the store holds ${describe(value)} as the revision of session ${JSON.stringify(sessionId)}, not one a session store wrote`);
  }
  return value as number;
}

/** Splits `text` into parts of at most `size` UTF-16 code units, never between the halves of a surrogate pair. */
export function split(text: string, size: number): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(text.length, at + size);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    out.push(text.slice(at, end));
    at = end;
  }
  return out.length === 0 ? [''] : out;
}
