// Gives the glue wasm-bindgen wrote a native path for long strings into the module:
//
//   node scripts/long-strings.mjs <glue .js>   (rewritten in place)
//
// Why: wasm-bindgen's `passStringToWasm0` copies a string's leading ASCII a character at a time
// in a JavaScript loop, and hands only the rest to `TextEncoder.encodeInto`. That suits the short
// strings most bindings pass. Ours are JSON texts, often long and almost all ASCII (a message
// with a large tool result, a saved state's pages). Added once, a 2.8 MB message spent 19.5 ms
// of CPU in that loop in Node. Here a string of more than 128 UTF-16 units goes to
// `encodeInto` whole, which writes it natively: first into as many bytes as it has units (all of
// an ASCII string), then, if it stopped short, the rest into room for three bytes per unit, as
// wasm-bindgen's own path does, the allocation shrunk to what was written. The bytes are the same
// UTF-8. Shorter strings keep wasm-bindgen's loop, which costs less than a native call for them.
//
// The glue is wasm-bindgen's (pinned to one version in Cargo.toml). If it no longer has the
// lines this rewrites, the build fails here instead of shipping a glue without the fast path.
import { readFileSync, writeFileSync } from 'node:fs';

const [file] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/long-strings.mjs <glue .js>');
  process.exit(2);
}
const glue = readFileSync(file, 'utf8');

/** wasm-bindgen's function, and the lines after its short path where long strings turn off. */
const head = 'function passStringToWasm0(arg, malloc, realloc) {';
const entry = `    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();
`;
const long = `function passLongStringToWasm0(arg, malloc, realloc) {
    // Added by scripts/long-strings.mjs: the whole string through the native encoder.
    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;
    let ret = cachedTextEncoder.encodeInto(arg, getUint8ArrayMemory0().subarray(ptr, ptr + len));
    let written = ret.written;
    if (ret.read !== arg.length) {
        const rest = arg.slice(ret.read);
        ptr = realloc(ptr, len, len = written + rest.length * 3, 1) >>> 0;
        ret = cachedTextEncoder.encodeInto(rest, getUint8ArrayMemory0().subarray(ptr + written, ptr + len));
        written += ret.written;
        ptr = realloc(ptr, len, written, 1) >>> 0;
    }
    WASM_VECTOR_LEN = written;
    return ptr;
}

`;

const start = glue.indexOf(head);
const at = start < 0 ? -1 : glue.indexOf(entry, start);
if (start < 0 || at < 0 || glue.includes('passLongStringToWasm0') || !glue.includes('const cachedTextEncoder = new TextEncoder();')) {
  console.error(`long-strings: ${file} is not the glue this script knows (wasm-bindgen changed, or it ran twice)`);
  process.exit(1);
}
const out =
  glue.slice(0, start) +
  long +
  glue.slice(start, at) +
  '    if (arg.length > 128) return passLongStringToWasm0(arg, malloc, realloc);\n' +
  glue.slice(at);
writeFileSync(file, out);
