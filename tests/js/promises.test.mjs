// The package's promises on conversation shapes beyond a plain agent loop, in every format,
// through the installed package: a user message after tool results the model has not read,
// summarize requests whose messages a provider accepts, the latest answer and the round the
// user's question follows, pinned messages and pinned tools.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, isAutoContextError, validate } from 'autocontext';
import { FORMATS, call, holdsResult, round, text, thrown, toFormat } from './helpers.mjs';

// Under toolResultLimit (10,000 characters here; the default is 2,000): truncation, the one step
// allowed on unread work, has nothing to do.
const UNREAD = text(9_000, 9);
const LIMIT = 10_000;

/** Three rounds, then a call whose long result the model has not answered, then the user typing. */
const interjection = () => [
  { role: 'system', content: 'You are a coding agent.' },
  ...round(1),
  ...round(2),
  ...round(3),
  { role: 'user', content: 'now look at the parser' },
  { role: 'assistant', content: null, tool_calls: [call('cz', 'read_file', { path: 'src/parser.rs' })] },
  { role: 'tool', tool_call_id: 'cz', content: UNREAD },
  { role: 'user', content: 'also check the tests' },
];

function recorder() {
  const requests = [];
  const summarize = (req) => {
    requests.push(req);
    return `SUMMARY (${req.kind})`;
  };
  return { requests, summarize };
}

test('a tool result the model has not read stays whole when the user speaks after it', async () => {
  for (const format of FORMATS) {
    for (const strategies of [undefined, ['previous-round-summary'], ['current-round-large-message', 'current-round-compress']]) {
      const what = `${format} ${strategies ?? 'default'}`;
      const { requests, summarize } = recorder();
      const memory = new AutoContextMemory({ format, maxToken: 6_000, strategies, summarize, toolResultLimit: LIMIT });
      const messages = toFormat(format, interjection());
      memory.add(messages);
      assert.equal(memory.needsCompression(), true, what);
      await memory.compressIfNeeded();
      const before = messages.find((m) => holdsResult(m, 'cz'));
      const after = memory.messages().find((m) => holdsResult(m, 'cz'));
      assert.deepStrictEqual(after, before, `${what}: the unread result was rewritten`);
      for (const req of requests) {
        const shown = req.prompt + JSON.stringify(req.messages);
        assert.ok(!shown.includes(UNREAD.slice(0, 300)), `${what}: a ${req.kind} request shows the unread result`);
      }
      assert.deepStrictEqual(memory.validate(), [], what);
    }
  }
});

/** Earlier rounds of two parallel exchanges each; a current round with answered and unread work. */
const everyKind = () => {
  const out = [{ role: 'system', content: 'You are a coding agent.' }];
  for (let r = 0; r < 4; r++) {
    out.push({ role: 'user', content: `question h${r}` });
    for (let s = 0; s < 2; s++) {
      const ids = [0, 1, 2].map((k) => `h${r}s${s}c${k}`);
      out.push({ role: 'assistant', content: null, tool_calls: ids.map((id) => call(id)) });
      for (const [k, id] of ids.entries()) out.push({ role: 'tool', tool_call_id: id, content: text(2_500, r * 10 + s * 3 + k) });
    }
    out.push({ role: 'assistant', content: `answer to h${r}` });
  }
  out.push({ role: 'user', content: 'now the parser' });
  out.push({ role: 'assistant', content: null, tool_calls: [call('p1'), call('p2')] });
  out.push({ role: 'tool', tool_call_id: 'p1', content: text(8_000, 101) });
  out.push({ role: 'tool', tool_call_id: 'p2', content: text(8_000, 102) });
  out.push({ role: 'assistant', content: 'Reading more.', tool_calls: [call('p3')] });
  out.push({ role: 'tool', tool_call_id: 'p3', content: text(8_000, 103) });
  out.push({ role: 'assistant', content: null, tool_calls: [call('p4')] });
  out.push({ role: 'tool', tool_call_id: 'p4', content: text(1_000, 104) });
  return out;
};

test('validate({ request: true }) checks a complete request body', () => {
  const pending = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: [call('a')] },
  ];
  assert.deepStrictEqual(validate(pending, 'openai'), [], 'a working list may wait for results');
  assert.deepStrictEqual(
    validate(pending, 'openai', { request: true }).map((p) => [p.index, p.code]),
    [[1, 'MISSING_RESULT']],
  );
  const assistantFirst = [
    { role: 'assistant', content: 'hi' },
    { role: 'user', content: 'go' },
  ];
  assert.deepStrictEqual(validate(assistantFirst, 'anthropic'), []);
  assert.deepStrictEqual(validate(assistantFirst, 'anthropic', { request: true }).map((p) => p.code), ['FIRST_NOT_USER']);
});

