// Lays out one build variant of the package next to the default one:
//
//   node scripts/build-variants.mjs <variant>      (after tsc wrote dist/ and wasm-bindgen wrote dist/<variant>/wasm/)
//
// The package ships three WebAssembly builds of the same engine: the default one (o200k_base,
// `autocontext`), `full` (o200k_base and cl100k_base, `autocontext/full`) and `lite` (no
// vocabulary, estimator only, `autocontext/lite`). Their JavaScript bindings are identical, but
// each build needs its own instance of every module that holds the WebAssembly instance, or
// importing two variants in one program would give both the module that was initialized first.
//
// So this script follows the static imports of the compiled runtime entry points
// (dist/entrypoints/*.js), finds every module that reaches the wasm-bindgen glue
// (dist/wasm/autocontext.js) and copies exactly those, with their declarations, into
// dist/<variant>/ at the same relative paths. A copied module keeps its imports of other copied
// modules (and of its own .wasm); its imports of modules that never touch the engine (errors,
// stores, types, helpers) are rewritten to the shared originals, so `AutoContextError` is one
// class whichever variant threw it. The rule follows the code, so a new module that imports
// the engine is copied without anyone editing this list.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const GLUE = 'wasm/autocontext.js';

const variant = process.argv[2];
if (!variant || !/^[a-z]+$/.test(variant)) {
  console.error('usage: node scripts/build-variants.mjs <variant>');
  process.exit(2);
}
if (!existsSync(join(dist, variant, GLUE))) {
  console.error(`build-variants: dist/${variant}/${GLUE} is missing; run wasm-bindgen for the variant first`);
  process.exit(1);
}

/** Static `import … from`, `export … from`, side-effect `import '…'` and `import('…')` specifiers. */
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(?\s*)(['"])(\.{1,2}\/[^'"]+)\2/g;

/** Relative specifiers of a module, resolved to dist-relative posix paths. */
function imports(module) {
  const text = readFileSync(join(dist, module), 'utf8');
  return [...text.matchAll(SPECIFIER)].map((m) => posix.normalize(posix.join(posix.dirname(module), m[3])));
}

// The module graph under the entry points, then every module from which the glue is reachable
// (a walk back along the imports from the glue, so cycles need no care).
const entries = readdirSync(join(dist, 'entrypoints'))
  .filter((f) => f.endsWith('.js'))
  .map((f) => `entrypoints/${f}`);
const importers = new Map(); // module -> modules importing it
const seen = new Set(entries);
const queue = [...entries];
while (queue.length > 0) {
  const module = queue.pop();
  if (module === GLUE || !module.endsWith('.js') || !existsSync(join(dist, module))) continue;
  for (const dep of imports(module)) {
    if (!importers.has(dep)) importers.set(dep, new Set());
    importers.get(dep).add(module);
    if (!seen.has(dep)) {
      seen.add(dep);
      queue.push(dep);
    }
  }
}
const copied = new Set();
const back = [GLUE];
while (back.length > 0) {
  for (const importer of importers.get(back.pop()) ?? []) {
    if (!copied.has(importer)) {
      copied.add(importer);
      back.push(importer);
    }
  }
}

/** Rewrites the relative specifiers of `text` (of the copy of `module`) to shared originals where needed. */
function rewrite(module, text) {
  return text.replace(SPECIFIER, (whole, head, quote, spec) => {
    const target = posix.normalize(posix.join(posix.dirname(module), spec));
    const js = target.replace(/\.d\.ts$/, '.js');
    if (target.startsWith('wasm/') || copied.has(js)) return whole; // the variant's own
    let shared = relative(join(dist, variant, dirname(module)), join(dist, target)).split('\\').join('/');
    if (!shared.startsWith('.')) shared = `./${shared}`;
    return `${head}${quote}${shared}${quote}`;
  });
}

for (const module of copied) {
  for (const file of [module, module.replace(/\.js$/, '.d.ts')]) {
    if (!existsSync(join(dist, file))) continue;
    const out = join(dist, variant, file);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, rewrite(file, readFileSync(join(dist, file), 'utf8')));
  }
}
console.error(`build-variants: dist/${variant}/ holds ${[...copied].sort().join(', ')} and its wasm`);
