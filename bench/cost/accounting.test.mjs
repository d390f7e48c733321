// The cost benchmark's accounting (js/accounting.js), trace conversion
// (bench/cost/traces.mjs) and summarizer pricing (bench/cost/summarizer.mjs, bench/cost/report.mjs):
// a bug in any would skew every figure of docs/benchmarks.md silently. Run by `npm test`; needs
// no build.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Ledger,
  MESSAGE_OVERHEAD,
  OPAQUE_PART_TOKENS,
  REQUEST_OVERHEAD,
  TOOL_BLOCK_OVERHEAD,
  canonical,
  commonPrefix,
  messageTokens,
  newestSent,
  recoverable,
  requestTokens,
  turnCost,
} from '../../js/accounting.js';
import { OUTPUT_PRICE, withSummarizer } from './report.mjs';
import { SummarizerLog } from './summarizer.mjs';
import { anthropicToOpenAI } from './traces.mjs';

// One token per character: every expected figure below can be read off the strings.
const chars = (s) => s.length;

const sys = { role: 'system', content: 'be brief' }; // 8
const user = { role: 'user', content: 'fix the bug' }; // 11
const call = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }] };
const result = { role: 'tool', tool_call_id: 'c1', content: 'a.txt b.txt' }; // 11
const answer = { role: 'assistant', content: 'done' }; // 4

test('a message costs its text, its tool calls, a tool result framing and the per-message overhead', () => {
  assert.equal(messageTokens(user, chars), MESSAGE_OVERHEAD + 11);
  assert.equal(messageTokens(call, chars), MESSAGE_OVERHEAD + TOOL_BLOCK_OVERHEAD + 2 + 2);
  assert.equal(messageTokens(result, chars), MESSAGE_OVERHEAD + TOOL_BLOCK_OVERHEAD + 11);
  const parts = { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] };
  assert.equal(messageTokens(parts, chars), MESSAGE_OVERHEAD + 4 + OPAQUE_PART_TOKENS);
  assert.equal(requestTokens([sys, user], chars), REQUEST_OVERHEAD + 2 * MESSAGE_OVERHEAD + 8 + 11);
});

test('cache-aware cost: Anthropic reads the prefix at 0.1 and writes the rest at 1.25, OpenAI reads it at 0.1', () => {
  const c = turnCost(1000, 1500);
  assert.equal(c.plain, 1500);
  assert.equal(c.anthropic, 0.1 * 1000 + 1.25 * 500);
  assert.equal(c.openai, 0.1 * 1000 + 500);
  assert.deepEqual(turnCost(0, 800), { plain: 800, anthropic: 1000, openai: 800 });
});

test('canonical JSON ignores key order and undefined fields, and tells different values apart', () => {
  assert.equal(canonical({ role: 'user', content: 'x' }), canonical({ content: 'x', role: 'user', name: undefined }));
  assert.notEqual(canonical({ role: 'user', content: 'x' }), canonical({ role: 'user', content: 'y' }));
  assert.notEqual(canonical({ content: null }), canonical({}));
  assert.equal(commonPrefix(['a', 'b', 'c'], ['a', 'b', 'x', 'y']), 2);
  assert.equal(commonPrefix(['a'], ['a', 'b']), 1);
  assert.equal(commonPrefix([], ['a']), 0);
});

