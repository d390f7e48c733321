/**
 * Turning the host's messages into JSON text for the engine. Messages are JSON data, except
 * that the AI SDK lets parts carry bytes (`Uint8Array`, `ArrayBuffer`, Node's `Buffer`); JSON has
 * no bytes, so they travel as base64 text, which the AI SDK accepts wherever it accepts bytes.
 *
 * @module
 */

/** Base64 of some bytes, in any runtime (`btoa` is everywhere autocontext runs). */
function base64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * A `JSON.stringify` replacer that writes binary values as base64 text. It looks at the
 * holder's own value, because `toJSON` (Node's `Buffer` has one) has already run on `value`.
 */
export function wireReplacer(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown> | null)?.[key];
  if (raw instanceof ArrayBuffer) return base64(new Uint8Array(raw));
  if (ArrayBuffer.isView(raw)) return base64(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength));
  return value;
}

/** JSON text of a message (or a list), bytes as base64. */
export function wireJson(value: unknown): string | undefined {
  return JSON.stringify(value, wireReplacer);
}
