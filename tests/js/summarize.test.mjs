// The host's summarize function, wired through the WebAssembly binding: what it receives, how
// its answer lands in the working list, what happens when it fails, and single flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { markers, round } from './helpers.mjs';

// Two earlier rounds of small tool results (nothing large enough to offload alone), each well
// over minCompressionTokenThreshold, and a short current round: only summaries can help.
const OPTIONS = { maxToken: 2000, minCompressionTokenThreshold: 200, minConsecutiveToolMessages: 1000, sessionId: 'sum-1' };
const CONVERSATION = () => [...round(1), ...round(2), { role: 'user', content: 'Now compare them.' }];

function recorder(answer = (req) => `SUMMARY of ${req.messages[0].content.slice(0, 11)}`) {
  const calls = [];
  const summarize = async (req) => {
    calls.push(req);
    await new Promise((r) => setTimeout(r, 5));
    return answer(req);
  };
  return { calls, summarize };
}

test('earlier rounds are summarized through the host function, with wire messages and a signal', async () => {
  const { calls, summarize } = recorder((req) => ({ text: `SUMMARY of ${req.messages[0].content.slice(0, 11)}`, usage: { inputTokens: 900, outputTokens: 12 } }));
  const memory = new AutoContextMemory({ ...OPTIONS, summarize });
  const conversation = CONVERSATION();
  memory.add(conversation);
  assert.equal(memory.needsCompression(), true);

  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true);
  assert.equal(result.underTarget, true);

  const rounds = calls.filter((c) => c.kind === 'round');
  assert.equal(rounds.length, 2, `calls: ${calls.map((c) => c.kind)}`);
  for (const req of rounds) {
    const k = Number(req.messages[0].content.match(/^Question (\d)/)[1]) - 1;
    assert.ok(req.signal instanceof AbortSignal);
    assert.equal(req.signal.aborted, false);
    assert.equal(typeof req.system, 'string');
    assert.ok(req.system.length > 20);
    assert.match(req.prompt, /Module \d parses the input/);
    // The round in wire format, exactly as added: user question through final answer.
    const span = conversation.slice(k * 6, k * 6 + 6);
    assert.deepStrictEqual(req.messages, span);
  }

  const now = memory.messages();
  const summaries = now.filter((m) => typeof m.content === 'string' && m.content.startsWith('SUMMARY of Question'));
  assert.equal(summaries.length, 2);
  assert.equal(now[0].content, conversation[0].content, "the round's user message stays");
  const events = result.events.filter((e) => e.type === 'PREVIOUS_ROUND_CONVERSATION_SUMMARY');
  assert.equal(events.length, 2);
  assert.equal(events[0].summarizeInputTokens, 900);
  assert.equal(events[0].summarizeOutputTokens, 12);
  assert.equal(typeof events[0].durationMs, 'number');
  // The summarized work reloads byte-exact.
  const [uuid] = markers(summaries[0].content);
  assert.deepStrictEqual(await memory.reload(uuid), conversation.slice(1, 6));
  assert.deepStrictEqual(memory.validate(), []);
});

test('a summarize function that throws is recorded, and the span falls back to a plain offload', async () => {
  const failure = { reason: 'rate limited', status: 429 };
  let calls = 0;
  const memory = new AutoContextMemory({
    ...OPTIONS,
    summarize: () => {
      calls += 1;
      throw Object.assign(new Error('upstream 429'), failure);
    },
  });
  const conversation = CONVERSATION();
  memory.add(conversation);
  const result = await memory.compressIfNeeded();
  assert.ok(calls >= 2);
  const failed = result.events.filter((e) => e.type === 'SUMMARIZE_FAILED');
  assert.ok(failed.length >= 2, JSON.stringify(result.events));
  assert.match(failed[0].error, /upstream 429/);
  assert.ok(!memory.messages().some((m) => String(m.content).startsWith('SUMMARY')));
  // Whatever replaced the rounds is recoverable.
  for (const e of result.events.filter((e) => e.offloadUuid)) {
    assert.ok((await memory.reload(e.offloadUuid)).length >= 1);
  }
  assert.deepStrictEqual(memory.validate(), []);
  assert.deepStrictEqual(memory.originalMessages(), conversation);
});

test('a summarize answer that is neither a string nor { text } counts as a failure with a clear error', async () => {
  const memory = new AutoContextMemory({ ...OPTIONS, summarize: async () => ({ summary: 'wrong key' }) });
  memory.add(CONVERSATION());
  const result = await memory.compressIfNeeded();
  const failed = result.events.filter((e) => e.type === 'SUMMARIZE_FAILED');
  assert.ok(failed.length >= 1);
  assert.match(failed[0].error, /must return a string or \{ text/);
});

test('a summarize call over summarizeTimeoutMs is aborted through its signal', async () => {
  const signals = [];
  const memory = new AutoContextMemory({
    ...OPTIONS,
    summarizeTimeoutMs: 30,
    summarize: ({ signal }) => {
      signals.push(signal);
      return new Promise(() => {}); // never answers
    },
  });
  memory.add(CONVERSATION());
  const result = await memory.compressIfNeeded();
  assert.ok(signals.length >= 1);
  assert.ok(signals.every((s) => s.aborted));
  assert.equal(signals[0].reason.code, 'SUMMARIZE_FAILED');
  const failed = result.events.filter((e) => e.type === 'SUMMARIZE_FAILED');
  assert.ok(failed.length >= 1);
  assert.match(failed[0].error, /30 ms/);
});

test('single flight: concurrent compressIfNeeded calls share one pass and one summary per round', async () => {
  const { calls, summarize } = recorder();
  const memory = new AutoContextMemory({ ...OPTIONS, summarize });
  memory.add(CONVERSATION());
  const first = memory.compressIfNeeded();
  const second = memory.compressIfNeeded();
  assert.equal(second, first, 'the same promise');
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a, b);
  assert.equal(calls.filter((c) => c.kind === 'round').length, 2);
  assert.equal(calls.length, 2);
  // After it settles, a new call runs a new (here: empty) pass.
  const third = memory.compressIfNeeded();
  assert.notEqual(third, first);
  assert.equal((await third).compressed, false);
  assert.equal(calls.length, 2);
});

test('messages added while a pass awaits the summarizer are kept', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const memory = new AutoContextMemory({ ...OPTIONS, store: new MemoryStore(), summarize: async () => (await gate, 'SUMMARY short') });
  memory.add(CONVERSATION());
  const pass = memory.compressIfNeeded();
  await new Promise((r) => setTimeout(r, 10));
  memory.add({ role: 'assistant', content: 'Comparing now.' });
  release();
  await pass;
  const now = memory.messages();
  assert.equal(now.at(-1).content, 'Comparing now.');
  assert.equal(now.at(-2).content, 'Now compare them.');
});
