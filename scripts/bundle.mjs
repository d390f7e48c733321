// Bundles the package's JavaScript (after tsc and build-variants laid out dist/): one file per
// entry point the package exports, and shared chunks under dist/chunks/ for what several entry
// points import.
//
//   node scripts/bundle.mjs
//
// Why: an import of the package loaded some twenty small modules, one by one, and Node's module
// loader spent about as long on them as V8 spends compiling the WebAssembly; the default entry now
// loads 9 files, and its import takes about a fifth less CPU. Chunks (esbuild's code splitting),
// not one self-contained bundle per entry point, because a module must stay one instance wherever
// it is imported from: `AutoContextError` is one class whichever entry point or build threw it, and
// each build's engine is one instance (build-variants.mjs gives every build its own copy of the
// modules that reach the engine, and they stay apart here). The .d.ts files stay as tsc wrote them;
// entry points keep their paths, so the exports map and the entry points' relative URLs of their
// .wasm files are unchanged.
import { readFileSync, readdirSync, rmSync, statSync, mkdtempSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

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

const out = mkdtempSync(join(tmpdir(), 'autocontext-bundle-'));
try {
  await build({
    entryPoints: entries,
    outbase: dist,
    outdir: out,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    // Dependencies and the frameworks the adapters plug into are the user's; node: built-ins and
    // the .wasm files (the Worker entry imports its module) stay imports.
    packages: 'external',
    external: ['node:*', '*.wasm'],
    chunkNames: 'chunks/[name]-[hash]',
    legalComments: 'none',
    // Not the repository's tsconfig.json: its rootDirs would map dist/ back onto the sources.
    tsconfigRaw: {},
    logLevel: 'warning',
  });
  // The compiled modules are in the bundles now: only the declarations stay beside them.
  const walk = (dir) => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]));
  for (const file of walk(dist)) if (file.endsWith('.js')) rmSync(file);
  cpSync(out, dist, { recursive: true });
  const written = walk(out).map((f) => relative(out, f).split(sep).join('/'));
  const chunks = written.filter((f) => f.startsWith('chunks/')).length;
  console.error(`bundle: ${written.length - chunks} entry points and ${chunks} shared chunks in dist/`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
