// The host's summarize function, wired through the WebAssembly binding: what it receives, how
// its answer lands in the working list, what happens when it fails (and how what it threw comes
// back in result.errors), the plan hint, the concurrency bound, and single flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextError, AutoContextMemory, compress, isAutoContextError } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { LADDER_WITHOUT_STUBS, markers, round } from './helpers.mjs';

// Two earlier rounds of small tool results (nothing large enough to offload alone), each well
// over minCompressionTokenThreshold, and a short current round: only summaries can help. The
// most recent round and the latest answer are protected by default (promises.test.mjs tests
// that); here every earlier round is summarized. The default ladder without the stale-result
// stubs, which would shrink the results before the summaries read them (tests/rent.rs tests
// those).
const OPTIONS = {
  maxToken: 2000,
  strategies: LADDER_WITHOUT_STUBS,
  minCompressionTokenThreshold: 200,
  minConsecutiveToolMessages: 1000,
  protectLastRound: false,
  protectLatestAnswer: false,
  sessionId: 'sum-1',
};
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
  assert.deepStrictEqual((await memory.originalMessages()), conversation);
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

test('result.errors hands back what each failed summarize call threw, as the cause of a SUMMARIZE_FAILED error', async () => {
  const thrown = [];
  const memory = new AutoContextMemory({
    ...OPTIONS,
    summarize: async (req) => {
      const e = Object.assign(new Error(`upstream 503 for ${req.kind}`), { status: 503, attempt: thrown.length });
      thrown.push(e);
      throw e;
    },
  });
  memory.add(CONVERSATION());
  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true, 'the pass went on without the summaries');
  assert.ok(thrown.length >= 2, `calls: ${thrown.length}`);
  const failedEvents = result.events.filter((e) => e.type === 'SUMMARIZE_FAILED');
  assert.equal(result.errors.length, thrown.length, 'one error per failed call');
  assert.equal(result.errors.length, failedEvents.length, 'one error per SUMMARIZE_FAILED event');
  for (const [k, error] of result.errors.entries()) {
    assert.ok(error instanceof AutoContextError);
    assert.ok(isAutoContextError(error, 'SUMMARIZE_FAILED'));
    assert.ok(thrown.includes(error.cause), `error ${k}'s cause is one of the thrown objects, not a copy`);
    assert.match(error.message, /PREVIOUS_ROUND_CONVERSATION_SUMMARY/);
    assert.match(error.message, new RegExp(`event ${k} of this pass`));
    assert.match(error.message, /upstream 503 for round/);
  }
  assert.equal(result.errors[0].cause, thrown[0]);
  assert.equal(new Set(result.errors.map((e) => e.cause)).size, thrown.length, 'each thrown object exactly once');
  // The same errors survive the stateless helper.
  const out = await compress(CONVERSATION(), { ...OPTIONS, summarize: () => Promise.reject(thrown[0]) });
  assert.ok(out.errors.length >= 1);
  assert.ok(out.errors.every((e) => e.cause === thrown[0]));
});

test('result.errors is empty when every summary worked, and a timed-out call has the timeout error as cause', async () => {
  const { summarize } = recorder();
  const ok = new AutoContextMemory({ ...OPTIONS, summarize });
  ok.add(CONVERSATION());
  assert.deepStrictEqual((await ok.compressIfNeeded()).errors, []);

  const signals = [];
  const slow = new AutoContextMemory({
    ...OPTIONS,
    summarizeTimeoutMs: 20,
    summarize: ({ signal }) => {
      signals.push(signal);
      return new Promise(() => {});
    },
  });
  slow.add(CONVERSATION());
  const result = await slow.compressIfNeeded();
  assert.equal(result.errors.length, signals.length);
  assert.ok(result.errors.length >= 1);
  for (const error of result.errors) {
    assert.equal(error.code, 'SUMMARIZE_FAILED');
    assert.ok(signals.some((s) => s.reason === error.cause), 'the cause is the very error the signal was aborted with');
    assert.match(error.cause.message, /20 ms/);
  }
});

test('while a plan is set, every summarize request ends with the plan hint; after setPlan(null), none does', async () => {
  const plan = {
    goal: 'Ship the parser fix',
    subtasks: [
      { name: 'reproduce the crash', state: 'done' },
      { name: 'patch the tokenizer', state: 'in_progress' },
    ],
    expectedOutcome: 'the test suite passes',
  };
  const { calls, summarize } = recorder();
  const memory = new AutoContextMemory({ ...OPTIONS, summarize });
  memory.add(CONVERSATION());
  memory.setPlan(plan);
  assert.deepStrictEqual(memory.plan(), plan);
  await memory.compressIfNeeded();
  assert.ok(calls.length >= 2);
  for (const req of calls) {
    assert.ok(req.prompt.endsWith('</plan_aware_hint>'), `the hint is last: ...${req.prompt.slice(-120)}`);
    const hint = req.prompt.slice(req.prompt.lastIndexOf('<plan_aware_hint>'));
    assert.ok(req.prompt.lastIndexOf('</conversation>') < req.prompt.lastIndexOf('<plan_aware_hint>'), 'after the span');
    assert.match(hint, /Goal: Ship the parser fix/);
    assert.match(hint, /In progress: patch the tokenizer/);
    assert.match(hint, /1\/2/);
    assert.match(hint, /Expected outcome: the test suite passes/);
  }

  const cleared = recorder();
  const other = new AutoContextMemory({ ...OPTIONS, summarize: cleared.summarize });
  other.add(CONVERSATION());
  other.setPlan(plan);
  other.setPlan(null);
  assert.equal(other.plan(), null);
  await other.compressIfNeeded();
  assert.ok(cleared.calls.length >= 2);
  assert.ok(cleared.calls.every((req) => !req.prompt.includes('plan_aware_hint')));
});

test('maxConcurrentSummaries bounds how many summarize calls run at once', async () => {
  // Six earlier rounds, each worth its own summary: one step with six independent calls.
  const conversation = [1, 2, 3, 4, 5, 6].flatMap((n) => round(n)).concat({ role: 'user', content: 'And now?' });
  for (const [limit, want] of [[2, 2], [undefined, 4]]) {
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    const summarize = async () => {
      calls += 1;
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 15));
      inFlight -= 1;
      return 'SUMMARY short';
    };
    const options = { ...OPTIONS, summarize };
    if (limit !== undefined) options.maxConcurrentSummaries = limit;
    const memory = new AutoContextMemory(options);
    memory.add(conversation);
    const result = await memory.compressIfNeeded();
    assert.equal(result.underTarget, true);
    assert.equal(calls, 6);
    assert.equal(most, want, `maxConcurrentSummaries ${limit ?? 'default'}`);
  }
});
