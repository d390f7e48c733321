// Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by playwright-core
// (which never downloads a browser here), pages served by a tiny static server on 127.0.0.1, and
// an import map that lets a page import the installed package by its name, as a bundler
// resolving the `browser` condition would. No request ever leaves 127.0.0.1.
//
//   const server = await serve({ '/pkg/': packageDir, '/': pageDir }, { importMap: packageImportMap(packageDir, '/pkg/') });
//   const browser = await launch();
//   const page = await browser.open(`${server.url}/page.html`);
//   ...
//   await browser.close(); await server.close();

import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { importMap, inside, TYPES } from '../../scripts/www.mjs';

/** Where Debian installs Chromium. */
export const CHROMIUM = '/usr/bin/chromium';

/** The flags every launch uses (headless, no sandbox as root, and nothing that calls home). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why the browser tests cannot run here, or `null` when they can. */
export function unavailable() {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing (install Debian's chromium: apt-get install -y chromium)`;
  return null;
}

/**
 * The import map for a page that imports the package at `packageDir`, served under `base`
 * (for example `/pkg/`): every subpath of its `exports`, resolved with the `browser` condition.
 * The demo server's own (scripts/www.mjs).
 */
export const packageImportMap = importMap;

/**
 * Serves directories over HTTP on 127.0.0.1 (a free port). `routes` maps a URL prefix ending in
 * `/` to a directory; the longest prefix wins. With `importMap`, the `<!-- importmap -->` comment
 * of every HTML page is replaced by that import map. Responses are never cached, so each page
 * load fetches the package afresh.
 *
 * @returns {Promise<{ url: string, requests: string[], close(): Promise<void> }>}
 */
export async function serve(routes, { importMap } = {}) {
  const table = Object.entries(routes)
    .map(([prefix, dir]) => [prefix, resolve(dir)])
    .sort((a, b) => b[0].length - a[0].length);
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    requests.push(path);
    const send = (status, type, body) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const route = table.find(([prefix]) => path.startsWith(prefix));
    if (!route || req.method !== 'GET') return send(404, 'text/plain', 'not found');
    const [prefix, dir] = route;
    const file = inside(dir, path.slice(prefix.length));
    if (file === null) return send(403, 'text/plain', 'forbidden');
    try {
      if (!(await stat(file)).isFile()) return send(404, 'text/plain', 'not found');
      let body = await readFile(file);
      const type = TYPES[extname(file)] ?? 'application/octet-stream';
      if (importMap && extname(file) === '.html') {
        const script = `<script type="importmap">${JSON.stringify(importMap)}</script>`;
        body = body.toString('utf8').replace('<!-- importmap -->', script);
      }
      send(200, type, body);
    } catch {
      send(404, 'text/plain', 'not found');
    }
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', ok);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections?.();
        server.close(() => ok());
      }),
  };
}

/**
 * Launches headless Chromium with a fresh profile directory (so IndexedDB and localStorage start
 * empty and persist across reloads of this launch). Requests to anything but 127.0.0.1 are
 * aborted. Page errors and console errors are collected in `errors`; every request that failed
 * or was answered with an error status (a missing favicon included), in `failed`.
 *
 * @returns {Promise<{ context: import('playwright-core').BrowserContext, errors: string[], failed: string[],
 *   open(url: string): Promise<import('playwright-core').Page>, close(): Promise<void> }>}
 */
export async function launch() {
  const why = unavailable();
  if (why) throw new Error(`cannot launch Chromium: ${why}`);
  const { chromium } = await import('playwright-core');
  const profile = await mkdtemp(join(tmpdir(), 'autocontext-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
  } catch (e) {
    await rm(profile, { recursive: true, force: true });
    throw e;
  }
  const errors = [];
  const failed = [];
  await context.route('**/*', (route) => {
    const { hostname } = new URL(route.request().url());
    return hostname === '127.0.0.1' ? route.continue() : route.abort();
  });
  const watch = (page) => {
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/favicon\.ico/.test(m.location()?.url ?? '')) errors.push(`console: ${m.text()}`);
    });
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    page.on('requestfailed', (r) => failed.push(`failed ${r.url()}: ${r.failure()?.errorText ?? ''}`));
  };
  context.pages().forEach(watch);
  context.on('page', watch);
  return {
    context,
    errors,
    failed,
    async open(url) {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(url);
      return page;
    },
    async close() {
      await context.close().catch(() => {});
      await rm(profile, { recursive: true, force: true });
    },
  };
}
