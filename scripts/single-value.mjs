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
import { sections, uleb } from './wasm-module.mjs';

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  console.error('usage: node scripts/single-value.mjs <module> <copy>');
  process.exit(2);
}
const bytes = readFileSync(from);

/** The `target_features` section's features (after its name) without `multivalue`. */
function withoutMultivalue(body) {
  const kept = [];
  for (let n = body.leb(); n > 0; n--) {
    const prefix = body.u8();
    const name = body.take(body.leb());
    if (name.toString() !== 'multivalue') kept.push([prefix, name]);
  }
  return Buffer.from([...uleb(kept.length), ...kept.flatMap(([prefix, name]) => [prefix, ...uleb(name.length), ...name])]);
}

const FEATURES = 'target_features';
let all;
try {
  all = sections(bytes);
} catch (e) {
  console.error(`single-value: ${from}: ${e.message}`);
  process.exit(1);
}
const parts = [bytes.subarray(0, 8)];
let found = false;
for (const { id, start, end, body } of all) {
  if (id === 0 && body.name() === FEATURES) {
    found = true;
    const contents = Buffer.concat([Buffer.from(uleb(FEATURES.length)), Buffer.from(FEATURES), withoutMultivalue(body)]);
    parts.push(Buffer.from([0, ...uleb(contents.length)]), contents);
  } else {
    parts.push(bytes.subarray(start, end));
  }
}
if (!found) {
  // Without the section, wasm-bindgen cannot tell which features the module uses at all.
  console.error(`single-value: ${from} has no target_features section`);
  process.exit(1);
}
writeFileSync(to, Buffer.concat(parts));
