#!/usr/bin/env node
// The demo's static server (`npm run www`): the page in www/, the built package (its
// package.json and dist/) under /pkg/, and the bundled example conversation as /sample.json,
// read from examples/ at request time so the demo never holds a copy. The page imports the
// package by name through an import map injected in place of its `<!-- importmap -->`
// comment, resolved with the `browser` condition of the package's exports, as a bundler would.
//
//   node scripts/www.mjs [--port 8080] [--host 127.0.0.1] [--package DIR]
//
// `--package` serves another copy of the package (the tests serve the packed, installed one).
// It listens on 127.0.0.1 unless told otherwise.

import { createServer } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Content types of the files the demo and the browser tests serve. */
export const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.map': 'application/json; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
};

/** Resolves one `exports` target with the given conditions (in the package's own key order). */
function pick(target, conditions) {
  if (typeof target === 'string') return target;
  if (target === null || typeof target !== 'object') return null;
  for (const [condition, value] of Object.entries(target)) {
    if (conditions.includes(condition)) {
      const found = pick(value, conditions);
      if (found !== null) return found;
    }
  }
  return null;
}

/** The import map for the package at `packageDir` served under `base`: every JS subpath, browser condition. */
export function importMap(packageDir, base = '/pkg/') {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  const imports = {};
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    const file = pick(target, ['browser', 'import', 'default']);
    if (file === null || !/\.m?js$/.test(file)) continue;
    imports[subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`] = base + file.replace(/^\.\//, '');
  }
  return { imports };
}

/** The file under `dir` that `rest` names, or `null` when it would leave `dir`. */
export function inside(dir, rest) {
  const file = resolve(dir, '.' + sep + rest);
  return file === dir || file.startsWith(dir + sep) ? file : null;
}

/**
 * Starts the server. Resolves to `{ url, close() }`.
 *
 * @param {{ port?: number, host?: string, packageDir?: string, wwwDir?: string, sample?: string }} options
 */
export async function startServer({ port = 0, host = '127.0.0.1', packageDir = ROOT, wwwDir = join(ROOT, 'www'), sample = join(ROOT, 'examples', 'long-conversation.json') } = {}) {
  const pkgDir = resolve(packageDir);
  const www = resolve(wwwDir);
  if (!existsSync(join(pkgDir, 'dist', 'entrypoints', 'web.js'))) {
    throw new Error(`${join(pkgDir, 'dist')} is not built: run \`npm run build\` first`);
  }
  const server = createServer(async (req, res) => {
    const send = (status, type, body) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain', 'method not allowed');
    let path;
    try {
      path = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
    } catch {
      return send(400, 'text/plain', 'bad request');
    }
    let file = null;
    if (path === '/sample.json') file = sample;
    else if (path === '/pkg/package.json') file = join(pkgDir, 'package.json');
    else if (path.startsWith('/pkg/dist/')) file = inside(join(pkgDir, 'dist'), path.slice('/pkg/dist/'.length));
    else if (!path.startsWith('/pkg/')) file = inside(www, path === '/' ? 'index.html' : path.slice(1));
    if (file === null) return send(404, 'text/plain', 'not found');
    try {
      if (!(await stat(file)).isFile()) return send(404, 'text/plain', 'not found');
      let body = await readFile(file);
      if (extname(file) === '.html') {
        // Read the exports afresh, so a rebuild needs no restart.
        const script = `<script type="importmap">${JSON.stringify(importMap(pkgDir))}</script>`;
        body = body.toString('utf8').replace('<!-- importmap -->', script);
      }
      send(200, TYPES[extname(file)] ?? 'application/octet-stream', body);
    } catch {
      send(404, 'text/plain', 'not found');
    }
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, ok);
  });
  const address = server.address();
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections?.();
        server.close(() => ok());
      }),
  };
}

async function main() {
  const { values } = parseArgs({
    options: { port: { type: 'string' }, host: { type: 'string' }, package: { type: 'string' } },
  });
  const port = Number(values.port ?? process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a port number, got ${values.port}`);
  const options = { port, host: values.host ?? '127.0.0.1' };
  if (values.package) options.packageDir = values.package;
  let server;
  try {
    server = await startServer(options);
  } catch (e) {
    if (e.code === 'EADDRINUSE') throw new Error(`port ${port} is in use: try --port ${port + 1}`);
    throw e;
  }
  process.stdout.write(`autocontext demo: ${server.url}/  (Ctrl-C stops it)\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((e) => {
    process.stderr.write(`www: ${e.message}\n`);
    process.exitCode = 1;
  });
}
