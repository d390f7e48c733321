// The golden report: `autocontext compress examples/long-conversation.json --max-token 32000`
// (what `npm start` prints), with the offline summarizer, checked line by line against fixed
// numbers. Everything is exact, token counts included: an offload's uuid is drawn so that its
// marker counts the same tokens as every other, so a run's figures are the same every time.
//
// When a change to the engine changes these numbers on purpose, run the command above and
// update GOLDEN (and say so in the commit).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cli, EXAMPLE, n } from './cli-helpers.mjs';

const GOLDEN = {
  conversation: '158 messages · 8 user turns · 68 model turns (openai, detected)',
  budget: 'window 32,000 · target 24,000 (× 0.75) · o200k_base',
  before: { messages: 158, tokens: 91_456 },
  after: { messages: 67, tokens: 13_216 },
  // [type, count, messages replaced, tokens saved]: results cut at arrival above 2,000
  // characters, summaries at the trigger. No stub: in a 32k window the trigger's pass comes
  // before a stale batch's rent could pay for its rewrite three times over.
  events: [
    ['TOOL_RESULT_TRUNCATE', 16, 16, 58_899],
    ['EMERGENCY_OFFLOAD', 1, 2, 60],
    ['PREFIX_SUMMARY', 2, 53, 12_050],
    ['RECENT_FOCUS_WINDOW_COMPACT', 1, 40, 7_231],
  ],
  summarizer: { calls: 9, inputTokens: 23_884, outputTokens: 3_472 },
  turns: { user: 8, model: 68, overWindow: 0, overWindowWithout: 43 },
  largest: { tokens: 19_366, tokensWithout: 90_882 },
  passes: { checks: 69, compressed: 14 },
  // Each offload holds only its own span: a summary of earlier summaries names their offloads.
  offloads: { count: 20, messages: 111, bytes: 312_624 },
  // The bill of the 68 model calls at Anthropic's prices.
  bill: {
    without: { inputTokens: 3_448_490, cachedTokens: 3_357_407, cacheAware: 449_594, rewrites: 0, overWindow: 43 },
    with: { inputTokens: 717_950, cachedTokens: 664_155, cacheAware: 133_659, rewrites: 3, overWindow: 0 },
  },
};

const line = (stdout, label) => {
  const found = stdout.split('\n').find((l) => l.startsWith(`  ${label}`));
  assert.ok(found, `no "${label}" line in:\n${stdout}`);
  return found.slice(2 + label.length).trim();
};

