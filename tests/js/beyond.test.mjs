// Beyond the reference, through the installed package: presets and custom ladders (and their
// INVALID_CONFIG errors), the structured prefix summary, fact retrieval, turn trimming,
// background preparation with a slow summarize function, overflow handling of real provider
// errors, and usage calibration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, isAutoContextError, offlineSummarize, validate } from 'autocontext';
import { markers, round, thrown } from './helpers.mjs';

const FIELDS = ['task_overview', 'current_state', 'important_discoveries', 'next_steps', 'context_to_preserve'];

/** Rounds until the request reaches `tokens`. */
function grow(memory, from, tokens, resultChars = 1600) {
  let n = from;
  while (memory.tokenCount() < tokens) memory.add(round(n++, { calls: 1, resultChars }));
  return n;
}

function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

const tick = () => new Promise((r) => setImmediate(r));

test('bad ladder options are INVALID_CONFIG naming the option', () => {
  for (const [options, field] of [
    [{ preset: 'koog' }, 'preset'],
    [{ strategies: ['truncate'] }, 'strategies[0]'],
    [{ strategies: ['emergency', 'EMERGENCY_OFFLOAD'] }, 'strategies[1]'],
    [{ strategies: [] }, 'strategies'],
    [{ preset: 'turns', strategies: ['emergency'] }, 'strategies'],
    [{ preset: 'facts' }, 'concepts'],
    [{ preset: 'facts', concepts: [{ keyword: 'db', factType: 'one' }] }, 'concepts[0].factType'],
    [{ concepts: [{ keyword: 'db' }] }, 'concepts'],
    [{ maxContextTurns: 4 }, 'maxContextTurns'],
    [{ preset: 'prefix-summary', summaryTemplate: '{goal}' }, 'summaryTemplate'],
    [{ prepareRatio: 0.95 }, 'prepareRatio'],
  ]) {
    const e = thrown(() => new AutoContextMemory(options));
    assert.ok(isAutoContextError(e, 'INVALID_CONFIG'), `${JSON.stringify(options)}: ${e}`);
    assert.equal(e.field, field, `${JSON.stringify(options)}: ${e.message}`);
  }
  // A custom order by names and event types is accepted and survives toJSON/fromJSON.
  const memory = new AutoContextMemory({ strategies: ['tool-result-truncate', 'PREFIX_SUMMARY', 'emergency'], reserveRatio: 0.2 });
  const state = memory.toJSON();
  assert.deepEqual(state.config.strategies, ['tool-result-truncate', 'prefix-summary', 'emergency']);
  assert.equal(AutoContextMemory.fromJSON(state).toJSON().config.reserveRatio, 0.2);
});

test('the prefix summary asks for five fields with a schema and takes the structured object itself', async () => {
  const calls = [];
  const summarize = async (req) => {
    calls.push(req);
    // What a structured-output call returns: the object, not text.
    return { task_overview: 'explain the modules', current_state: 'modules 1-12 read', important_discoveries: ['module 3 parses input'], next_steps: 'compare them', context_to_preserve: 'src/m3.rs' };
  };
  const memory = new AutoContextMemory({ preset: 'prefix-summary', maxToken: 8000, summarize, sessionId: 'prefix-js' });
  grow(memory, 1, 7000);
  memory.add({ role: 'user', content: 'Now compare them.' });
  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true);
  assert.equal(result.summarizeCalls, 1);
  assert.deepEqual(result.events.map((e) => e.type), ['PREFIX_SUMMARY']);
  assert.equal(calls[0].kind, 'prefix');
  assert.deepEqual(calls[0].schema.required, FIELDS);
  const originals = await memory.originalMessages();
  assert.deepEqual(memory.messages()[0], originals[0], 'the task stays verbatim');
  const summary = memory.messages()[1].content;
  assert.match(summary, /## Task overview\nexplain the modules/);
  assert.match(summary, /- module 3 parses input/);
  assert.equal(markers(summary).length, 1);
  const back = await memory.reload(markers(summary)[0]);
  assert.deepEqual(back, originals.slice(1, 1 + back.length), 'the summarized prefix reloads byte-exact');
  assert.deepEqual(memory.validate(), []);
});

