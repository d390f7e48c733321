/**
 * The check every adapter makes of the options it is given, so that none runs with defaults
 * while the host believes it configured it: a memory handed where options belong (its fields
 * are private: spread as options it is `{}`), a value that is not an object, and a key the
 * adapter does not know (a memory's option given to an adapter that takes a factory of
 * memories) are refused with a typed error that names the right form.
 *
 * Nothing here imports the engine: a memory is recognized by its methods, whatever build made it.
 *
 * @module
 */

import { AutoContextError, describe } from '../errors.js';

/** Whether `value` is a memory (an `AutoContextMemory` of any build), by its methods. */
export function isMemory(value: unknown): boolean {
  const v = value as { compressIfNeeded?: unknown; messages?: unknown; reloadTool?: unknown } | null;
  return v !== null && typeof v === 'object' && typeof v.compressIfNeeded === 'function' && typeof v.messages === 'function' && typeof v.reloadTool === 'function';
}

/**
 * Checks the options `who` was given.
 *
 * @param known - the keys `who` reads; `null` when any key may be there (the memory's options,
 *   which its constructor checks).
 * @param rightForm - how `who` is called, for the errors: `new X({ maxToken: 128_000 })`.
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` for a memory, `INVALID_CONFIG` for a value
 *   that is not an object or a key `who` does not read.
 */
export function checkOptions(who: string, options: unknown, known: readonly string[] | null, rightForm: string): void {
  if (isMemory(options)) {
    throw new AutoContextError('INVALID_ARGUMENT', `${who} takes options, not a memory (it makes its own memories): ${rightForm}`, { field: 'options' });
  }
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new AutoContextError('INVALID_CONFIG', `${who}'s options must be an object, got ${describe(options)}: ${rightForm}`, { field: 'options' });
  }
  if (known === null) return;
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new AutoContextError('INVALID_CONFIG', `\`${key}\` is not an option of ${who} (its options are ${known.map((k) => `\`${k}\``).join(', ')}): ${rightForm}`, {
        field: key,
      });
    }
  }
}
