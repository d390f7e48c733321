// offlineSummarize, the built-in extractive summarizer, as a user of the package calls it:
// directly, and as the summarize option of a memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { AutoContextMemory, offlineSummarize } from 'autocontext';
import { EXAMPLE } from './cli-helpers.mjs';
import { call } from './helpers.mjs';

const LLM_EVENTS = new Set([
  'RECENT_FOCUS_WINDOW_COMPACT',
  'TOOL_INVOCATION_COMPRESS',
  'PREVIOUS_ROUND_CONVERSATION_SUMMARY',
  'CURRENT_ROUND_LARGE_MESSAGE_SUMMARY',
  'CURRENT_ROUND_MESSAGE_COMPRESS',
  'PREFIX_SUMMARY',
]);

test('offlineSummarize keeps the facts of a tagged transcript, deterministically, within the target', () => {
  const filler = Array.from({ length: 60 }, (_, i) => `the quick brown fox jumps over the lazy dog, line ${'x'.repeat(i % 5)}`).join('\n');
  const prompt = [
    '<conversation>',
    '<user>',
    'Please fix the failing build of ledgerline (ticket BILL-2291).',
    '</user>',
    '<tool_call id="c1" name="run">',
    '{"command":"pytest tests/billing -q"}',
    '</tool_call>',
    '<tool_result id="c1">',
    filler,
    'FAILED tests/billing/test_totals.py::test_discount - AssertionError: assert 4.84 == 4.85',
    filler,
    '</tool_result>',
    '</conversation>',
    '',
    'Summarize.',
  ].join('\n');
  const request = { kind: 'rollup', system: 'Summarize.', prompt, messages: [], signal: new AbortController().signal };
  const out = offlineSummarize(request);
  assert.equal(typeof out, 'string');
  assert.equal(offlineSummarize(request), out, 'deterministic');
  assert.ok(out.length < prompt.length / 4, `${out.length} of ${prompt.length}`);
  assert.match(out, /^User: Please fix the failing build of ledgerline \(ticket BILL-2291\)\.$/m);
  assert.match(out, /^- run\(command="pytest tests\/billing -q"\) → \d+ lines$/m);
  assert.match(out, /^ {2}FAILED tests\/billing\/test_totals\.py::test_discount - AssertionError: assert 4\.84 == 4\.85$/m);
  assert.doesNotMatch(out, /quick brown fox/);
  for (const target of [40, 120, 400]) {
    assert.ok(offlineSummarize({ ...request, targetChars: target }).length <= target, `targetChars ${target}`);
  }
  // A plain prompt works too; markers never come out.
  const plain = offlineSummarize({ prompt: `${filler}\nError: disk full on /var/lib/data\n<!-- CONTEXT_OFFLOAD: uuid=0b5e3a5c-1111-4222-8333-944455556666 -->` });
  assert.match(plain, /Error: disk full on \/var\/lib\/data/);
  assert.doesNotMatch(plain, /CONTEXT_OFFLOAD/);
});

test('offlineSummarize refuses what is not a request, with a typed error', () => {
  for (const bad of [null, 'text', {}, { prompt: 3 }, { prompt: 'p', targetChars: -1 }]) {
    assert.throws(
      () => offlineSummarize(bad),
      (e) => e.name === 'AutoContextError' && e.code === 'INVALID_ARGUMENT',
      JSON.stringify(bad),
    );
  }
});

test('summarize: offlineSummarize runs the summarizing steps, and every summary is accepted', async () => {
  const { messages } = JSON.parse(await readFile(EXAMPLE, 'utf8'));
  const memory = new AutoContextMemory({ maxToken: 32_000, summarize: offlineSummarize });
  for (const m of messages) {
    if (m.role === 'assistant') {
      const r = await memory.compressIfNeeded();
      assert.deepEqual(r.errors ?? [], []);
      assert.ok(memory.tokenCount() <= 32_000);
    }
    memory.add(m);
  }
  await memory.compressIfNeeded();
  const events = memory.events();
  assert.equal(events.filter((e) => e.type === 'SUMMARIZE_FAILED').length, 0);
  const summarized = events.filter((e) => LLM_EVENTS.has(e.type));
  assert.ok(summarized.length > 0, events.map((e) => e.type).join(', '));
  for (const e of summarized) assert.ok(e.tokensAfter < e.tokensBefore / 2, `${e.type}: ${e.tokensBefore} -> ${e.tokensAfter}`);
  assert.deepEqual(memory.validate(), []);
  // What a summary replaced comes back whole.
  const uuid = summarized[0].offloadUuid;
  const originals = await memory.reload(uuid);
  assert.equal(originals.length, summarized[0].messageCount);
});

test('summarize: a small tool round summarized offline keeps the call and its error', async () => {
  const memory = new AutoContextMemory({ maxToken: 2_000, tokenRatio: 0.5, summarize: offlineSummarize, minCompressionTokenThreshold: 10, largePayloadThreshold: 100_000, toolResultLimit: 1_000_000 });
  const noise = Array.from({ length: 80 }, (_, i) => `log line ${i} nothing happened here`).join('\n');
  memory.add([
    { role: 'user', content: 'Deploy the service.' },
    { role: 'assistant', content: null, tool_calls: [call('d1', 'deploy', { env: 'staging' })] },
    { role: 'tool', tool_call_id: 'd1', content: `${noise}\nERROR: health check failed for svc-api on port 8080\n${noise}` },
    { role: 'assistant', content: 'The deploy failed its health check on port 8080.' },
    { role: 'user', content: 'Try again with more memory.' },
    { role: 'assistant', content: 'Retrying.' },
  ]);
  const r = await memory.compressIfNeeded();
  assert.ok(r.compressed, JSON.stringify(r));
  const text = JSON.stringify(memory.messages());
  assert.match(text, /deploy\(env=\\"staging\\"\)/);
  assert.match(text, /ERROR: health check failed for svc-api on port 8080/);
});
