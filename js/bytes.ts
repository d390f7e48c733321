/**
 * Values as the engine hands them to a store that takes bytes ({@link OffloadStore.acceptsBytes}): the
 * UTF-8 text of the JSON it stores.
 *
 * @module
 */

import { describe, invalidArgument } from './errors.js';
import type { OffloadStore } from './types.js';

/** Decodes a stored value's bytes; they are the engine's own UTF-8, so a bad byte is a defect. */
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The text of `value`, a value a store was given. */
export function text(value: string | Uint8Array): string {
  return typeof value === 'string' ? value : decoder.decode(value);
}

/** Whether `value` is a `Uint8Array` (from this realm or another: a frame, a `vm` context). */
export function isBytes(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array || Object.prototype.toString.call(value) === '[object Uint8Array]';
}

/** Whether `value` is what {@link OffloadStore.put} may be given. */
export function isValue(value: unknown): value is Parameters<OffloadStore['put']>[1] {
  return typeof value === 'string' || isBytes(value);
}

/** Throws `INVALID_ARGUMENT` unless `value` is what {@link OffloadStore.put} may be given. */
export function checkValue(value: unknown): asserts value is Parameters<OffloadStore['put']>[1] {
  if (!isValue(value)) throw invalidArgument('value', `a store value must be a string or a Uint8Array, got ${describe(value)}`);
}
