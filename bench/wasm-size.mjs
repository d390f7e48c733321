// Where a .wasm's bytes go: the code section's function bodies grouped by the crate their
// (mangled) names come from, and the data section. Reads the linker's output, which still has
// its name section (the packaged module has it stripped); used to explain the size of the
// estimator-only build.
import { readFileSync } from 'node:fs';
import { importedFunctions, sections } from '../scripts/wasm-module.mjs';

const CRATES = ['autocontext', 'serde_json', 'serde', 'core', 'alloc', 'std', 'js_sys', 'wasm_bindgen', 'futures_util', 'hashbrown', 'indexmap', 'talc', 'uuid'];

/** `{ code, data, byCrate: [[crate, bytes], ...] }` of a .wasm with a name section. */
export function wasmBreakdown(file) {
  let imported = 0;
  let code = 0;
  let data = 0;
  const bodies = [];
  const names = new Map();
  for (const { id, end, body } of sections(readFileSync(file))) {
    if (id === 2) {
      imported = importedFunctions(body).length;
    } else if (id === 10) {
      code = end - body.at;
      for (let n = body.leb(); n > 0; n--) {
        const size = body.leb();
        bodies.push(size);
        body.take(size);
      }
    } else if (id === 11) {
      data = end - body.at;
    } else if (id === 0 && body.name() === 'name') {
      while (body.at < end) {
        const sub = body.u8();
        const size = body.leb();
        const subEnd = body.at + size;
        if (sub === 1) {
          for (let n = body.leb(); n > 0; n--) {
            const index = body.leb();
            names.set(index, body.name());
          }
        }
        body.at = subEnd;
      }
    }
  }
  const byCrate = new Map();
  bodies.forEach((size, k) => {
    const name = names.get(k + imported) ?? '';
    const crate = CRATES.find((c) => name.includes(`${c.length}${c}`) || name.includes(`${c}..`)) ?? 'other';
    byCrate.set(crate, (byCrate.get(crate) ?? 0) + size);
  });
  return { code, data, byCrate: [...byCrate].sort((x, y) => y[1] - x[1]) };
}
