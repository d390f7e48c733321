// Node: read the WebAssembly module from the package and instantiate it synchronously.
import { initSync } from '../wasm/autocontext.js';

// `fs` from `process.getBuiltinModule` (Node 20.16 and later; the package asks for 20.19), not
// an `import` of 'node:fs': the first import of a built-in builds its ES module namespace, about
// 2 ms of CPU in a process that had not imported it (a script whose first import is this one).
const { readFileSync } = process.getBuiltinModule('node:fs');
initSync({ module: readFileSync(new URL('../wasm/autocontext_bg.wasm', import.meta.url)) });

export * from '../index.js';