test('fact retrieval asks once per concept and keeps a restoration block of facts', async () => {
  const kinds = [];
  const summarize = async (req) => {
    kinds.push(req.kind);
    return offlineSummarize(req);
  };
  const memory = new AutoContextMemory({
    preset: 'facts',
    maxToken: 8000,
    summarize,
    concepts: [
      { keyword: 'module', description: 'what each module does', factType: 'multiple' },
      { keyword: 'kernel', description: 'kernel facts', factType: 'single' },
    ],
  });
  grow(memory, 1, 7000);
  memory.add({ role: 'user', content: 'Which <module> parses input?' });
  const result = await memory.compressIfNeeded();
  assert.deepEqual(result.events.map((e) => e.type), ['FACT_RETRIEVAL']);
  // One request per concept each time the step runs (in a window this small the identifier
  // index can take the first block just over the low-water mark, and a second round folds it).
  assert.ok(kinds.length >= 2 && kinds.length % 2 === 0 && kinds.every((k) => k === 'facts'), kinds.join());
  const block = memory.messages().map((m) => m.content).find((c) => typeof c === 'string' && c.startsWith('[CONTEXT RESTORATION]'));
  assert.ok(block, 'a restoration block');
  assert.match(block, /<concept>\n<keyword>module<\/keyword>\n<fact>/);
  assert.deepEqual(memory.validate(), []);
});

