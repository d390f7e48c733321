// Bundles the package's JavaScript (after tsc and build-variants laid out dist/): each entry point
// the package exports becomes one file holding the modules only it needs.
//
//   node scripts/bundle.mjs
//
// Why: Node's module loader pays for every file an import reaches (resolving, a real path, an
// open and a read: about 0.3 to 0.5 ms of CPU each, before any code runs). Some twenty small
// modules cost about as much as V8 spends compiling the WebAssembly; esbuild's shared chunks
// (one per set of entry points sharing a module) still made the default entry 9 files. It now
// loads 5, the fewest that keep each module one instance wherever it is imported from:
//
// - `errors.js` stays a module of its own: `AutoContextError` is one class whichever entry point
//   or build threw it;
// - each build's wasm-bindgen glue (`wasm/autocontext.js`, `full/wasm/…`, `lite/wasm/…`) stays a
//   module of its own: it holds the build's engine, which the runtime entry point initializes
//   and the command line's modules use (build-variants.mjs gave every build its own copy of the
//   modules that reach it);
// - an entry point imported by another (the default store, the command line's modules, the engine
//   the command line loads) is imported as that file, never copied into the importer, so its
//   classes are one class too; each build's `index.js`, what its three runtime entry points
//   export, is bundled as one such file, so they share it instead of holding a copy each.
//
// Every other module is copied into each bundle that reaches it: the helpers several entry points
// share (bytes, the session store's base, the wire checks, the adapters' options) are a few KB
// each. The .d.ts files stay as tsc wrote them; entry points keep their paths, so the exports map
// and the entry points' relative URLs of their .wasm files are unchanged.
//
// Every file is written without its comments and the white space between tokens, the modules
// kept apart too (names and syntax stay as written, so stack traces keep every function's name):
// V8 scans each module whole as it loads, white space included, and the default entry's 113 KB
// of JavaScript (its bundle and wasm-bindgen's glue, documented at length) took about 0.5 ms more
// CPU to import in Node than the same code in 66 KB.
import { readFileSync, readdirSync, rmSync, statSync, mkdtempSync, cpSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, transform } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

const walk = (dir) => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]));
const posixPath = (p) => p.split(sep).join('/');

/** Every `.js` file a condition of the exports map (or the bin) points to. */
function targets(value) {
  if (typeof value === 'string') return value.endsWith('.js') ? [value] : [];
  return Object.values(value ?? {}).flatMap(targets);
}
// The command line's modules stay importable one by one: the demo page (www/) and the tests
// load them as a library.
const cliModules = readdirSync(join(dist, 'cli'))
  .filter((f) => f.endsWith('.js'))
  .map((f) => `./dist/cli/${f}`);
const entries = [...new Set([...targets(pkg.exports), ...targets(pkg.bin), ...cliModules])].map((p) => join(root, p));

// Each build's glue: the default build's and those build-variants.mjs laid out beside it.
const glues = walk(dist).filter((f) => /^([a-z]+\/)?wasm\/autocontext\.js$/.test(posixPath(relative(dist, f))));
// The modules kept as tsc and wasm-bindgen wrote them, imported by path from every bundle.
const apart = [join(dist, 'errors.js'), ...glues];
// What is bundled: the entry points, and each build's index (beside its glue's folder).
const bundles = [...entries, ...glues.map((g) => join(dirname(g), '..', 'index.js'))];
const own = new Set([...apart, ...bundles]);

// An import of a module kept apart or bundled on its own is written as this prefix and the
// module's path under dist/, then rewritten below to a path relative to the file it ended up in.
const MARK = '@autocontext-own/';
const keepApart = {
  name: 'keep-apart',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const target = resolve(args.resolveDir, args.path);
      return own.has(target) ? { path: MARK + posixPath(relative(dist, target)), external: true } : undefined;
    });
  },
};

/** How every file is written, the bundles and the modules kept apart alike. */
const written = { format: 'esm', target: 'es2022', legalComments: 'none', minifyWhitespace: true, logLevel: 'warning' };

const out = mkdtempSync(join(tmpdir(), 'autocontext-bundle-'));
try {
  await build({
    ...written,
    entryPoints: bundles,
    outbase: dist,
    outdir: out,
    bundle: true,
    platform: 'neutral',
    // Dependencies and the frameworks the adapters plug into are the user's; node: built-ins and
    // the .wasm files (the Worker entry imports its module) stay imports.
    packages: 'external',
    external: ['node:*', '*.wasm'],
    plugins: [keepApart],
    // Not the repository's tsconfig.json: its rootDirs would map dist/ back onto the sources.
    tsconfigRaw: {},
  });
  const bundled = walk(out).map((f) => posixPath(relative(out, f)));
  for (const file of bundled) {
    const path = join(out, file);
    const text = readFileSync(path, 'utf8');
    const fixed = text.replaceAll(new RegExp(`(["'])${MARK}([^"']+)\\1`, 'g'), (_, q, target) => {
      const rel = posixPath(relative(dirname(join(dist, file)), join(dist, target)));
      return q + (rel.startsWith('.') ? rel : `./${rel}`) + q;
    });
    if (fixed.includes(MARK)) throw new Error(`bundle: ${file} still names ${MARK}`);
    if (fixed !== text) writeFileSync(path, fixed);
  }
  // The compiled modules are in the bundles now: only the declarations and the modules kept
  // apart stay beside them, written as the bundles are.
  const keep = new Set(apart);
  for (const file of walk(dist)) if (file.endsWith('.js') && !keep.has(file)) rmSync(file);
  for (const file of apart) {
    const { code } = await transform(readFileSync(file, 'utf8'), { ...written, loader: 'js' });
    writeFileSync(file, code);
  }
  cpSync(out, dist, { recursive: true });
  console.error(`bundle: ${bundled.length} bundles and ${apart.length} modules kept apart in dist/`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
