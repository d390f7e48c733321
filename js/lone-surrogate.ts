/**
 * Finding a lone UTF-16 surrogate in the host's messages. A JavaScript string may hold one (a
 * string cut in the middle of an emoji, say); JSON text escapes it as `\ud800`, and the engine,
 * whose strings are Unicode, cannot hold it without changing the message, so such a message is
 * refused. This names where it is, so the error can say which message and field.
 *
 * @module
 */

const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Path (`content[0].text`) of the first string under `value` holding a lone surrogate. */
function path(value: unknown, at: string, depth: number): string | null {
  if (typeof value === 'string') return LONE.test(value) ? at : null;
  if (value === null || typeof value !== 'object' || depth > 200) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = path(value[i], `${at}[${i}]`, depth + 1);
      if (p !== null) return p;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    if (LONE.test(k)) return at === '' ? k : `${at}.${k}`;
    const p = path(v, at === '' ? k : `${at}.${k}`, depth + 1);
    if (p !== null) return p;
  }
  return null;
}

/**
 * The first message (by its position in `messages`, one message or an array) holding a lone
 * surrogate, and the field; `null` when there is none.
 */
export function findLoneSurrogate(messages: unknown): { position: number; field: string } | null {
  const list = Array.isArray(messages) ? messages : [messages];
  for (let i = 0; i < list.length; i++) {
    const field = path(list[i], '', 0);
    if (field !== null) return { position: i, field };
  }
  return null;
}
