// One cold start of the package in the runtime running this file: the import of 'autocontext'
// (which compiles and instantiates the WebAssembly) and the first token count (which loads the
// tokenizer vocabulary). Prints one JSON line; cold-start-report.mjs runs it in fresh processes.
const t0 = performance.now();
const { countTokens } = await import('autocontext');
const t1 = performance.now();
const tokens = countTokens('hello world');
const t2 = performance.now();
const runtime = typeof Deno !== 'undefined' ? `deno ${Deno.version.deno}` : `node ${process.versions.node}`;
console.log(JSON.stringify({ runtime, entry: import.meta.resolve('autocontext'), importMs: t1 - t0, firstCountMs: t2 - t1, tokens }));