test('every summarize request, with the host instruction appended, is a body the provider accepts', async () => {
  const cases = [
    ['large_message', { strategies: ['current-round-large-message'] }],
    ['current_round', { strategies: ['current-round-compress'] }],
    ['tool_calls', { strategies: ['tool-run-compress'], lastKeep: 2, protectLastRound: false, minCompressionTokenThreshold: 500, minConsecutiveToolMessages: 2 }],
    ['round', { strategies: ['previous-round-summary'], minCompressionTokenThreshold: 500 }],
    ['prefix', { preset: 'prefix-summary', protectLastRound: false, protectLatestAnswer: false }],
  ];
  for (const format of FORMATS) {
    for (const [kind, options] of cases) {
      const what = `${format} ${kind}`;
      const { requests, summarize } = recorder();
      const memory = new AutoContextMemory({ format, maxToken: 8_000, summarize, ...options });
      memory.add(toFormat(format, everyKind()));
      await memory.compressIfNeeded();
      assert.ok(requests.some((r) => r.kind === kind), `${what}: no ${kind} request in ${requests.map((r) => r.kind)}`);
      for (const req of requests) {
        const body = [...req.messages, { role: 'user', content: 'Summarize the conversation above.' }];
        assert.deepStrictEqual(validate(body, format, { request: true }), [], `${what}: ${JSON.stringify(body).slice(0, 600)}`);
      }
    }
  }
});

/** Rounds with long answers; the user asks about the last one. */
const longAnswers = () => {
  const out = [{ role: 'system', content: 'You are a research assistant.' }];
  for (let r = 0; r < 4; r++) {
    out.push(...round(r, { calls: 2, resultChars: 2_500 }));
    out.push({ role: 'user', content: `go on about ${r}` });
    out.push({ role: 'assistant', content: `ANSWER-${r}. Point one. Point two. ${text(7_000, 50 + r)}` });
  }
  out.push({ role: 'user', content: 'explain your second point' });
  return out;
};

test('the latest answer and the round the question follows stay verbatim, unless turned off', async () => {
  for (const format of FORMATS) {
    const messages = toFormat(format, longAnswers());
    const latest = messages.findLast((m) => JSON.stringify(m).includes('ANSWER-3'));
    const roundStart = messages.findLastIndex((m) => JSON.stringify(m).includes('go on about 3'));
    for (const protect of [true, false]) {
      const what = `${format} protect=${protect}`;
      const { requests, summarize } = recorder();
      // A one-message lastKeep tail: only the protections keep the answer from the offloads.
      const options = { format, maxToken: 10_000, lastKeep: 1, summarize, protectLatestAnswer: protect, protectLastRound: protect };
      const memory = new AutoContextMemory(options);
      memory.add(messages);
      const result = await memory.compressIfNeeded();
      assert.ok(result.compressed && result.underTarget, what);
      const working = memory.messages().map((m) => JSON.stringify(m));
      const kept = (m) => working.includes(JSON.stringify(m));
      if (protect) {
        assert.ok(kept(latest), `${what}: ${result.events.map((e) => e.type)}`);
        assert.ok(kept(messages[roundStart]), `${what}: the question of the last round`);
        assert.ok(requests.every((r) => !JSON.stringify(r).includes('ANSWER-3')), `${what}: a summary covered the latest answer`);
      } else {
        assert.ok(!kept(latest), `${what}: unprotected, the large answer goes like any other`);
      }
      assert.deepStrictEqual(memory.validate(), [], what);
    }
  }
});