test('the ledger: an extension is cached up to the previous request, a rewrite from its first changed message', () => {
  const ledger = new Ledger({ countText: chars, window: 60 });
  const t = (m) => messageTokens(m, chars);
  // First call: nothing cached.
  let r = ledger.turn([sys, user], user);
  assert.deepEqual([r.prefixMessages, r.prefixTokens, r.rewrite], [0, 0, false]);
  assert.equal(r.tokens, REQUEST_OVERHEAD + t(sys) + t(user));
  // Extends the previous request: the previous messages are the cached prefix.
  r = ledger.turn([sys, user, call, result], result);
  assert.deepEqual([r.prefixMessages, r.prefixTokens, r.rewrite, r.firstChanged], [2, t(sys) + t(user), false, null]);
  // A rewrite of message 1 (a copy with other content): only the system message is cached.
  const shorter = { ...user, content: 'fix' };
  r = ledger.turn([sys, shorter, call, result, answer], answer);
  assert.deepEqual([r.prefixMessages, r.prefixTokens, r.rewrite, r.firstChanged], [1, t(sys), true, 1]);
  // A deep-equal copy of an earlier message matches it: equality is by content, not identity.
  r = ledger.turn([{ ...sys }, { ...shorter }, call], call);
  assert.deepEqual([r.prefixMessages, r.rewrite, r.firstChanged], [3, true, 3], 'dropping the tail is a rewrite too');
  const totals = ledger.totals;
  assert.equal(totals.turns, 4);
  assert.equal(totals.rewrites, 2);
  const expected = ledger.turns.map((x) => turnCost(x.prefixTokens, x.tokens));
  assert.equal(totals.plain, expected.reduce((s, c) => s + c.plain, 0));
  assert.ok(Math.abs(totals.anthropic - expected.reduce((s, c) => s + c.anthropic, 0)) < 1e-9);
  assert.ok(Math.abs(totals.openai - expected.reduce((s, c) => s + c.openai, 0)) < 1e-9);
  assert.equal(totals.cachedTokens, ledger.turns.reduce((s, x) => s + x.prefixTokens, 0));
  // 3 + (4 + 8) + (4 + 11) = 30; + call (4 + 3 + 2 + 2) + result (4 + 3 + 11) = 59; with 'fix' (7)
  // and 'done' (8) in place of the user message 59 again; then 3 + 12 + 7 + 11 = 33.
  assert.deepEqual(
    ledger.turns.map((x) => x.tokens),
    [30, 59, 59, 33],
  );
  assert.equal(totals.overWindow, 0);
  assert.equal(totals.plain, 30 + 59 + 59 + 33);
  // The cached prefix is whole messages; the request overhead is always billed uncached.
  const anthropic = 1.25 * 30 + (0.1 * 27 + 1.25 * 32) + (0.1 * 12 + 1.25 * 47) + (0.1 * 30 + 1.25 * 3);
  assert.ok(Math.abs(totals.anthropic - anthropic) < 1e-9, `${totals.anthropic} vs ${anthropic}`);
  const openai = 30 + (0.1 * 27 + 32) + (0.1 * 12 + 47) + (0.1 * 30 + 3);
  assert.ok(Math.abs(totals.openai - openai) < 1e-9, `${totals.openai} vs ${openai}`);
  const tight = new Ledger({ countText: chars, window: 50 });
  for (const request of [[sys, user], [sys, user, call, result], [sys, user]]) tight.turn(request, request.at(-1));
  assert.equal(tight.totals.overWindow, 1, 'only the request over 50 tokens');
  assert.equal(totals.maxTokens, Math.max(...ledger.turns.map((x) => x.tokens)));
});

test('the ledger counts invalid and empty requests and a dropped or cut newest message', () => {
  const validate = (request) => (request.some((m) => m.role === 'tool') && !request.some((m) => m.tool_calls) ? [{ index: 0, message: 'orphan result' }] : []);
  const ledger = new Ledger({ countText: chars, window: 1000, validate });
  ledger.turn([sys], user); // empty: nothing but the system prompt (and the newest is missing)
  ledger.turn([sys, result], result); // a result whose call is gone: invalid
  const long = { ...result, content: `${'line\n'.repeat(30)}end` };
  ledger.turn([sys, user, call, { ...long, content: `${'line\n'.repeat(20)}[cut]` }], long); // cut to its head, still sent
  ledger.turn([sys, user, call, long], long); // valid, verbatim
  const t = ledger.totals;
  assert.equal(t.invalid, 2);
  assert.equal(t.empty, 1);
  assert.equal(t.newestDropped, 1);
  assert.equal(t.newestAltered, 1);
  assert.equal(ledger.invalidExamples.length, 2);
});

test('the newest message is sent when the request ends with it, whole or cut to its head (maybe under a header)', () => {
  assert.deepEqual(newestSent([sys, user], { ...user }), { sent: true, verbatim: true });
  const long = { role: 'tool', tool_call_id: 'c1', content: 'x'.repeat(100) + 'tail' };
  assert.deepEqual(newestSent([call, { role: 'tool', tool_call_id: 'c1', content: 'x'.repeat(70) + '…' }], long), { sent: true, verbatim: false });
  assert.equal(newestSent([call, { role: 'tool', tool_call_id: 'c2', content: long.content }], long).sent, false, 'another call answered');
  const previewed = { role: 'tool', tool_call_id: 'c1', content: `[Truncated: 1 block, ~30 tokens]\n\n${'x'.repeat(64)}\n\n[... 40 chars elided ...]` };
  assert.deepEqual(newestSent([call, previewed], long), { sent: true, verbatim: false }, 'the head under a one-line header');
  const summarized = { role: 'tool', tool_call_id: 'c1', content: '[Summarized: tool result, ~30 tokens]\n\nsomething else' };
  assert.equal(newestSent([call, summarized], long).sent, false, 'a header over another text');
  assert.equal(newestSent([call, { role: 'tool', tool_call_id: 'c1', content: `[a]\n[b]\n\n${long.content}` }], long).sent, false, 'a header of one line only');
  assert.equal(newestSent([sys, user], result).sent, false);
  assert.equal(newestSent([], user).sent, false);
});

