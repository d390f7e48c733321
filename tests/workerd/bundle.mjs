// Builds a Worker the way a Worker build does (esbuild with the workerd/worker/browser
// conditions, .wasm imports kept as modules) and runs it in workerd through miniflare.
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

/**
 * An esbuild plugin that resolves `autocontext` and its subpaths to the checkout at `root`
 * (its dist/), by the package's exports under the conditions a Worker build uses: for the
 * benchmarks, which bundle the checkout rather than an installed package.
 */
export function checkoutPackage(root) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return {
    name: 'this checkout',
    setup(build) {
      build.onResolve({ filter: /^autocontext(\/|$)/ }, ({ path }) => {
        const target = pkg.exports['.' + path.slice('autocontext'.length)];
        const file = typeof target === 'string' ? target : (target?.workerd ?? target?.default);
        if (!file) return { errors: [{ text: `autocontext does not export ${path}` }] };
        return { path: join(root, file) };
      });
    },
  };
}

/**
 * Bundles `entry` into `outdir` as `index.js`, beside the modules it imports, with esbuild
 * `plugins` if given. Returns the output files with their sizes, the inputs the bundle pulled
 * in, and the total size raw and gzipped (level 9 and the default level).
 */
export async function bundleWorker(entry, outdir, plugins = []) {
  const result = await esbuild.build({
    entryPoints: [entry],
    outdir,
    entryNames: 'index',
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    external: ['cloudflare:*'],
    loader: { '.wasm': 'copy' },
    plugins,
    metafile: true,
    logLevel: 'silent',
  });
  const files = [];
  let raw = 0;
  let gzip9 = 0;
  let gzip6 = 0;
  for (const name of await readdir(outdir)) {
    const bytes = await readFile(join(outdir, name));
    files.push({ name, bytes: bytes.length });
    raw += bytes.length;
    gzip9 += gzipSync(bytes, { level: 9 }).length;
    gzip6 += gzipSync(bytes).length;
  }
  const inputs = Object.keys(result.metafile.inputs);
  return { files, inputs, raw, gzip9, gzip6 };
}

/** Miniflare options for a bundle in `outdir` whose entry is `index.js`. */
export function moduleOptions(outdir) {
  return {
    modules: true,
    scriptPath: join(outdir, 'index.js'),
    modulesRoot: outdir,
    modulesRules: [
      { type: 'ESModule', include: ['**/*.js', '**/*.mjs'] },
      { type: 'CompiledWasm', include: ['**/*.wasm'] },
    ],
  };
}

/** Sizes in a human unit. */
export function mb(bytes) {
  return `${(bytes / 1_000_000).toFixed(2)} MB`;
}