test('golden: the text report of the bundled example', async () => {
  const { code, stdout, stderr } = await cli(['compress', EXAMPLE, '--max-token', '32000']);
  assert.equal(code, 0, stderr);
  assert.equal(stderr, '');
  const g = GOLDEN;
  assert.match(stdout, /^autocontext \d+\.\d+\.\d+\S* · compress .*long-conversation\.json\n\n/);
  assert.equal(line(stdout, 'conversation'), g.conversation);
  assert.equal(line(stdout, 'budget'), g.budget);
  const summarizer = /^offline: (\d+) calls · read ([\d,]+) · wrote ([\d,]+) tokens \(counted\)$/.exec(line(stdout, 'summarizer'));
  assert.ok(summarizer, line(stdout, 'summarizer'));
  assert.equal(Number(summarizer[1]), g.summarizer.calls);
  assert.equal(n(summarizer[2]), g.summarizer.inputTokens);
  assert.equal(n(summarizer[3]), g.summarizer.outputTokens, 'the offline summaries are deterministic');

  assert.equal(line(stdout, 'before'), `${g.before.messages}   ${g.before.tokens.toLocaleString('en-US')}   the whole conversation, sent as is`);
  const after = /^(\d+)\s+([\d,]+)   what the next model call sends, under the target$/.exec(line(stdout, 'after'));
  assert.ok(after, line(stdout, 'after'));
  assert.equal(Number(after[1]), g.after.messages);
  assert.equal(n(after[2]), g.after.tokens);
  const saved = /^(\d+)\s+([\d,]+)   ([\d.]+)% of the tokens$/.exec(line(stdout, 'saved'));
  assert.equal(Number(saved[1]), g.before.messages - g.after.messages);
  assert.equal(n(saved[2]), g.before.tokens - n(after[2]));

  // The events table: header, one row per type in order, the total.
  const lines = stdout.split('\n');
  const head = lines.findIndex((l) => /^ {2}events\s+count\s+messages\s+tokens saved$/.test(l));
  assert.ok(head > 0, stdout);
  for (const [i, [type, count, messages, tokens]] of g.events.entries()) {
    const row = new RegExp(`^  ${type}\\s+(\\d+)\\s+(\\d+)\\s+([\\d,]+)$`).exec(lines[head + 1 + i]);
    assert.ok(row, `row ${i + 1} should be ${type}: ${lines[head + 1 + i]}`);
    assert.deepEqual([Number(row[1]), Number(row[2])], [count, messages], type);
    assert.equal(n(row[3]), tokens, type);
  }
  const total = /^ {2}total\s+(\d+)\s+(\d+)\s+([\d,]+)$/.exec(lines[head + 1 + g.events.length]);
  assert.ok(total, lines[head + 1 + g.events.length]);
  assert.equal(Number(total[1]), g.events.reduce((a, e) => a + e[1], 0));
  assert.equal(Number(total[2]), g.events.reduce((a, e) => a + e[2], 0));
  assert.equal(n(total[3]), n(saved[2]), 'every token saved is an event');

  assert.equal(line(stdout, 'over the window'), `${g.turns.overWindow} of ${g.turns.model} model turns   without autocontext: ${g.turns.overWindowWithout}`);
  const largest = /^([\d,]+) tokens   without autocontext: ([\d,]+)$/.exec(line(stdout, 'largest request'));
  assert.ok(n(largest[1]) === g.largest.tokens && n(largest[1]) <= 32_000, largest[1]);
  assert.equal(n(largest[2]), g.largest.tokensWithout);
  const b = g.bill;
  const fmt = (x) => x.toLocaleString('en-US');
  assert.equal(line(stdout, 'bill of'), '68 model calls   input tokens   cache-aware');
  assert.equal(line(stdout, 'without autocontext'), `${fmt(b.without.inputTokens)}       ${fmt(b.without.cacheAware)}   ${b.without.overWindow} calls over the window`);
  const withRow = /^([\d,]+)\s+([\d,]+)   (\d+) calls rewrote the prompt$/.exec(line(stdout, 'with autocontext'));
  assert.ok(withRow, line(stdout, 'with autocontext'));
  assert.deepEqual([n(withRow[1]), n(withRow[2])], [b.with.inputTokens, b.with.cacheAware], withRow[0]);
  assert.equal(Number(withRow[3]), b.with.rewrites);
  const savedRows = stdout.split('\n').filter((l) => l.startsWith('  saved'));
  assert.equal(savedRows.length, 2, 'the sizes table and the bill each end with a saved row');
  const pct = (part, whole) => `${(Math.round((1000 * part) / whole) / 10).toFixed(1)}%`;
  assert.equal(
    savedRows[1].slice(7).trim().replace(/\s+/g, ' '),
    `${pct(b.without.inputTokens - n(withRow[1]), b.without.inputTokens)} ${pct(b.without.cacheAware - n(withRow[2]), b.without.cacheAware)}`,
  );
  assert.match(stdout, /^ {2}cache-aware: input tokens at Anthropic's prices, cache read 0\.1×, cache write 1\.25× \(--prices openai\)$/m);
  assert.equal(line(stdout, 'compression passes'), `${g.passes.compressed} of ${g.passes.checks} checks changed the working list`);
  assert.match(line(stdout, 'offloads written'), new RegExp(`^${g.offloads.count}, holding ${g.offloads.messages} messages \\([\\d.]+ KB\\)$`));
  assert.match(stdout, /^ {24}in memory, gone at exit \(--store DIR keeps them\)$/m);
  assert.match(line(stdout, 'time'), /^\d+(?: ms|\.\d\d s) in all, \d+(?: ms|\.\d\d s) of it compressing$/);
});

test('golden: the same numbers as JSON', async () => {
  const { code, stdout, stderr } = await cli(['compress', EXAMPLE, '--max-token', '32000', '--json']);
  assert.equal(code, 0, stderr);
  const r = JSON.parse(stdout);
  const g = GOLDEN;
  assert.equal(r.format, 'openai');
  assert.equal(r.formatFrom, 'detected');
  assert.deepEqual(r.before, g.before);
  assert.equal(r.after.messages, g.after.messages);
  assert.equal(r.after.tokens, g.after.tokens);
  assert.equal(r.after.underTarget, true);
  assert.deepEqual(r.turns, g.turns);
  assert.equal(r.largestRequest.tokensWithout, g.largest.tokensWithout);
  assert.deepEqual(r.passes, g.passes);
  assert.deepEqual(
    r.events.byType.map((e) => [e.type, e.count, e.messages]),
    g.events.map(([t, c, m]) => [t, c, m]),
  );
  assert.equal(r.summarizer.name, 'offline');
  assert.equal(r.summarizer.calls, g.summarizer.calls);
  assert.equal(r.summarizer.errors, 0);
  assert.equal(r.summarizer.failed, 0);
  assert.equal(r.summarizer.outputTokens, g.summarizer.outputTokens);
  assert.equal(r.summarizer.usage, 'counted');
  assert.deepEqual(r.bill.without, g.bill.without);
  assert.deepEqual([r.bill.prices, r.bill.cacheRead, r.bill.cacheWrite, r.bill.calls], ['anthropic', 0.1, 1.25, g.turns.model]);
  assert.deepEqual([r.bill.with.rewrites, r.bill.with.overWindow], [g.bill.with.rewrites, g.bill.with.overWindow]);
  assert.deepEqual(r.bill.with, g.bill.with);
  assert.equal(r.bill.with.overWindow, r.turns.overWindow, 'the bill and the turn count agree on the window');
  assert.equal(r.bill.without.overWindow, r.turns.overWindowWithout);
  assert.equal(r.offloads.count, g.offloads.count);
  assert.equal(r.offloads.messages, g.offloads.messages);
  assert.equal(r.offloads.bytes, g.offloads.bytes);
});
