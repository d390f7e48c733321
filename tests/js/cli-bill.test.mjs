// The bill in the command's report: what the model calls cost in input tokens with and without
// autocontext, plainly and cache-aware. Every expected figure is computed here, on a small
// conversation, from the package's public API (countTokens, AutoContextMemory) and the pricing
// rules written out below, never from the command's own accounting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AutoContextMemory, MemoryStore, countTokens, offlineSummarize } from 'autocontext';
import { cli, near, tempDir } from './cli-helpers.mjs';

/** A coding session: a system prompt, a task, four tool rounds with results of `words` words (about 7 characters each), an answer. */
function conversation(words = 1200) {
  const text = (seed, count) => Array.from({ length: count }, (_, i) => `w${(seed * 7919 + i * 104729) % 99991}`).join(' ');
  const messages = [
    { role: 'system', content: 'You are a careful coding agent.' },
    { role: 'user', content: 'Find why the invoice totals are off by a cent and fix it.' },
  ];
  for (let r = 1; r <= 4; r++) {
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `call_${r}`, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/part${r}.py` }) } }] });
    messages.push({ role: 'tool', tool_call_id: `call_${r}`, content: `# src/part${r}.py\n${text(r, words)}` });
  }
  messages.push({ role: 'assistant', content: 'Rounding happened per line instead of per invoice; fixed in src/part3.py.' });
  return messages;
}

/** Tokens of an OpenAI chat message: its text, each tool call's name and arguments, 3 per tool block, 4 per message. */
function tokensOf(m) {
  let n = 4 + (typeof m.content === 'string' ? countTokens(m.content) : 0);
  for (const c of m.tool_calls ?? []) n += 3 + countTokens(c.function.name) + countTokens(c.function.arguments);
  if (m.role === 'tool') n += 3;
  return n;
}

/** The bill of a list of requests, priced as written out: cached = the leading messages the previous request had too. */
function price(requests, window) {
  const out = { inputTokens: 0, cachedTokens: 0, anthropic: 0, openai: 0, rewrites: 0, overWindow: 0 };
  let previous = [];
  for (const request of requests) {
    const keys = request.map((m) => JSON.stringify(m));
    let p = 0;
    while (p < keys.length && p < previous.length && keys[p] === previous[p]) p++;
    const cached = request.slice(0, p).reduce((a, m) => a + tokensOf(m), 0);
    const total = 3 + request.reduce((a, m) => a + tokensOf(m), 0);
    out.inputTokens += total;
    out.cachedTokens += cached;
    out.anthropic += 0.1 * cached + 1.25 * (total - cached);
    out.openai += 0.1 * cached + (total - cached);
    if (p < previous.length) out.rewrites++;
    if (total > window) out.overWindow++;
    previous = keys;
  }
  return out;
}

/** The requests of an agent loop without autocontext: the whole history before each assistant message. */
const historyRequests = (messages) => messages.flatMap((m, i) => (m.role === 'assistant' ? [messages.slice(0, i)] : []));

/** The requests autocontext sends in the same loop, through the public API as a host drives it. */
async function autocontextRequests(messages, maxToken) {
  const memory = new AutoContextMemory({ maxToken, tokenRatio: 0.75, summarize: offlineSummarize, store: new MemoryStore() });
  const requests = [];
  for (const m of messages) {
    if (m.role === 'assistant') {
      await memory.compressIfNeeded();
      requests.push(memory.messages());
    }
    memory.add(m);
  }
  return requests;
}

async function run(args, messages = conversation()) {
  const dir = await tempDir();
  const file = join(dir, 'session.json');
  await writeFile(file, JSON.stringify({ messages }));
  const text = await cli(['compress', file, ...args]);
  const json = await cli(['compress', file, ...args, '--json']);
  assert.equal(text.code, 0, text.stderr);
  assert.equal(json.code, 0, json.stderr);
  return { text: text.stdout, bill: JSON.parse(json.stdout).bill };
}

const pct = (part, whole) => Math.round((1000 * part) / whole) / 10;

