// Packaging smoke test: the packed tarball, installed into a throwaway project, imported through
// each `exports` condition the way each runtime or bundler resolves it:
//   node     - a plain `node` import in the project
//   deno     - Deno itself (npm `deno`), and esbuild with the `deno` condition: the web entry
//   workerd  - esbuild with wrangler's conditions (workerd, worker, browser): the Worker entry,
//              and a Worker bundle never pulls in IndexedDB or file-system code
//   browser  - esbuild with the browser condition: the web entry and the IndexedDB store
// and every subpath in `exports` names an existing file with its declarations.
//
// AUTOCONTEXT_APP_DIR names the project (scripts/test-package.sh makes it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { importedFunctions, sections } from '../../scripts/wasm-module.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const app = process.env.AUTOCONTEXT_APP_DIR;
assert.ok(app && existsSync(join(app, 'node_modules', 'autocontext', 'package.json')), 'AUTOCONTEXT_APP_DIR must name a project with autocontext installed');
const pkgDir = join(app, 'node_modules', 'autocontext');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const dist = 'node_modules/autocontext/dist/';

/** Cloudflare's limit for a Worker on the free plan, compressed. */
const FREE_PLAN_LIMIT = 3 * 1024 * 1024;

/** Subpaths of the package whose code needs a browser or Node, not a Worker. */
const NOT_FOR_WORKERS = /dist\/stores\/(indexeddb|fs)\.js$|dist\/entrypoints\/(node|web)\.js$|dist\/cli\.js$/;

/** Every `[condition path, target]` of one `exports` entry, nested conditions flattened. */
function targets(entry, path = []) {
  if (typeof entry === 'string') return [[path, entry]];
  return Object.entries(entry).flatMap(([condition, value]) => targets(value, [...path, condition]));
}

