// Node: read the WebAssembly module from the package and instantiate it synchronously.
import { readFileSync } from 'node:fs';
import { initSync } from '../wasm/autocontext.js';

initSync({ module: readFileSync(new URL('../wasm/autocontext_bg.wasm', import.meta.url)) });

export * from '../index.js';