test('bill: a conversation that fits, its results under toolResultLimit, costs the same with and without, cached up to the previous request', async () => {
  const messages = conversation(200);
  const { text, bill } = await run(['--max-token', '100000'], messages);
  const expected = price(historyRequests(messages), 100_000);
  assert.equal(bill.prices, 'anthropic');
  assert.deepEqual([bill.cacheRead, bill.cacheWrite], [0.1, 1.25]);
  assert.equal(bill.calls, 5);
  for (const side of [bill.without, bill.with]) {
    assert.deepEqual(side, {
      inputTokens: expected.inputTokens,
      cachedTokens: expected.cachedTokens,
      cacheAware: Math.round(expected.anthropic),
      rewrites: 0,
      overWindow: 0,
    });
  }
  assert.deepEqual(bill.saved, { inputTokens: 0, cacheAware: 0, inputPercent: 0, cacheAwarePercent: 0 });
  const fmt = (x) => x.toLocaleString('en-US');
  assert.match(text, /^ {2}bill of 5 model calls\s+input tokens\s+cache-aware$/m);
  assert.match(text, new RegExp(`^  without autocontext\\s+${fmt(expected.inputTokens)}\\s+${fmt(Math.round(expected.anthropic))}   0 calls over the window$`, 'm'));
  assert.match(text, new RegExp(`^  with autocontext\\s+${fmt(expected.inputTokens)}\\s+${fmt(Math.round(expected.anthropic))}   0 calls rewrote the prompt$`, 'm'));
  assert.match(text, /^ {2}saved\s+0\.0%\s+0\.0%$/m);
  assert.match(text, /^ {2}cache-aware: input tokens at Anthropic's prices, cache read 0\.1×, cache write 1\.25× \(--prices openai\)$/m);
});

test('bill: a long result is cut before it is first sent, so a conversation that fits costs less and rewrites nothing', async () => {
  const messages = conversation();
  const { bill } = await run(['--max-token', '100000'], messages);
  const without = price(historyRequests(messages), 100_000);
  assert.equal(bill.without.inputTokens, without.inputTokens);
  assert.equal(bill.with.rewrites, 0, 'each result was cut as it came, at the end of the request');
  assert.ok(bill.with.inputTokens < 0.6 * bill.without.inputTokens, `${bill.with.inputTokens} vs ${bill.without.inputTokens}`);
  assert.ok(bill.saved.cacheAwarePercent > 30, `${bill.saved.cacheAwarePercent}%`);
});

test('bill: under a small window autocontext sends less and says so; --prices openai prices cached input at 0.1', async () => {
  const messages = conversation();
  const window = 4000;
  const { text, bill } = await run(['--max-token', String(window), '--prices', 'openai']);
  const without = price(historyRequests(messages), window);
  const withAc = price(await autocontextRequests(messages, window), window);
  assert.equal(bill.prices, 'openai');
  assert.deepEqual([bill.cacheRead, bill.cacheWrite], [0.1, 1]);
  // Without autocontext: the history is what it is, to the token.
  assert.deepEqual(bill.without, { inputTokens: without.inputTokens, cachedTokens: without.cachedTokens, cacheAware: Math.round(without.openai), rewrites: 0, overWindow: without.overWindow });
  assert.ok(without.overWindow >= 2, `the history outgrows the window: ${without.overWindow}`);
  // With it: the same requests as a host replaying through the API gets, up to the offload
  // markers' random uuids (a few tokens each).
  assert.ok(near(bill.with.inputTokens, withAc.inputTokens), `${bill.with.inputTokens} vs ${withAc.inputTokens}`);
  assert.ok(near(bill.with.cacheAware, withAc.openai), `${bill.with.cacheAware} vs ${withAc.openai}`);
  assert.equal(bill.with.rewrites, withAc.rewrites);
  assert.ok(withAc.rewrites >= 1, 'a compression rewrites the prompt');
  assert.equal(bill.with.overWindow, 0);
  assert.ok(bill.with.inputTokens < bill.without.inputTokens);
  assert.equal(bill.saved.inputTokens, bill.without.inputTokens - bill.with.inputTokens);
  assert.equal(bill.saved.cacheAware, bill.without.cacheAware - bill.with.cacheAware);
  assert.equal(bill.saved.inputPercent, pct(bill.saved.inputTokens, bill.without.inputTokens));
  assert.equal(bill.saved.cacheAwarePercent, pct(bill.saved.cacheAware, bill.without.cacheAware));
  const over = without.overWindow;
  assert.match(text, new RegExp(`^  without autocontext\\s+[\\d,]+\\s+[\\d,]+   ${over} calls over the window$`, 'm'));
  assert.match(text, /^ {2}cache-aware: input tokens at OpenAI's prices, cached input 0\.1×, the rest 1× \(--prices anthropic\)$/m);
});

test('bill: the same figures as the engine counts them, in the Anthropic format too', async () => {
  // One conversation in the Anthropic shape: the bill's request tokens are the engine's own
  // tokenCount() at each model call (the replay's per-call figures), summed.
  const messages = [
    { role: 'user', content: 'List the files, then read the largest.' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'ls', input: { path: '.' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.py b.py c.py' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'Reading c.py.' }, { type: 'tool_use', id: 't2', name: 'read', input: { path: 'c.py' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'def total(lines):\n    return sum(lines)\n'.repeat(40) }] }] },
    { role: 'assistant', content: 'c.py sums the lines.' },
  ];
  const dir = await tempDir();
  const file = join(dir, 'anthropic.json');
  await writeFile(file, JSON.stringify(messages));
  const r = await cli(['replay', file, '--max-token', '100000', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.format, 'anthropic');
  const modelCalls = report.calls.filter((c) => c.message < messages.length);
  assert.equal(report.bill.calls, 3);
  assert.equal(report.bill.with.inputTokens, modelCalls.reduce((a, c) => a + c.tokens, 0));
  assert.equal(report.bill.without.inputTokens, modelCalls.reduce((a, c) => a + c.tokensWithout, 0));
  // Each request extends the one before: everything but the newest messages is cached.
  assert.equal(report.bill.without.cachedTokens, modelCalls[0].tokensWithout - 3 + modelCalls[1].tokensWithout - 3);
});

test('bill: --prices takes anthropic or openai, nothing else', async () => {
  const r = await cli(['compress', 'whatever.json', '--max-token', '1000', '--prices', 'google']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--prices must be anthropic or openai; got "google"/);
});
