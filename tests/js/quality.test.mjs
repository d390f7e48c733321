// What the agent still knows, through the installed package: the identifier index every
// replacement carries, one reload of any marker reaching originals, the task kept verbatim, a
// user message over the window cut the same way in every format, and summarize requests shared
// with the agent's prompt cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, countTokens, validate } from 'autocontext';
import { LADDER_WITHOUT_STUBS, call, markers, round, text } from './helpers.mjs';

const OPENING = '[Identifiers in what was offloaded: ';

/** The identifiers of every index line in the texts of `messages`. */
function indexed(messages) {
  return messages
    .flatMap((m) => (typeof m.content === 'string' ? [m.content] : []))
    .flatMap((t) => t.split('\n'))
    .filter((l) => l.startsWith(OPENING) && l.endsWith(']'))
    .flatMap((l) => l.slice(OPENING.length, -1).split(', '));
}

/** A round whose tool result names a file, a function and an error code of its own. */
function investigate(n) {
  return [
    { role: 'user', content: `Step ${n}: look at the next part.` },
    { role: 'assistant', content: null, tool_calls: [call(`c${n}`, 'read_file', { path: `src/part_${n}/handler_${n}.py` })] },
    { role: 'tool', tool_call_id: `c${n}`, content: `def handle_request_${n}(event):\n${text(3000, n)}\nraise ValueError("E${4000 + n}: bad event")\n` },
    { role: 'assistant', content: `Part ${n} raises E${4000 + n}.` },
  ];
}

test('a summary names the exact identifiers it took out of view, bounded and without uuids', async () => {
  const summarize = (req) => `The agent read ${req.kind === 'prefix' ? 'the earlier parts' : 'some files'}.`;
  const run = async (options) => {
    const memory = new AutoContextMemory({ maxToken: 6_000, summarize, sessionId: 'index-js', ...options });
    memory.add({ role: 'user', content: 'Find why the events fail.' });
    for (let n = 1; n <= 10; n++) {
      memory.add(investigate(n));
      await memory.compressIfNeeded();
    }
    return memory;
  };
  const memory = await run({});
  const ids = indexed(memory.messages());
  const visible = JSON.stringify(memory.messages().filter((m) => markers(JSON.stringify(m)).length === 0));
  // In a window this small the index has little room: the paths the tool calls named come first.
  assert.ok(ids.includes('src/part_1/handler_1.py') && ids.some((id) => /^E40\d\d$/.test(id)), ids.join(', '));
  for (const id of ids) {
    assert.doesNotMatch(id, /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/, 'never a uuid');
    assert.ok(!visible.includes(id) || id.length < 8, `${id} is in view already`);
  }
  const lines = memory.messages().flatMap((m) => (typeof m.content === 'string' ? m.content.split('\n') : [])).filter((l) => l.startsWith(OPENING));
  assert.ok(lines.length > 0 && lines.every((l) => l.length <= 1200), lines.map((l) => l.length).join());
  // The same conversation gives the same index; 0 turns it off.
  assert.deepEqual(indexed((await run({})).messages()), ids);
  assert.deepEqual(indexed((await run({ identifierIndexChars: 0 })).messages()), []);
});

test('one reload of any marker gives originals, even after summaries of summaries', async () => {
  const memory = new AutoContextMemory({ maxToken: 4_000, preset: 'prefix-summary', summarize: () => 'the work so far', sessionId: 'hop-js' });
  memory.add({ role: 'system', content: 'You are an agent.' });
  memory.add({ role: 'user', content: 'Read every module.' });
  let passes = 0;
  for (let n = 1; n <= 80; n++) {
    memory.add(round(n, { calls: 1, resultChars: 1500 }));
    if ((await memory.compressIfNeeded()).compressed) passes++;
  }
  // Four summaries side by side, then one that folds them: summaries of summaries.
  assert.ok(passes >= 6, `${passes} passes`);
  const originals = await memory.originalMessages();
  const pool = new Map();
  const keep = (m) => pool.set(JSON.stringify(m), (pool.get(JSON.stringify(m)) ?? 0) + 1);
  for (const m of memory.messages()) keep(m);
  for (const uuid of new Set(memory.messages().flatMap((m) => markers(JSON.stringify(m))))) {
    for (const m of await memory.reload(uuid)) {
      assert.deepEqual(markers(JSON.stringify(m)), [], 'a reload gives originals, never a summary');
      keep(m);
    }
  }
  for (const [i, m] of originals.entries()) {
    const k = JSON.stringify(m);
    assert.ok((pool.get(k) ?? 0) > 0, `original ${i} is neither in view nor one reload away`);
    pool.set(k, pool.get(k) - 1);
  }
  assert.deepEqual(memory.messages()[1], originals[1], 'the task stays verbatim');
});

test('the task stays verbatim unless keepTask is false', async () => {
  for (const keepTask of [true, false]) {
    const memory = new AutoContextMemory({ maxToken: 4_000, keepTask, summarize: () => 'what was done', sessionId: `task-${keepTask}` });
    const task = { role: 'user', content: 'Port the parser to the new lexer; keep the public API unchanged.' };
    memory.add(task);
    for (let n = 1; n <= 12; n++) {
      memory.add(round(n, { calls: 1, resultChars: 1500 }));
      await memory.compressIfNeeded();
    }
    assert.equal(memory.messages().some((m) => JSON.stringify(m) === JSON.stringify(task)), keepTask, `keepTask ${keepTask}`);
  }
});

