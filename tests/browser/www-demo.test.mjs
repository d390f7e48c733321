// The demo page (www/, served by scripts/www.mjs as `npm run www` serves it) in headless
// Chromium, against the installed package: it loads the bundled sample, plays it to the end,
// and the meter never shows a request over the window; compressions are marked on the chart;
// a reload from IndexedDB shows the original text byte-exact; other settings and a file of
// one's own replay too. Its figures are the command line's for the same input, the same on every
// run, and agree with each other or say why not; no request fails. Screenshots go to target/ (or
// AUTOCONTEXT_SCREENSHOT_DIR).
//
// AUTOCONTEXT_PACKAGE_DIR names the installed package; scripts/test-browser.sh sets it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from './chromium.mjs';
import { startServer } from '../../scripts/www.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const packageDir = process.env.AUTOCONTEXT_PACKAGE_DIR;
assert.ok(packageDir && existsSync(join(packageDir, 'package.json')), 'AUTOCONTEXT_PACKAGE_DIR must name the installed package');
const shots = process.env.AUTOCONTEXT_SCREENSHOT_DIR ?? join(root, 'target');
const sample = JSON.parse(await readFile(join(root, 'examples', 'long-conversation.json'), 'utf8')).messages;

let server;
let browser;
let page;

before(async () => {
  server = await startServer({ packageDir });
  browser = await launch();
  page = await browser.open('about:blank');
  await page.setViewportSize({ width: 1360, height: 1080 });
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Waits until the page's state is one of `states`; fails with the page's status line otherwise. */
async function until(states, timeout = 120_000) {
  await page.waitForFunction((s) => s.includes(document.body.dataset.state), states, { timeout });
  const state = await page.evaluate(() => document.body.dataset.state);
  const status = await page.textContent('#status');
  assert.ok(states.includes(state), `state ${state}: ${status}`);
  return status;
}

/** Records every value the meter shows from now on. */
function watchMeter() {
  return page.evaluate(() => {
    const meter = document.getElementById('meter');
    window.meterLog = [];
    new MutationObserver(() => window.meterLog.push({ tokens: Number(meter.dataset.tokens), budget: Number(meter.dataset.budget) })).observe(meter, {
      attributes: true,
      attributeFilter: ['data-tokens'],
    });
  });
}

test('the demo plays the bundled sample to the end; the meter never passes the window', async () => {
  await page.goto(`${server.url}/`);
  await until(['ready']);
  assert.match(await page.textContent('#status'), /158 messages, 8 user turns, 68 model calls \(openai\), and the next call after the last message: 69 requests/);
  await watchMeter();
  await page.click('#to-end');
  await until(['done']);

  const log = await page.evaluate(() => window.meterLog);
  assert.ok(log.length >= 69, `the meter moved at every model call (${log.length} updates)`);
  for (const { tokens, budget } of log) {
    assert.equal(budget, 32_000);
    assert.ok(tokens <= budget, `the meter showed ${tokens} tokens over a ${budget}-token window`);
  }
  assert.ok(Math.max(...log.map((l) => l.tokens)) > 10_000, 'the meter showed real requests (the largest is about 16,700 tokens)');

  const points = await page.evaluate(() => window.demo.state.points);
  assert.equal(points.length, 69);
  // The bill prices the conversation's 68 model calls (not the next one): its request tokens
  // are the engine's own counts at each call, summed, with and without autocontext.
  const bill = await page.evaluate(() => ({ ...document.getElementById('bill').dataset, text: document.getElementById('bill').innerText }));
  const billed = points.slice(0, 68);
  assert.equal(bill.prices, 'anthropic');
  assert.equal(Number(bill.with), billed.reduce((a, p) => a + p.tokens, 0));
  assert.equal(Number(bill.without), billed.reduce((a, p) => a + p.without, 0));
  assert.ok(Number(bill.withCacheAware) < Number(bill.withoutCacheAware), `cache-aware ${bill.withCacheAware} vs ${bill.withoutCacheAware}`);
  assert.match(bill.text, /bill of 68 model calls/);
  assert.match(bill.text, /43 over the window/);
  assert.match(bill.text, /Anthropic's prices/);
  assert.ok(points.some((p) => p.without > 32_000), 'without autocontext the sample overflows the window');
  const compressed = points.filter((p) => p.events.length > 0).length;
  assert.ok(compressed >= 3);
  assert.equal(await page.locator('#chart .event-mark').count(), compressed, 'one mark per compression on the chart');
  assert.equal(await page.locator('#chart .bar-with').count(), 69);
  assert.equal(await page.locator('#chart .bar-with.over').count(), 0);
  assert.equal(await page.textContent('#progress'), 'the 68 model calls and the next one');
  assert.ok((await page.locator('#working li[data-kind=summary]').count()) >= 1, 'a summary is highlighted in the working list');
  assert.ok((await page.locator('#working li[data-kind=truncated]').count()) >= 1, 'a truncated result is highlighted');
  const offloads = await page.locator('#offloads li[data-uuid]').count();
  assert.ok(offloads >= 5, `${offloads} offloads listed`);
  const stored = await page.evaluate(async () => (await window.demo.store.keys(`${window.demo.state.memory.sessionId}/`)).filter((k) => !k.includes('/log-')));
  assert.equal(stored.length, offloads, 'every offload listed is in IndexedDB (beside the chunks of the log)');
  assert.deepEqual(browser.errors, []);
  assert.deepEqual(browser.failed, [], 'no request failed (the favicon included)');

  await mkdir(shots, { recursive: true });
  const shot = join(shots, 'www-demo.png');
  await page.screenshot({ path: shot });
  console.log(`# screenshot: ${shot}`);
});

/** The figures the page shows once a replay is done. */
function figures() {
  return page.evaluate(() => {
    const bill = document.getElementById('bill').dataset;
    const stats = Object.fromEntries([...document.querySelectorAll('#stats .stat')].map((s) => [s.querySelector('span').textContent, s.querySelector('b').textContent]));
    const points = window.demo.state.points;
    return {
      status: document.getElementById('status').textContent,
      billCalls: document.getElementById('bill-calls').textContent,
      billText: document.getElementById('bill').innerText,
      bill: { with: Number(bill.with), without: Number(bill.without), withCacheAware: Number(bill.withCacheAware), withoutCacheAware: Number(bill.withoutCacheAware) },
      stats,
      points: points.map((p) => [p.tokens, p.without, p.events.join(',')]),
      events: window.demo.state.events.map(({ call, event }) => [call, event.type, event.messageCount, event.tokensBefore, event.tokensAfter]),
      offloads: window.demo.state.memory.offloads().map((o) => o.messageCount),
      working: document.getElementById('working-count').textContent,
    };
  });
}

/** The command line's report of the sample, with the installed package's `autocontext compress`. */
function cliReport() {
  return new Promise((ok, fail) =>
    execFile(process.execPath, [join(packageDir, 'dist', 'cli.js'), 'compress', join(root, 'examples', 'long-conversation.json'), '--max-token', '32000', '--json'], { maxBuffer: 64 << 20 }, (e, stdout, stderr) =>
      e ? fail(new Error(`${e.message}: ${stderr}`)) : ok(JSON.parse(stdout)),
    ),
  );
}

test('the figures agree with each other, with the command line, and from run to run', async () => {
  const first = await figures();
  const cli = await cliReport();
  const n = (s) => Number(String(s).replaceAll(',', ''));
  const last = first.points[first.points.length - 1];
  // The bill and the over-the-window counts are of the conversation's 68 model calls; the
  // 69th request, after the last message, is said to be left out, with its size.
  assert.match(first.billCalls, /bill of 68 model calls/);
  assert.equal(first.stats['of 68 model calls over the window, with / without'], `0 / ${cli.turns.overWindowWithout}`);
  assert.match(first.billText, new RegExp(`${cli.bill.without.overWindow} over the window`));
  assert.match(first.status, new RegExp(`Done: 68 model calls, 0 over the window \\(without autocontext: ${cli.turns.overWindowWithout}\\)`));
  assert.match(first.status, new RegExp(`The next call, after the last message, would send ${last[0].toLocaleString('en-US')} tokens .* the bill leaves it out`));
  assert.match(first.billText, /the next call, after the last message, is not billed/);
  assert.match(await page.textContent('#chart-note'), /69 bars: the conversation's 68 model calls and the next one/);
  // The same as `autocontext compress` on the same input, figure for figure.
  assert.deepEqual(first.bill, { with: cli.bill.with.inputTokens, without: cli.bill.without.inputTokens, withCacheAware: cli.bill.with.cacheAware, withoutCacheAware: cli.bill.without.cacheAware });
  assert.equal(n(first.stats['tokens saved in the last request']), cli.saved.tokens);
  assert.deepEqual([last[0], last[1]], [cli.after.tokens, cli.before.tokens]);
  assert.equal(first.working, `${cli.after.messages} messages · ${cli.after.tokens.toLocaleString('en-US')} tokens`);
  assert.equal(n(first.stats['compression events']), cli.events.count);
  assert.equal(first.offloads.length, cli.offloads.count);
  assert.equal(first.offloads.reduce((a, k) => a + k, 0), cli.offloads.messages);
  // A list that scrolls says how much is out of view.
  const offloadsMore = await page.textContent('#offloads-more');
  assert.equal(await page.textContent('#offloads-count'), `(${cli.offloads.count})`);
  const visible = await page.isVisible('#offloads-more');
  const scrolls = await page.evaluate(() => { const l = document.getElementById('offloads'); return l.scrollHeight > l.clientHeight; });
  assert.equal(visible, scrolls, `the cue shows exactly when the list scrolls: ${offloadsMore}`);
  if (scrolls) {
    const [, inView, total, other] = /^(\d+) of (\d+) offloads in view · scroll for the other (\d+)$/.exec(offloadsMore) ?? [];
    assert.ok(Number(inView) > 0 && Number(other) > 0 && Number(inView) + Number(other) === cli.offloads.count && Number(total) === cli.offloads.count, offloadsMore);
  }
  assert.ok(await page.evaluate(() => document.getElementById('events').classList.contains('more-below')) === (await page.isVisible('#events-more')));

  // Again, from the start: the very same figures.
  await page.click('#reset');
  await until(['ready']);
  await page.click('#to-end');
  await until(['done']);
  assert.deepEqual(await figures(), first);
  assert.deepEqual(browser.errors, []);
  assert.deepEqual(browser.failed, []);
});

test('a reload shows the original text of an offload, byte-exact, from IndexedDB', async () => {
  const truncation = page.locator('#offloads li', { hasText: 'TOOL_RESULT_TRUNCATE' }).first();
  const uuid = await truncation.getAttribute('data-uuid');
  await truncation.locator('button.reload').click();
  await page.waitForSelector('#original[open]');
  assert.equal(await page.getAttribute('#original', 'data-uuid'), uuid);
  const shown = await page.$$eval('#original .original-message', (els) =>
    els.map((el) => ({ role: el.dataset.role, text: el.querySelector('.original-text')?.textContent ?? '' })),
  );
  assert.equal(shown.length, 1, 'a truncated result offloads its one message');
  const original = sample.find((m) => m.role === 'tool' && m.content === shown[0].text);
  assert.ok(original, 'the dialog shows a tool result of the sample, whole and byte-exact');
  assert.ok(original.content.length > 2_000, 'it was a result over toolResultLimit (2,000 characters)');
  assert.match(await page.textContent('#original-meta'), /reloaded from IndexedDB "autocontext-demo"/);

  const shot = join(shots, 'www-demo-reload.png');
  await page.screenshot({ path: shot });
  console.log(`# screenshot: ${shot}`);
  await page.click('#original button[value=close]');
  await page.waitForFunction(() => !document.getElementById('original').open);

  // A summary's original: every message the dialog shows that came from the sample is whole.
  const summaryRow = page.locator('#working li[data-kind=summary] button.reload').first();
  await summaryRow.click();
  await page.waitForSelector('#original[open]');
  const texts = await page.$$eval('#original .original-text', (els) => els.map((el) => el.textContent));
  assert.ok(texts.length > 1);
  const contents = new Set(sample.map((m) => (typeof m.content === 'string' ? m.content : '')));
  assert.ok(texts.filter((t) => contents.has(t)).length >= texts.length / 2, 'the originals, not summaries of them');
  await page.click('#original button[value=close]');
  await page.waitForFunction(() => !document.getElementById('original').open);

  // An offload whose messages stand for earlier offloads: the list says how many it names, the
  // dialog shows it expanded and says how its count follows from the list's.
  const naming = page.locator('#offloads li', { hasText: 'expands' }).first();
  const what = await naming.locator('.what').textContent();
  const [, own, earlier] = /^(\d+) messages · expands (\d+) earlier offloads?/.exec(what);
  await naming.locator('button.reload').click();
  await page.waitForSelector('#original[open]');
  const meta = await page.textContent('#original-meta');
  const count = await page.locator('#original .original-message').count();
  assert.ok(count > Number(own), `${count} messages shown for an offload of ${own}`);
  assert.match(meta, new RegExp(`^${count} messages, byte-exact, .*: the offload holds ${own} messages; \\d+ of them, written by earlier passes, stands? for ${earlier} earlier offloads? \\(`));
  await page.click('#original button[value=close]');
  assert.deepEqual(browser.errors, []);
  assert.deepEqual(browser.failed, []);
});

test('other settings and a file of your own replay within their window too', async () => {
  await page.fill('#max-token', '12000');
  await page.fill('#ratio', '0.6');
  await page.click('#settings button[type=submit]');
  await until(['ready']);
  await watchMeter();
  await page.click('#to-end');
  await until(['done']);
  const log = await page.evaluate(() => window.meterLog);
  assert.ok(log.length >= 69);
  for (const { tokens, budget } of log) {
    assert.equal(budget, 12_000);
    assert.ok(tokens <= budget, `${tokens} > ${budget}`);
  }

  // A small conversation of one's own, through the file input.
  const own = [
    { role: 'system', content: 'You are brief.' },
    { role: 'user', content: 'Say hello.' },
    { role: 'assistant', content: 'Hello.' },
  ];
  await page.setInputFiles('#file-input', { name: 'mine.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(own)) });
  await until(['ready']);
  assert.equal(await page.textContent('#source-name'), 'mine.json');
  await page.click('#to-end');
  await until(['done']);
  assert.equal(await page.textContent('#progress'), 'the 1 model call and the next one');
  assert.equal(await page.locator('#working li').count(), 3);

  // Not JSON: said plainly, nothing else changes.
  await page.setInputFiles('#file-input', { name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"messages": [') });
  await page.waitForFunction(() => document.getElementById('status').classList.contains('error'));
  assert.match(await page.textContent('#status'), /Cannot replay broken\.json: broken\.json is not JSON/);
  assert.deepEqual(browser.errors, []);
});
