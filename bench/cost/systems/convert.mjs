// The bridge between the traces (OpenAI chat messages) and each peer's own message types. Every
// message a peer hands back unchanged (the same object the bridge gave it) maps back to the
// exact original, so an untouched message is sent byte for byte and counted like everyone
// else's; a message the peer made or changed is converted. Conversions are memoized by object,
// so a message that stays in a peer's state keeps one identity from call to call.

/** Parsed tool-call arguments (an object), or `{ input: <text> }` when they are not a JSON object. */
export function parseArguments(text) {
  try {
    const v = JSON.parse(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v;
  } catch {
    // fall through
  }
  return { input: text };
}

/**
 * A two-way map between originals and a peer's objects: `wrap(original, made)` remembers that
 * `made` (with its fields as given by `fields(made)`) stands for `original`; `back(obj, convert)`
 * returns the original when `obj` is such an object, or a copy the peer made of one (found by
 * `idOf`, when the peer's messages carry an id that copies keep), with the same fields; else
 * `convert(obj)`, memoized.
 */
export class Bridge {
  constructor(fields, idOf = () => undefined) {
    this.fields = fields;
    this.idOf = idOf;
    this.origin = new WeakMap();
    this.byId = new Map();
    this.converted = new WeakMap();
  }

  wrap(original, made) {
    const o = { original, fields: this.fields(made) };
    this.origin.set(made, o);
    const id = this.idOf(made);
    if (id !== undefined) this.byId.set(id, o);
    return made;
  }

  back(obj, convert) {
    let o = this.origin.get(obj);
    if (o === undefined) {
      const id = this.idOf(obj);
      if (id !== undefined) o = this.byId.get(id);
    }
    if (o !== undefined) {
      const now = this.fields(obj);
      if (now.length === o.fields.length && now.every((f, i) => f === o.fields[i])) return o.original;
    }
    let c = this.converted.get(obj);
    if (c === undefined) {
      c = convert(obj);
      this.converted.set(obj, c);
    }
    return c;
  }
}
