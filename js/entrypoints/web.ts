// Browsers, Deno and other runtimes with fetch: load the WebAssembly module next to this file.
import init from '../wasm/autocontext.js';

await init();

export * from '../index.js';