test('pinned messages: add(m, { pinned: true }), pin, unpin, kept through every step and the state', async () => {
  for (const format of FORMATS) {
    const all = toFormat(format, [
      { role: 'user', content: 'start' },
      { role: 'assistant', content: 'understood' },
      ...round(1, { resultChars: 3_000 }),
      { role: 'user', content: 'write down the plan' },
      { role: 'assistant', content: `THE PLAN: ${text(9_000, 77)}` },
      ...[2, 3, 4, 5, 6, 7].flatMap((r) => round(r, { resultChars: 3_000 })),
      { role: 'user', content: 'keep going' },
    ]);
    const at = all.findIndex((m) => JSON.stringify(m).includes('THE PLAN'));
    for (const strategies of [undefined, ['emergency']]) {
      const what = `${format} ${strategies ?? 'default'}`;
      const memory = new AutoContextMemory({ format, maxToken: 10_000, strategies });
      memory.add(all.slice(0, at));
      memory.add(all[at], { pinned: true });
      memory.add(all.slice(at + 1));
      assert.deepStrictEqual(memory.pinned(), [at]);
      const result = await memory.compressIfNeeded();
      assert.ok(result.compressed && result.underTarget, `${what}: ${JSON.stringify(result.events.map((e) => e.type))}`);
      const where = memory.pinned();
      assert.equal(where.length, 1, what);
      assert.deepStrictEqual(memory.messages()[where[0]], all[at], `${what}: the pinned message changed`);
      // The pin is in the state beside the message, not in it.
      const state = memory.toJSON();
      assert.equal(state.working[where[0]].pinned, true);
      assert.deepStrictEqual(state.working[where[0]].message, all[at]);
      assert.deepStrictEqual(AutoContextMemory.fromJSON(state).pinned(), where);
      memory.unpin(where[0]);
      assert.deepStrictEqual(memory.pinned(), []);
      memory.pin(where[0]);
      assert.deepStrictEqual(memory.pinned(), where);
    }
    // Unpinned, the large plan goes like any other large message.
    const plain = new AutoContextMemory({ format, maxToken: 10_000 });
    plain.add(all);
    await plain.compressIfNeeded();
    assert.ok(!plain.messages().some((m) => JSON.stringify(m) === JSON.stringify(all[at])), format);
  }
});

test('pin and add options: bad arguments are typed errors, and a pass in progress refuses pins', async () => {
  let started;
  const summarizing = new Promise((r) => (started = r));
  const summarize = () => {
    started();
    return new Promise((r) => setTimeout(() => r('SUMMARY'), 30));
  };
  const memory = new AutoContextMemory({ maxToken: 2_000, minCompressionTokenThreshold: 200, summarize });
  memory.add(round(1));
  for (const bad of [-1, 1.5, '0', 99]) {
    const e = thrown(() => memory.pin(bad));
    assert.ok(isAutoContextError(e, 'INVALID_ARGUMENT'), `${bad}: ${e}`);
    assert.equal(e.field, 'index');
  }
  for (const bad of [null, 'pinned', { pinned: 'yes' }]) {
    const e = thrown(() => memory.add({ role: 'user', content: 'x' }, bad));
    assert.ok(isAutoContextError(e, 'INVALID_ARGUMENT'), `${JSON.stringify(bad)}: ${e}`);
  }
  assert.equal(memory.messages().length, 6, 'nothing was added');
  memory.add([...round(2), ...round(3), { role: 'user', content: 'and now?' }]);
  const pass = memory.compressIfNeeded();
  assert.equal(await Promise.race([summarizing.then(() => 'summarizing'), pass.then(() => 'done')]), 'summarizing');
  assert.ok(isAutoContextError(thrown(() => memory.pin(0)), 'LIMIT_EXCEEDED'));
  await pass;
  memory.pin(0);
  assert.deepStrictEqual(memory.pinned(), [0]);
});

test('pinnedTools: the exchange of a pinned tool stays, its result whole', async () => {
  for (const format of FORMATS) {
    const openai = [
      { role: 'system', content: 'agent' },
      { role: 'user', content: 'plan, then do it' },
      { role: 'assistant', content: null, tool_calls: [call('plan1', 'write_plan'), call('ls1', 'list_files')] },
      { role: 'tool', tool_call_id: 'plan1', content: text(30_000, 61) },
      { role: 'tool', tool_call_id: 'ls1', content: text(30_000, 62) },
      { role: 'assistant', content: 'planned' },
      ...[1, 2, 3, 4, 5, 6].flatMap((r) => round(r, { resultChars: 4_000 })),
      { role: 'user', content: 'status?' },
    ];
    const messages = toFormat(format, openai);
    const memory = new AutoContextMemory({ format, maxToken: 24_000, pinnedTools: ['write_plan'], summarize: () => 'SUMMARY' });
    memory.add(messages);
    const result = await memory.compressIfNeeded();
    assert.ok(result.compressed && result.underTarget, format);
    const block = (m) => (Array.isArray(m.content) ? m.content.find((p) => p.tool_use_id === 'plan1' || p.toolCallId === 'plan1') : m);
    const before = block(messages.find((m) => holdsResult(m, 'plan1')));
    const after = block(memory.messages().find((m) => holdsResult(m, 'plan1')));
    assert.deepStrictEqual(after, before, `${format}: ${result.events.map((e) => e.type)}`);
    assert.deepStrictEqual(memory.validate(), [], format);
  }
  const e = thrown(() => new AutoContextMemory({ pinnedTools: 'write_plan' }));
  assert.ok(isAutoContextError(e, 'INVALID_CONFIG') && e.field === 'pinnedTools', String(e));
});

