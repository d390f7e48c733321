// Cloudflare Workers: the bundler imports the .wasm file as a compiled WebAssembly.Module.
import { initSync, prepareTokenizer } from '../wasm/autocontext.js';
import wasm from '../wasm/autocontext_bg.wasm';

initSync({ module: wasm });
// The vocabulary is decoded here, in the Worker's startup (its global scope, which has a limit
// of its own and is not billed to a request), not by the first count of the isolate's first
// request: that took about 12 ms of CPU, more than a whole request may take on the free plan.
prepareTokenizer();

export * from '../index.js';