test('more turns than maxContextTurns become a summary at the start of the kept context', async () => {
  const calls = [];
  const memory = new AutoContextMemory({ preset: 'turns', maxContextTurns: 4, summarize: (req) => (calls.push(req), 'the user asked about modules 1-3') });
  for (let n = 1; n <= 6; n++) memory.add(round(n, { calls: 1, resultChars: 200 }));
  assert.equal(memory.needsCompression(), true);
  const result = await memory.compressIfNeeded();
  assert.deepEqual(result.events.map((e) => e.type), ['TURN_TRIM']);
  assert.equal(calls[0].kind, 'turns');
  const out = memory.messages();
  // Six turns, four allowed besides the task, which stays (its tool work goes): half of the four
  // other complete turns, the two oldest, go.
  assert.equal(out[0].content, 'Question 1: what does module 1 do?');
  assert.match(out[1].content, /^\[Summary of 2 earlier turns/);
  assert.equal(out[2].content, 'Question 4: what does module 4 do?');
  assert.equal(memory.needsCompression(), false);
});

test('prepareOnAdd prepares in the background while summarize is slow, and the pass then needs no call', async () => {
  let slow = null;
  let forbidden = false;
  const calls = [];
  const summarize = async (req) => {
    calls.push(req.kind);
    if (forbidden) throw new Error('summarize was called on the request path');
    await slow.promise;
    return JSON.stringify({ task_overview: 'modules', current_state: 'prepared in the background', important_discoveries: '', next_steps: 'compare', context_to_preserve: '' });
  };
  slow = deferred();
  // A pass that stops at the trigger, and a reserve of a tenth of the window: one prefix summary
  // gets there, so the preparation makes exactly one call.
  const memory = new AutoContextMemory({ preset: 'prefix-summary', maxToken: 10000, targetRatio: 0.75, reserveRatio: 0.1, prepareOnAdd: true, summarize, sessionId: 'bg-js' });
  let n = grow(memory, 1, 6100);
  const preparing = memory.prepare(); // the preparation `add` started (a call while one runs returns it)
  await tick();
  assert.deepEqual(calls, ['prefix'], 'the preparation asked the host');
  // While the host is slow the agent goes on: it adds messages, and its pass is not held.
  memory.add(round(n++, { calls: 1, resultChars: 200 }));
  const early = await memory.compressIfNeeded();
  assert.equal(early.compressed, false);
  slow.resolve();
  const done = await preparing;
  assert.equal(done.prepared, true);
  assert.equal(done.summarizeCalls, 1);
  assert.equal(done.ready, 1);

  forbidden = true;
  n = grow(memory, n, 7600);
  assert.equal(memory.needsCompression(), true);
  const result = await memory.compressIfNeeded();
  assert.equal(result.compressed, true);
  assert.equal(result.summarizeCalls, 0);
  assert.equal(result.preparedUsed, 1);
  assert.deepEqual(result.errors, []);
  assert.deepEqual(calls, ['prefix'], 'no summarize call after the preparation');
  assert.match(memory.messages()[1].content, /prepared in the background/);
});

test('handleOverflow recognizes provider errors as SDKs throw them and compacts hard', async () => {
  const openai = Object.assign(new Error("400 This model's maximum context length is 8000 tokens. However, your messages resulted in 9100 tokens. Please reduce the length of the messages."), {
    status: 400,
    code: 'context_length_exceeded',
    type: 'invalid_request_error',
    error: { message: "This model's maximum context length is 8000 tokens. However, your messages resulted in 9100 tokens. Please reduce the length of the messages.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' },
  });
  const anthropic = Object.assign(new Error('400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9100 tokens > 8000 maximum"}}'), {
    status: 400,
    error: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 9100 tokens > 8000 maximum' } },
  });
  const gemini = new Error('{"error":{"code":400,"message":"The input token count (9100) exceeds the maximum number of tokens allowed (8000).","status":"INVALID_ARGUMENT"}}');
  const llamacpp = { error: { code: 400, message: 'the request exceeds the available context size. try increasing the context size or enable context shift', type: 'exceed_context_size_error', n_prompt_tokens: 9100, n_ctx: 8000 } };
  for (const [error, provider] of [[openai, 'openai'], [anthropic, 'anthropic'], [gemini, 'gemini'], [llamacpp, 'openai-compatible']]) {
    const memory = new AutoContextMemory({ maxToken: 16000, summarize: offlineSummarize });
    for (let k = 1; k <= 4; k++) memory.add(round(k, { calls: 2, resultChars: 2000 }));
    const before = memory.tokenCount();
    const r = await memory.handleOverflow(error);
    assert.equal(r.overflow, true, provider);
    assert.equal(r.provider, provider);
    assert.equal(r.limit, 8000);
    assert.equal(r.requested, 9100);
    assert.equal(r.retry, true, provider);
    assert.ok(r.tokensAfter < before && r.tokensAfter <= r.targetTokens, `${provider}: ${JSON.stringify(r)}`);
    assert.deepEqual(memory.validate(), []);
  }
  const memory = new AutoContextMemory({});
  memory.add(round(1));
  const other = await memory.handleOverflow(Object.assign(new Error('429 Rate limit reached'), { status: 429, code: 'rate_limit_exceeded' }));
  assert.equal(other.overflow, false);
  assert.equal(other.retry, false);
  assert.equal((await memory.handleOverflow(undefined)).overflow, false);
});

test('observeUsage calibrates the trigger from the provider usage object and reports the drift', () => {
  const memory = new AutoContextMemory({ maxToken: 10000 });
  for (let k = 1; k <= 3; k++) memory.add(round(k));
  const est = memory.tokenCount();
  assert.equal(memory.needsCompression(), false);
  const report = memory.observeUsage({ prompt_tokens: 7600, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 3800 } });
  assert.equal(report.estimatedTokens, est);
  assert.equal(report.promptTokens, 7600);
  assert.equal(report.cacheHitRatio, 0.5);
  assert.equal(report.drift, 7600 - est);
  assert.equal(memory.needsCompression(), true, 'the provider counts more: passes start earlier');
  const e = thrown(() => memory.observeUsage({ promptTokens: -3 }));
  assert.ok(isAutoContextError(e, 'INVALID_ARGUMENT'));
  assert.equal(e.field, 'promptTokens');
  assert.equal(report.status, 'accepted');
  // A count that no tokenizer explains (here a twentieth of the estimate) is refused: the
  // trigger stays where it was instead of moving past the window.
  const refused = memory.observeUsage({ promptTokens: Math.round(est / 20) });
  assert.equal(refused.status, 'refused');
  assert.equal(refused.correction, report.correction);
  assert.equal(refused.triggerTokens, report.triggerTokens);
  assert.match(refused.warning, /less than half/);
});

test('observeUsage of a response without usage observes nothing', () => {
  const memory = new AutoContextMemory({ maxToken: 10000 });
  for (let k = 1; k <= 3; k++) memory.add(round(k));
  // The OpenAI SDK types completion.usage as optional (a stream without include_usage has none).
  assert.equal(memory.observeUsage(undefined), undefined);
  assert.equal(memory.observeUsage(null), undefined);
  assert.equal(memory.needsCompression(), false);
  const report = memory.observeUsage({ promptTokens: memory.tokenCount() });
  assert.equal(report.samples, 1, 'the empty reports were not counted');
  assert.ok(isAutoContextError(thrown(() => memory.observeUsage(42)), 'INVALID_ARGUMENT'));
});

test('every preset keeps Anthropic turns valid', async () => {
  for (const preset of ['prefix-summary', 'facts', 'turns']) {
    const options = { preset, format: 'anthropic', maxToken: 3000, summarize: offlineSummarize, ...(preset === 'facts' ? { concepts: [{ keyword: 'module' }] } : {}) };
    const memory = new AutoContextMemory(options);
    for (let n = 1; n <= 8; n++) {
      memory.add([
        { role: 'user', content: `Question ${n}: what does module ${n} do?` },
        { role: 'assistant', content: [{ type: 'tool_use', id: `t${n}`, name: 'read_file', input: { path: `src/m${n}.rs` } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${n}`, content: 'module text '.repeat(150) }] },
        { role: 'assistant', content: `Module ${n} parses the input.` },
      ]);
      await memory.compressIfNeeded();
      assert.deepEqual(validate(memory.messages(), 'anthropic'), [], `${preset} after round ${n}`);
    }
    assert.ok(memory.events().length > 0, preset);
  }
});
