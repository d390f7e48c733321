// Where a .wasm's bytes go: the code section's function bodies grouped by the crate their
// (mangled) names come from, and the data section. Reads the linker's output, which still has
// its name section (the packaged module has it stripped); used to explain the size of the
// estimator-only build.
import { readFileSync } from 'node:fs';

const CRATES = ['autocontext', 'serde_json', 'serde', 'core', 'alloc', 'std', 'js_sys', 'wasm_bindgen', 'futures_util', 'hashbrown', 'indexmap', 'talc', 'uuid'];

/** `{ code, data, byCrate: [[crate, bytes], ...] }` of a .wasm with a name section. */
export function wasmBreakdown(file) {
  const b = readFileSync(file);
  let i = 8;
  const leb = () => {
    let r = 0;
    let shift = 0;
    let x;
    do {
      x = b[i++];
      r += (x & 0x7f) * 2 ** shift;
      shift += 7;
    } while (x & 0x80);
    return r;
  };
  let imported = 0;
  let code = 0;
  let data = 0;
  const bodies = [];
  const names = new Map();
  while (i < b.length) {
    const id = b[i++];
    const size = leb();
    const start = i;
    if (id === 2) {
      for (let n = leb(); n > 0; n--) {
        i += leb(); // module
        i += leb(); // field
        const kind = b[i++];
        if (kind === 0) {
          leb();
          imported += 1;
        } else if (kind === 1) {
          i += 1;
          const flags = b[i++];
          leb();
          if (flags & 1) leb();
        } else if (kind === 2) {
          const flags = b[i++];
          leb();
          if (flags & 1) leb();
        } else if (kind === 3) {
          i += 2;
        }
      }
    } else if (id === 10) {
      code = size;
      for (let n = leb(); n > 0; n--) {
        const body = leb();
        bodies.push(body);
        i += body;
      }
    } else if (id === 11) {
      data = size;
    } else if (id === 0) {
      const len = leb();
      const name = b.subarray(i, i + len).toString();
      i += len;
      while (name === 'name' && i < start + size) {
        const sub = b[i++];
        const subSize = leb();
        const end = i + subSize;
        if (sub === 1) {
          for (let n = leb(); n > 0; n--) {
            const index = leb();
            const nameLen = leb();
            names.set(index, b.subarray(i, i + nameLen).toString());
            i += nameLen;
          }
        }
        i = end;
      }
    }
    i = start + size;
  }
  const byCrate = new Map();
  bodies.forEach((size, k) => {
    const name = names.get(k + imported) ?? '';
    const crate = CRATES.find((c) => name.includes(`${c.length}${c}`) || name.includes(`${c}..`)) ?? 'other';
    byCrate.set(crate, (byCrate.get(crate) ?? 0) + size);
  });
  return { code, data, byCrate: [...byCrate].sort((x, y) => y[1] - x[1]) };
}
