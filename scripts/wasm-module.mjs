// Reading a WebAssembly module's binary layout, for the scripts, benchmarks and tests that look
// inside the .wasm the build writes: its sections, the numbers and names in them, the functions
// it imports. Only as much of the format as they need (no code is decoded).

/** A cursor over a module's bytes. */
export class Reader {
  constructor(bytes, at = 0) {
    this.bytes = bytes;
    this.at = at;
  }

  u8() {
    return this.bytes[this.at++];
  }

  /** An unsigned LEB128 number. */
  leb() {
    let value = 0;
    let shift = 0;
    let byte;
    do {
      byte = this.bytes[this.at++];
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  }

  /** `n` bytes. */
  take(n) {
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  /** A name: its length, then its UTF-8 bytes. */
  name() {
    return this.take(this.leb()).toString();
  }

  /** A table's or memory's limits. */
  limits() {
    const flags = this.u8();
    this.leb();
    if (flags & 1) this.leb();
  }
}

/** `n` as an unsigned LEB128, its bytes. */
export function uleb(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    out.push(byte);
  } while (n > 0);
  return out;
}

/**
 * The module's sections in order, each `{ id, start, end, body }`: `start` where the section
 * begins (its id byte), `end` where it ends, `body` a reader at its contents.
 */
export function sections(bytes) {
  if (bytes.readUInt32LE(0) !== 0x6d736100) throw new Error('not a WebAssembly module');
  const out = [];
  const r = new Reader(bytes, 8);
  while (r.at < bytes.length) {
    const start = r.at;
    const id = r.u8();
    const size = r.leb();
    out.push({ id, start, end: r.at + size, body: new Reader(bytes, r.at) });
    r.at += size;
  }
  return out;
}

/** Of an import section's body: the type index of each function it imports, in order. */
export function importedFunctions(body) {
  const types = [];
  for (let n = body.leb(); n > 0; n--) {
    body.name(); // module
    body.name(); // field
    const kind = body.u8();
    if (kind === 0) types.push(body.leb());
    else if (kind === 1) (body.u8(), body.limits()); // table: element type, limits
    else if (kind === 2) body.limits(); // memory
    else if (kind === 3) body.take(2); // global: value type, mutability
    else throw new Error(`an import of kind ${kind}, which this reader does not know`);
  }
  return types;
}