test('count pressure: a pass ends below msgThreshold, or says why it cannot', async () => {
  const chat = [{ role: 'system', content: 'You are a helpful assistant.' }];
  for (let r = 0; r < 60; r++) chat.push(...round(r, { calls: 1, resultChars: 60 }));
  for (const format of FORMATS) {
    const messages = toFormat(format, chat);
    for (const withModel of [true, false]) {
      const what = `${format} summarize=${withModel}`;
      const options = { format, msgThreshold: 40, summarize: withModel ? () => 'SUMMARY of the earlier rounds' : undefined };
      const memory = new AutoContextMemory(options);
      memory.add(messages);
      assert.ok(memory.tokenCount() < 20_000 && memory.needsCompression(), what);
      const result = await memory.compressIfNeeded();
      if (withModel) {
        assert.ok(result.compressed && result.underTarget && result.reason === undefined, `${what}: ${JSON.stringify(result)}`);
        assert.ok(memory.messages().length < 40, `${what}: ${memory.messages().length}`);
        assert.ok(result.events.every((e) => e.type === 'RECENT_FOCUS_WINDOW_COMPACT'), what);
      } else {
        assert.ok(!result.underTarget && result.exhausted, what);
        assert.match(result.reason, /msgThreshold \(40\).*summarize function/, what);
      }
      assert.deepStrictEqual(memory.validate(), [], what);
    }
  }
});

test('one reload gives the original, also of a result truncated and then offloaded in the same pass', async () => {
  const DUMP = text(40_000, 88);
  for (const format of FORMATS) {
    const openai = [
      { role: 'system', content: 'agent' },
      { role: 'user', content: 'read the dump' },
      { role: 'assistant', content: null, tool_calls: [call('dump', 'read_file')] },
      { role: 'tool', tool_call_id: 'dump', content: DUMP },
      { role: 'assistant', content: 'read it' },
      ...round(1, { calls: 2, resultChars: 3_000 }),
      ...round(2, { calls: 2, resultChars: 3_000 }),
      ...round(3, { calls: 2, resultChars: 3_000 }),
      { role: 'user', content: 'next?' },
    ];
    const messages = toFormat(format, openai);
    // The reference's geometry: a pass that stops at the trigger, results cut above 20,000
    // characters, so the offload step, not a deeper one, takes the truncated copy; with the
    // default ladder, the stale-result stub takes it first.
    for (const [strategies, step] of [
      [['tool-result-truncate', 'large-message-offload-protected', 'large-message-offload', 'emergency'], /^LARGE_MESSAGE_OFFLOAD/],
      [undefined, /^TOOL_RESULT_STUB$/],
    ]) {
      const what = `${format} ${strategies ? 'reference' : 'default'}`;
      const memory = new AutoContextMemory({ format, maxToken: 9_000, targetRatio: 0.75, toolResultLimit: 20_000, strategies });
      memory.add(messages);
      const result = await memory.compressIfNeeded();
      assert.ok(result.underTarget, what);
      const at = memory.messages().findIndex((m) => holdsResult(m, 'dump'));
      const events = result.events.filter((e) => e.index <= at && at < e.index + e.replacementCount);
      assert.equal(events.length, 1, `${what}: one event for the message replaced twice: ${JSON.stringify(result.events)}`);
      assert.match(events[0].type, step, what);
      const back = await memory.reload(events[0].offloadUuid);
      assert.deepStrictEqual(back, [messages.find((m) => holdsResult(m, 'dump'))], `${what}: the original, not the truncated copy`);
      const answer = await memory.handleReloadCall({ working_context_offload_uuid: events[0].offloadUuid });
      assert.ok(!answer.includes('characters omitted'), what);
      assert.equal(memory.offloads().length, result.events.filter((e) => e.offloadUuid).length, `${what}: no offload of an intermediate`);
    }
  }
});

test('the context_reload tool tells the model to keep uuids and markers to itself', () => {
  for (const format of FORMATS) {
    const tool = JSON.stringify(new AutoContextMemory({ format }).reloadTool());
    assert.match(tool, /never mention or quote them to the user/, format);
  }
});
