// Browsers, Deno and other runtimes with fetch: load the WebAssembly module next to this file.
import init from '../wasm/autocontext.js';

// The module's URL from this file (not the glue's default, which is relative to wherever the
// glue is bundled).
await init({ module_or_path: new URL('../wasm/autocontext_bg.wasm', import.meta.url) });

export * from '../index.js';