test('recoverable: each original matches one sent or reloaded copy at most, whatever its key order', () => {
  const same = { role: 'tool', tool_call_id: 'c1', content: 'ok' };
  const originals = [sys, user, call, same, { ...same }, answer];
  // Sent: the system prompt (keys reordered), one of the two identical results; reloaded: the user message.
  const r = recoverable(originals, [{ content: 'be brief', role: 'system' }, same, { role: 'assistant', content: 'summary' }], [user]);
  assert.deepEqual(r, { originals: 6, recoverable: 3 });
  assert.deepEqual(recoverable(originals, originals), { originals: 6, recoverable: 6 });
  assert.deepEqual(recoverable(originals, []), { originals: 6, recoverable: 0 });
});

test('Anthropic traces become OpenAI chat messages with the same calls, results and text', () => {
  const out = anthropicToOpenAI([{ type: 'text', text: 'system text' }], [
    { role: 'user', content: 'hello' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 'sig' },
        { type: 'text', text: 'looking' },
        { type: 'tool_use', id: 't1', name: 'read', input: { path: 'a' } },
        { type: 'tool_use', id: 't2', name: 'read', input: { path: 'b' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 't1', content: 'A' },
        { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'B1' }, { type: 'text', text: 'B2' }], is_error: true },
        { type: 'text', text: 'also check c' },
      ],
    },
    { role: 'assistant', content: [{ type: 'text', text: 'done' }] },
  ]);
  assert.deepEqual(out, [
    { role: 'system', content: 'system text' },
    { role: 'user', content: 'hello' },
    {
      role: 'assistant',
      content: 'looking',
      tool_calls: [
        { id: 't1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } },
        { id: 't2', type: 'function', function: { name: 'read', arguments: '{"path":"b"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 't1', content: 'A' },
    { role: 'tool', tool_call_id: 't2', content: 'B1\n\nB2' },
    { role: 'user', content: 'also check c' },
    { role: 'assistant', content: 'done' },
  ]);
});

test('the ledger takes a whole-message counter in place of a text counter (another format, the engine counting)', () => {
  // Ten tokens per message whatever it holds: the prefix and the totals follow from the counts alone.
  const ledger = new Ledger({ messageTokens: () => 10, window: 35 });
  ledger.turn([sys, user], user);
  ledger.turn([sys, user, call], call);
  ledger.turn([sys, { ...user, content: 'other' }, call, result], result);
  assert.deepEqual(
    ledger.turns.map((x) => [x.tokens, x.prefixTokens, x.rewrite]),
    [
      [REQUEST_OVERHEAD + 20, 0, false],
      [REQUEST_OVERHEAD + 30, 20, false],
      [REQUEST_OVERHEAD + 40, 10, true],
    ],
  );
  assert.equal(ledger.totals.overWindow, 1);
  assert.equal(ledger.totals.plain, 3 * REQUEST_OVERHEAD + 90);
  assert.throws(() => new Ledger({ window: 10 }), /countText or messageTokens/);
});

test("summarizer pricing: the leading messages a call shares with the agent's previous request are cached", () => {
  const ask = { role: 'user', content: 'Summarize the conversation above.' };
  const log = new SummarizerLog();
  log.record([{ role: 'system', content: 'You summarize.' }, user], 'first'); // before any request: nothing cached
  log.sent([sys, user, result]);
  // The previous request byte for byte (keys in another order) plus an instruction.
  log.record([{ content: 'be brief', role: 'system' }, { ...user }, { ...result }, ask], 'second');
  // A fresh request that shares the first message only.
  log.record([sys, { role: 'user', content: 'the span' }], 'third');
  const d = log.drain(chars);
  const cached = 2 * messageTokens(sys, chars) + messageTokens(user, chars) + messageTokens(result, chars);
  assert.equal(d.calls, 3);
  assert.equal(d.cachedInput, cached);
  assert.equal(
    d.input,
    requestTokens([{ role: 'system', content: 'You summarize.' }, user], chars) + requestTokens([sys, user, result, ask], chars) + requestTokens([sys, { role: 'user', content: 'the span' }], chars),
  );
  assert.equal(d.output, 'first'.length + 'second'.length + 'third'.length);
  assert.equal(log.drain(chars).calls, 0, 'drained');
  const t = { anthropic: 1000, summarizerInput: d.input, summarizerCached: d.cachedInput, summarizerOutput: d.output };
  assert.ok(Math.abs(withSummarizer(t) - (1000 + (d.input - cached) + 0.1 * cached + OUTPUT_PRICE * d.output)) < 1e-9);
  assert.equal(withSummarizer({ ...t, summarizerCached: undefined }), 1000 + d.input + OUTPUT_PRICE * d.output, 'a run without the figure prices all input at 1×');
});