test('a user message larger than the window keeps its head and tail in every format', async () => {
  const big = `${'HEAD-OF-THE-PASTE '.repeat(20)}${text(60_000, 3)}${' TAIL-OF-THE-PASTE'.repeat(20)}`;
  const shapes = {
    openai: [{ role: 'user', content: 'First question.' }, { role: 'assistant', content: 'Answer.' }, { role: 'user', content: big }],
    anthropic: [{ role: 'user', content: 'First question.' }, { role: 'assistant', content: 'Answer.' }, { role: 'user', content: big }],
    gemini: [{ role: 'user', parts: [{ text: 'First question.' }] }, { role: 'model', parts: [{ text: 'Answer.' }] }, { role: 'user', parts: [{ text: big }] }],
  };
  for (const [format, messages] of Object.entries(shapes)) {
    const memory = new AutoContextMemory({ format, maxToken: 8_000, sessionId: `huge-${format}` });
    memory.add(messages);
    const r = await memory.compressIfNeeded();
    assert.equal(r.underTarget, true, `${format}: ${JSON.stringify(r.reason)}`);
    assert.deepEqual(r.events.map((e) => e.type), ['EMERGENCY_OFFLOAD'], format);
    const last = JSON.stringify(memory.messages().at(-1));
    assert.ok(last.includes('HEAD-OF-THE-PASTE') && last.includes('TAIL-OF-THE-PASTE') && !last.includes(text(60_000, 3).slice(20_000, 20_200)), format);
    const [uuid] = markers(last);
    assert.deepEqual(await memory.reload(uuid), [messages[2]], `${format}: the whole message reloads`);
    assert.deepEqual(memory.validate(), [], format);
  }
});

test('a user message over the target but inside the window reaches the model whole', async () => {
  // A 30,281-token paste as the newest message of a 32k window was cut to its head and tail:
  // it is over the 75% target, yet the whole request fits the window.
  const before = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello!' }];
  let chars = 90_000;
  let paste = text(chars, 7);
  while (countTokens(paste) < 30_281) paste = text((chars += 2_000), 7);
  const messages = [...before, { role: 'user', content: paste }];
  const memory = new AutoContextMemory({ maxToken: 32_000, sessionId: 'fits-window' });
  memory.add(messages);
  assert.ok(memory.tokenCount() > 24_000 && memory.tokenCount() < 32_000, `${memory.tokenCount()} tokens: over the target, inside the window`);
  const r = await memory.compressIfNeeded();
  assert.equal(r.underTarget, false);
  assert.match(r.reason, /current user message/);
  assert.deepEqual(memory.messages(), messages, 'sent as it was written');
  assert.ok(r.tokensAfter <= 32_000);
});

test('summarizeFromCache sends the agent\'s own request, then the instruction, valid in each format', async () => {
  const shapes = {
    openai: (n) => investigate(n),
    anthropic: (n) => [
      { role: 'user', content: `Step ${n}: look at the next part.` },
      { role: 'assistant', content: [{ type: 'tool_use', id: `c${n}`, name: 'read_file', input: { path: `src/part_${n}.py` } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: `c${n}`, content: text(3000, n) }] },
      { role: 'assistant', content: [{ type: 'text', text: `Part ${n} read.` }] },
    ],
  };
  for (const [format, make] of Object.entries(shapes)) {
    const requests = [];
    const memory = new AutoContextMemory({ format, maxToken: 6_000, summarizeFromCache: true, summarize: (req) => (requests.push(req), 'summary of the parts'), sessionId: `cache-${format}` });
    let sent = [];
    for (let n = 1; n <= 12 && requests.length === 0; n++) {
      for (const m of make(n)) memory.add(m);
      sent = memory.messages();
      await memory.compressIfNeeded();
    }
    assert.ok(requests.length > 0, format);
    const req = requests[0];
    assert.equal(req.fromCache, true, format);
    const shared = sent.length - (req.messages.length === sent.length ? 1 : 0);
    assert.deepEqual(req.messages.slice(0, shared), sent.slice(0, shared), `${format}: the agent's request, byte for byte`);
    assert.match(JSON.stringify(req.messages.at(-1)), /of the conversation above \(counting its messages from 1\)/);
    assert.deepEqual(validate(req.messages, format, { request: true }), [], format);
    // Without the option, the request is the span and reads long results as head and tail
    // (results kept whole until the summary reads them: cut above 10,000 characters, no stubs).
    const plain = [];
    const other = new AutoContextMemory({
      format,
      maxToken: 6_000,
      toolResultLimit: 10_000,
      strategies: LADDER_WITHOUT_STUBS,
      summarize: (r) => (plain.push(r), 'summary'),
      sessionId: `plain-${format}`,
    });
    for (let n = 1; n <= 12 && plain.length === 0; n++) {
      for (const m of make(n)) other.add(m);
      await other.compressIfNeeded();
    }
    assert.equal(plain[0].fromCache, false);
    assert.match(plain[0].prompt, /characters of this result left out here/);
  }
});
