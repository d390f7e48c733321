// Copies a module cargo built, its `target_features` section without `multivalue`, so that
// wasm-bindgen keeps every export returning at most one value:
//
//   node scripts/single-value.mjs <module cargo built> <copy for wasm-bindgen>
//
// Why: wasm-bindgen turns an export that returns a string or a `Result` into one returning
// several values whenever the module says it uses multi-value (Rust's wasm32 target does by
// default). V8 calls a single-value export through one generic wrapper, but compiles a wrapper
// of its own for each multi-value signature, all of them while the module compiles: 28
// signatures of the default build took about 3 ms of CPU in Node's compile of the module, about
// a third of it, on every cold start. Without the feature, wasm-bindgen passes those results
// through a return area in the module's stack instead. The code is the same; nothing else in
// the section changes (the engine's own code never returns several values).
import { readFileSync, writeFileSync } from 'node:fs';

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  console.error('usage: node scripts/single-value.mjs <module> <copy>');
  process.exit(2);
}
const bytes = readFileSync(from);

/** The unsigned LEB128 at `at` of `buf`: its value and the offset after it. */
function leb(buf, at) {
  let value = 0;
  let shift = 0;
  let byte;
  do {
    byte = buf[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}

/** `n` as an unsigned LEB128. */
function uleb(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    out.push(byte);
  } while (n > 0);
  return out;
}

/** The `target_features` section's body (after its name) without `multivalue`. */
function withoutMultivalue(body) {
  let [count, at] = leb(body, 0);
  const kept = [];
  for (let i = 0; i < count; i++) {
    const prefix = body[at++];
    let len;
    [len, at] = leb(body, at);
    const name = body.subarray(at, at + len);
    at += len;
    if (name.toString() !== 'multivalue') kept.push([prefix, name]);
  }
  return Buffer.from([...uleb(kept.length), ...kept.flatMap(([prefix, name]) => [prefix, ...uleb(name.length), ...name])]);
}

if (bytes.readUInt32LE(0) !== 0x6d736100) {
  console.error(`single-value: ${from} is not a WebAssembly module`);
  process.exit(1);
}
const parts = [bytes.subarray(0, 8)];
let found = false;
let at = 8;
while (at < bytes.length) {
  const id = bytes[at];
  const [size, start] = leb(bytes, at + 1);
  const end = start + size;
  let section = bytes.subarray(at, end);
  if (id === 0) {
    const [nameLen, nameStart] = leb(bytes, start);
    const name = bytes.subarray(nameStart, nameStart + nameLen).toString();
    if (name === 'target_features') {
      found = true;
      const body = Buffer.concat([Buffer.from(uleb(nameLen)), Buffer.from(name), withoutMultivalue(bytes.subarray(nameStart + nameLen, end))]);
      section = Buffer.concat([Buffer.from([0, ...uleb(body.length)]), body]);
    }
  }
  parts.push(section);
  at = end;
}
if (!found) {
  // Without the section, wasm-bindgen cannot tell which features the module uses at all.
  console.error(`single-value: ${from} has no target_features section`);
  process.exit(1);
}
writeFileSync(to, Buffer.concat(parts));