/** Bundles `contents` (an entry module in the project) with esbuild; returns inputs, outputs, metafile. */
async function bundle(contents, { platform, conditions }) {
  const result = await esbuild.build({
    stdin: { contents, resolveDir: app, sourcefile: 'entry.js', loader: 'js' },
    absWorkingDir: app,
    bundle: true,
    write: false,
    metafile: true,
    format: 'esm',
    target: 'es2022',
    platform,
    conditions,
    loader: { '.wasm': 'file' },
    outdir: join(app, 'out'),
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  const imports = Object.values(result.metafile.inputs).flatMap((i) => i.imports.map((x) => x.path));
  const js = result.outputFiles.filter((f) => f.path.endsWith('.js'));
  const wasm = result.outputFiles.filter((f) => f.path.endsWith('.wasm'));
  return { inputs, imports, js, wasm, text: js.map((f) => f.text).join('\n') };
}

/** Runs a command in the project; fails the test with its output when it fails. */
function run(command, args, env = {}) {
  const r = spawnSync(command, args, { cwd: app, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 });
  assert.equal(r.status, 0, `${command} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test('every subpath in exports resolves to an existing file, with types first and declarations', () => {
  assert.ok(Object.keys(pkg.exports).length >= 4);
  for (const [subpath, entry] of Object.entries(pkg.exports)) {
    if (typeof entry === 'object') assert.equal(Object.keys(entry)[0], 'types', `${subpath}: "types" must come first`);
    const files = targets(entry);
    for (const [conditions, target] of files) {
      assert.ok(target.startsWith('./'), `${subpath} ${conditions}: relative target`);
      const file = join(pkgDir, target);
      assert.ok(existsSync(file) && statSync(file).isFile(), `${subpath} [${conditions}] → ${target} exists in the packed package`);
      if (target.endsWith('.js')) {
        const dts = target.replace(/\.js$/, '.d.ts');
        assert.ok(existsSync(join(pkgDir, dts)), `${subpath}: ${dts} exists`);
      }
      if (target.endsWith('.wasm')) assert.ok(existsSync(join(pkgDir, `${target}.d.ts`)), `${subpath}: ${target}.d.ts exists`);
      if (conditions.at(-1) === 'types') assert.match(target, /\.d\.ts$/, `${subpath}: types names a .d.ts`);
    }
  }
  for (const store of ['memory', 'fs', 'indexeddb']) assert.ok(pkg.exports[`./stores/${store}`], `stores/${store} is exported`);
  assert.ok(existsSync(join(pkgDir, pkg.types)), 'top-level types');
  assert.ok(existsSync(join(pkgDir, pkg.bin.autocontext)), 'the bin');
});

test('the tarball holds the build only: no sources, tests or tarballs', () => {
  const files = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else files.push(relative(pkgDir, p));
    }
  };
  walk(pkgDir);
  const stray = files.filter((f) => !/^(package\.json|README\.md|LICENSE[^/]*|dist\/.*\.(js|d\.ts|wasm))$/.test(f));
  assert.deepEqual(stray, [], 'unexpected files in the package');
  assert.ok(files.includes('dist/wasm/autocontext_bg.wasm'));
});

test('node: a plain import gets the node entry, every subpath loads, the engine counts', () => {
  const subpaths = Object.keys(pkg.exports).filter((s) => targets(pkg.exports[s]).some(([, t]) => t.endsWith('.js')));
  const specifiers = subpaths.map((s) => (s === '.' ? 'autocontext' : `autocontext/${s.slice(2)}`));
  writeFileSync(
    join(app, 'node-check.mjs'),
    `const specifiers = ${JSON.stringify(specifiers)};
const out = { resolved: {}, exports: {} };
out.missingPeer = {};
for (const s of specifiers) {
  out.resolved[s] = import.meta.resolve(s);
  try {
    out.exports[s] = Object.keys(await import(s)).sort();
  } catch (e) {
    // An adapter whose framework (an optional peer dependency) this app does not have.
    if (e.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    out.missingPeer[s] = String(e.message.match(/Cannot find package '([^']+)'/)?.[1]);
  }
}
const { countTokens, AutoContextError } = await import('autocontext');
const { IndexedDBStore } = await import('autocontext/stores/indexeddb');
out.count = countTokens('hello world');
try { new IndexedDBStore(); } catch (e) { out.noIndexedDB = { isAutoContextError: e instanceof AutoContextError, code: e.code, field: e.field }; }
console.log(JSON.stringify(out));
`,
  );
  const out = JSON.parse(run(process.execPath, ['node-check.mjs']));
  assert.match(out.resolved.autocontext, /\/dist\/entrypoints\/node\.js$/);
  assert.match(out.resolved['autocontext/stores/indexeddb'], /\/dist\/stores\/indexeddb\.js$/);
  assert.ok(out.exports.autocontext.includes('AutoContextMemory'));
  assert.ok(out.exports['autocontext/stores/indexeddb'].includes('IndexedDBStore'));
  assert.ok(out.exports['autocontext/stores/fs'].includes('FsStore'));
  assert.ok(out.exports['autocontext/stores/memory'].includes('MemoryStore'));
  assert.equal(out.count, 2, 'o200k: "hello world" is 2 tokens');
  // Only adapters miss anything, and only their optional frameworks.
  const optional = Object.keys(pkg.peerDependenciesMeta ?? {}).filter((p) => pkg.peerDependenciesMeta[p].optional);
  for (const [s, peer] of Object.entries(out.missingPeer)) assert.ok(optional.includes(peer), `${s} misses ${peer}, which is not an optional peer`);
  assert.ok(out.exports['autocontext/mastra'].includes('autocontextProcessor'), 'the Mastra adapter needs no framework import');
  assert.deepEqual(out.noIndexedDB, { isAutoContextError: true, code: 'INVALID_CONFIG', field: 'indexedDB' }, 'no IndexedDB in Node: a typed error');
});

test('deno: the deno condition is the web entry, in Deno itself and for a bundler', async () => {
  const probe = await bundle(`export * from 'autocontext';`, { platform: 'neutral', conditions: ['deno'] });
  assert.ok(probe.inputs.includes(`${dist}entrypoints/web.js`), probe.inputs.join('\n'));
  assert.ok(!probe.inputs.some((i) => /entrypoints\/(node|workerd)\.js$/.test(i)));
  const deno = join(root, 'node_modules', '.bin', 'deno');
  writeFileSync(join(app, 'deno-check.js'), `import { countTokens } from 'autocontext';\nconsole.log(JSON.stringify({ resolved: import.meta.resolve('autocontext'), count: countTokens('hello world') }));\n`);
  const out = JSON.parse(run(deno, ['run', '--no-remote', '--cached-only', '--allow-read', 'deno-check.js'], { DENO_NO_UPDATE_CHECK: '1', DENO_DIR: join(app, '.deno') }));
  assert.match(out.resolved, /\/node_modules\/autocontext\/dist\/entrypoints\/web\.js$/);
  assert.equal(out.count, 2);
});

test('workerd: the Worker entry; the bundle has no IndexedDB, fs or Node code, and fits the free plan', async (t) => {
  // What a Worker imports: the package and the stores made for it.
  const stores = ['./stores/memory', './stores/cloudflare-kv'].filter((s) => s in pkg.exports).map((s) => `autocontext/${s.slice(2)}`);
  const entry = [
    `import { AutoContextMemory, countTokens } from 'autocontext';`,
    ...stores.map((s, i) => `import * as store${i} from '${s}';`),
    `export default { async fetch() { return new Response(String(countTokens('hello world')) + typeof AutoContextMemory + ${stores.map((_, i) => `Object.keys(store${i})`).join(' + ') || "''"}); } };`,
  ].join('\n');
  const worker = await bundle(entry, { platform: 'browser', conditions: ['workerd', 'worker', 'browser'] });
  assert.ok(worker.inputs.includes(`${dist}entrypoints/workerd.js`), worker.inputs.join('\n'));
  assert.ok(worker.inputs.includes(`${dist}wasm/autocontext_bg.wasm`), 'the module imports its .wasm');
  const offending = worker.inputs.filter((i) => NOT_FOR_WORKERS.test(i));
  assert.deepEqual(offending, [], 'no IndexedDB, fs, Node or web-entry module in a Worker bundle');
  assert.deepEqual(worker.imports.filter((p) => p.startsWith('node:') || /^(fs|path|os|crypto)$/.test(p)), [], 'no Node built-ins');
  assert.doesNotMatch(worker.text, /indexedDB|IDBKeyRange|node:fs|readFileSync/, 'no IndexedDB or fs code in the bundled JavaScript');
  assert.equal(worker.wasm.length, 1, 'one .wasm module');
  const jsGzip = worker.js.reduce((n, f) => n + gzipSync(f.contents).length, 0);
  const wasmGzip = gzipSync(worker.wasm[0].contents).length;
  const total = jsGzip + wasmGzip;
  t.diagnostic(
    `worker bundle: ${stores.length + 1} modules imported (${['autocontext', ...stores].join(', ')}); ` +
      `JavaScript ${kib(worker.js.reduce((n, f) => n + f.contents.length, 0))} (${kib(jsGzip)} gzip), ` +
      `wasm ${kib(worker.wasm[0].contents.length)} (${kib(wasmGzip)} gzip); total ${kib(total)} gzip of the 3 MiB free-plan limit`,
  );
  assert.ok(total < FREE_PLAN_LIMIT, `the Worker bundle (${kib(total)} gzip) must stay under Cloudflare's free-plan 3 MiB`);
});

test('browser: the web entry and the IndexedDB store; no Node or fs code', async () => {
  const web = await bundle(
    `import { countTokens } from 'autocontext';\nimport { IndexedDBStore } from 'autocontext/stores/indexeddb';\nimport { MemoryStore } from 'autocontext/stores/memory';\nexport { countTokens, IndexedDBStore, MemoryStore };`,
    { platform: 'browser', conditions: ['browser'] },
  );
  assert.ok(web.inputs.includes(`${dist}entrypoints/web.js`), web.inputs.join('\n'));
  assert.ok(web.inputs.includes(`${dist}stores/indexeddb.js`));
  assert.deepEqual(web.inputs.filter((i) => /entrypoints\/(node|workerd)\.js$|stores\/fs\.js$/.test(i)), []);
  assert.doesNotMatch(web.text, /node:fs|readFileSync/);
  // A bundler that knows no runtime condition falls back to the same web entry.
  const plain = await bundle(`export * from 'autocontext';`, { platform: 'neutral', conditions: [] });
  assert.ok(plain.inputs.includes(`${dist}entrypoints/web.js`), 'the default condition is the web entry');
});

test("every build's module returns at most one value from each export", () => {
  // V8 compiles a wrapper of its own for every multi-value export signature while the module
  // compiles, on every cold start (scripts/single-value.mjs); single-value exports share one.
  const modules = walk(join(pkgDir, 'dist')).filter((f) => f.endsWith('.wasm'));
  assert.equal(modules.length, 3, `the default, full and estimator-only builds: ${modules.join(', ')}`);
  for (const file of modules) {
    const results = exportResults(readFileSync(file));
    assert.ok(results.size > 20, `${file}: ${results.size} exported functions`);
    const multi = [...results].filter(([, n]) => n > 1).map(([name, n]) => `${name} (${n} values)`);
    assert.deepEqual(multi, [], `${relative(pkgDir, file)} exports functions returning several values`);
  }
});

test("every build's glue passes a long string into the module through the native encoder", () => {
  // wasm-bindgen copies a string's ASCII a character at a time in a JavaScript loop; our JSON
  // texts are long (scripts/long-strings.mjs). Each build's glue must carry the native path,
  // and call it for long strings only.
  const glues = walk(join(pkgDir, 'dist')).filter((f) => f.endsWith('autocontext.js') && f.includes('wasm'));
  assert.equal(glues.length, 3, glues.join(', '));
  for (const file of glues) {
    const text = readFileSync(file, 'utf8');
    assert.match(text, /function passLongStringToWasm0\(arg,\s*malloc,\s*realloc\)\s*\{[^]*?encodeInto\(arg,/, relative(pkgDir, file));
    assert.match(text, /if\s*\(arg\.length\s*>\s*128\)\s*return\s+passLongStringToWasm0\(arg,\s*malloc,\s*realloc\)/, relative(pkgDir, file));
  }
});

function walk(dir) {
  return readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]));
}

/** Each exported function of a module, by name: how many values it returns. */
function exportResults(bytes) {
  const results = []; // per type: how many values it returns
  const funcs = []; // per function index: its type's result count
  const out = new Map();
  for (const { id, body } of sections(bytes)) {
    if (id === 1) {
      for (let n = body.leb(); n > 0; n--) {
        assert.equal(body.u8(), 0x60, 'a function type');
        body.take(body.leb()); // parameters
        const count = body.leb();
        body.take(count);
        results.push(count);
      }
    } else if (id === 2) {
      funcs.push(...importedFunctions(body).map((t) => results[t]));
    } else if (id === 3) {
      for (let n = body.leb(); n > 0; n--) funcs.push(results[body.leb()]);
    } else if (id === 7) {
      for (let n = body.leb(); n > 0; n--) {
        const name = body.name();
        const kind = body.u8();
        const index = body.leb();
        if (kind === 0) out.set(name, funcs[index]);
      }
    }
  }
  return out;
}

function kib(bytes) {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}
