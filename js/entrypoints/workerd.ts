// Cloudflare Workers: the bundler imports the .wasm file as a compiled WebAssembly.Module.
import { initSync } from '../wasm/autocontext.js';
import wasm from '../wasm/autocontext_bg.wasm';

initSync({ module: wasm });

export * from '../index.js';
