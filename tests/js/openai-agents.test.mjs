// autocontext/openai-agents with the real `@openai/agents` runner and a scripted model: every
// model call of a long tool-using run stays inside the window with the filter (and does not with
// the session alone), every request is a valid Responses input, the run's items are recorded
// once, the model reloads what was offloaded, and the Session methods keep their contracts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, RunContext, run, tool } from '@openai/agents';
import { AutoContextMemory, MemoryStore, validate } from 'autocontext';
import { AutoContextSession } from 'autocontext/openai-agents';
import { ScriptedModel, functionCall, message, outputText, reasoning, requestTokens } from './agents-model.mjs';
import { markers, rejected, text } from './helpers.mjs';

const WINDOW = 12_000;
const files = (q, t) => [`q${q}/t${t}/a.rs`, `q${q}/t${t}/b.rs`];
const contents = (path) => `// ${path}\n${text(4_000, path.length * 7 + path.charCodeAt(4))}`;

/** Each run: `turns` model responses of reasoning and two parallel reads, then an answer. */
function worker(turns, tag = 'c') {
  let q = 0;
  let t = 0;
  return (input, n) => {
    const last = input.at(-1);
    if (last?.role === 'user') {
      q++;
      t = 0;
    }
    if (t < turns) {
      t++;
      return [reasoning(n), ...files(q, t).map((path, k) => functionCall(`${tag}${q}_${t}_${k}`, 'read_file', { path }))];
    }
    return [message(`Answer ${q}: the files are read.`, n)];
  };
}

function readTool() {
  return tool({
    name: 'read_file',
    description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: true },
    strict: false,
    execute: async ({ path }) => contents(path),
  });
}

/** Asks `questions` questions in one session; returns the model's inputs. */
async function converse({ questions, turns, filter, stream = false, tag = 'c', session = new AutoContextSession({ maxToken: WINDOW, sessionId: 'work' }) }) {
  const model = new ScriptedModel(worker(turns, tag));
  const agent = new Agent({ name: 'worker', instructions: 'Read what you need.', model, tools: [readTool(), session.reloadTool] });
  for (let q = 1; q <= questions; q++) {
    const options = { session, maxTurns: 50, stream, ...(filter ? { callModelInputFilter: session.callModelInputFilter } : {}) };
    const result = await run(agent, `Question ${q}: read the files.`, options);
    if (stream) {
      for await (const _ of result) void _;
      await result.completed;
    }
    assert.equal(result.finalOutput, `Answer ${q}: the files are read.`);
  }
  return { inputs: model.inputs, session };
}

test('with the filter every model call of a long run stays in the window; the session alone does not', async (t) => {
  const filtered = await converse({ questions: 3, turns: 8, filter: true });
  const alone = await converse({ questions: 3, turns: 8, filter: false });
  assert.equal(filtered.inputs.length, 27, '3 questions × (8 tool turns + 1 answer)');
  const over = (inputs) => inputs.filter((input) => requestTokens(input) > WINDOW).length;
  const largest = (inputs) => Math.max(...inputs.map(requestTokens));
  t.diagnostic(`window ${WINDOW}: with the filter ${over(filtered.inputs)}/27 over (largest ${largest(filtered.inputs)}); session alone ${over(alone.inputs)}/27 over (largest ${largest(alone.inputs)})`);
  assert.equal(over(filtered.inputs), 0, `largest request: ${Math.max(...filtered.inputs.map(requestTokens))} tokens`);
  assert.ok(over(alone.inputs) > 0, `the session alone lets the runs grow past the window (${over(alone.inputs)} of 27 over)`);

  const { session } = filtered;
  for (const [k, input] of filtered.inputs.entries()) {
    assert.deepStrictEqual(validate(input, 'openai-responses'), [], `request ${k}`);
    const question = input.filter((i) => i.role === 'user' && typeof i.content === 'string' && i.content.startsWith('Question')).at(-1);
    assert.ok(question, `request ${k} carries its run's question`);
  }
  assert.ok(session.memory.events().length > 0);
  // Every item of the three runs is recorded once: 3 questions, 24 responses of reasoning and
  // two calls, 48 results, 3 answers.
  const originals = (await session.memory.originalMessages());
  assert.equal(originals.length, 3 + 24 * 3 + 48 + 3);
  const callIds = originals.filter((i) => i.type === 'function_call').map((i) => i.callId);
  assert.equal(new Set(callIds).size, 48);
  // Nothing lost: every original is in the working list or reloads from a marker, transitively.
  const reachable = new Set();
  const queue = [...session.memory.messages()];
  const seen = new Set();
  while (queue.length > 0) {
    const item = queue.pop();
    reachable.add(JSON.stringify(item));
    for (const uuid of markers(JSON.stringify(item))) {
      if (!seen.has(uuid)) {
        seen.add(uuid);
        queue.push(...(await session.memory.reload(uuid)));
      }
    }
  }
  for (const [k, item] of originals.entries()) assert.ok(reachable.has(JSON.stringify(item)), `original ${k} is recoverable`);
});

test('a streamed run goes through the filter and records its items once', async () => {
  const { inputs, session } = await converse({ questions: 2, turns: 6, filter: true, stream: true });
  assert.ok(inputs.every((input) => requestTokens(input) <= WINDOW));
  assert.ok(inputs.every((input) => validate(input, 'openai-responses').length === 0));
  assert.equal((await session.memory.originalMessages()).length, 2 + 12 * 3 + 24 + 2);
});

test('the model reloads an offload with the reload tool', async () => {
  const session = new AutoContextSession({ maxToken: WINDOW, toolResultLimit: 2_000, sessionId: 'reload' });
  let asked = false;
  const model = new ScriptedModel((input, n) => {
    const seen = JSON.stringify(input);
    if (n === 1) return [functionCall('big', 'read_file', { path: 'big/log.txt' })];
    const uuid = markers(seen)[0];
    if (!asked && uuid) {
      asked = true;
      return [reasoning(n), functionCall('again', 'context_reload', { working_context_offload_uuid: uuid })];
    }
    const answer = input.find((i) => i.type === 'function_call_result' && i.callId === 'again');
    return [message(answer && /Original content of offload/.test(outputText(answer)) ? 'reloaded' : 'not reloaded', n)];
  });
  const big = tool({
    name: 'read_file',
    description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: true },
    strict: false,
    execute: async () => text(60_000, 5),
  });
  const agent = new Agent({ name: 'reader', model, tools: [big, session.reloadTool] });
  const result = await run(agent, 'Read the log.', { session, callModelInputFilter: session.callModelInputFilter });
  assert.ok(asked, 'the big result was truncated behind a marker');
  assert.equal(result.finalOutput, 'reloaded');
  assert.ok(model.inputs.every((input) => validate(input, 'openai-responses').length === 0));
});

test('the Session methods: id, limit, pop, clear, and a state that resumes', async () => {
  const store = new MemoryStore();
  const { session } = await converse({ questions: 2, turns: 8, filter: true, session: new AutoContextSession({ maxToken: WINDOW, sessionId: 'methods', store }) });
  assert.equal(await session.getSessionId(), 'methods');
  const all = await session.getItems();
  assert.deepStrictEqual(await session.getItems(3), all.slice(-3));
  assert.deepStrictEqual(await session.getItems(0), []);

  // A state restores into a session that goes on where the first stopped.
  const resumed = AutoContextSession.fromJSON(JSON.parse(JSON.stringify(session.toJSON())), { store });
  assert.deepStrictEqual(await resumed.getItems(), all);
  const count = (await resumed.memory.originalMessages()).length;
  const { inputs } = await converse({ questions: 1, turns: 2, filter: true, session: resumed, tag: 'r' });
  assert.ok(inputs.every((input) => validate(input, 'openai-responses').length === 0));
  assert.equal((await resumed.memory.originalMessages()).length, count + 1 + 2 * 3 + 4 + 1);

  // popItem takes back the last item as it was added.
  const last = (await resumed.memory.originalMessages()).at(-1);
  assert.deepStrictEqual(await resumed.popItem(), last);
  assert.equal((await resumed.memory.originalMessages()).length, count + 1 + 2 * 3 + 4);
  assert.notDeepStrictEqual(resumed.memory.messages().at(-1), last);
  await resumed.addItems([last]);
  assert.deepStrictEqual(resumed.memory.messages().at(-1), last);

  // clearSession forgets the conversation and deletes the session's offloads.
  assert.ok(resumed.memory.offloads().length > 0);
  const offloaded = resumed.memory.offloads().map((o) => o.uuid);
  await resumed.clearSession();
  assert.deepStrictEqual(await resumed.getItems(), []);
  assert.equal(await resumed.popItem(), undefined);
  for (const uuid of offloaded) assert.equal(await store.get(`methods/${uuid}`), null, `offload ${uuid} deleted`);
  await resumed.addItems([{ role: 'user', content: 'fresh start' }]);
  assert.deepStrictEqual(await resumed.getItems(), [{ role: 'user', content: 'fresh start' }]);
});

test('the filter alone works on a history the caller passes back', async () => {
  const session = new AutoContextSession({ maxToken: WINDOW, sessionId: 'filter-only' });
  const model = new ScriptedModel(worker(6));
  const agent = new Agent({ name: 'worker', model, tools: [readTool(), session.reloadTool] });
  let history = [];
  for (let q = 1; q <= 2; q++) {
    const result = await run(agent, [...history, { role: 'user', content: `Question ${q}: read the files.` }], { callModelInputFilter: session.callModelInputFilter, maxTurns: 50 });
    assert.equal(result.finalOutput, `Answer ${q}: the files are read.`);
    history = result.history;
  }
  assert.ok(model.inputs.every((input) => requestTokens(input) <= WINDOW));
  assert.ok(model.inputs.every((input) => validate(input, 'openai-responses').length === 0));
  // The memory holds the conversation once, the last answer not yet (no session saves it).
  assert.equal((await session.memory.originalMessages()).length, history.length - 1);
});

test('an input that is not the session\'s conversation is compressed on its own, its offloads still reload', async () => {
  const session = new AutoContextSession({ maxToken: 4_000, sessionId: 'other' });
  await session.addItems([{ role: 'user', content: 'hello' }, message('hi', 1)]);
  const before = (await session.memory.originalMessages());
  const input = [{ role: 'user', content: 'another conversation' }];
  for (let k = 0; k < 6; k++) {
    input.push(functionCall(`o${k}`, 'read_file', { path: `o${k}` }));
    input.push({ type: 'function_call_result', callId: `o${k}`, name: 'read_file', status: 'completed', output: { type: 'text', text: text(4_000, k) } });
  }
  input.push(message('done', 9), { role: 'user', content: 'and now?' });
  const out = await session.callModelInputFilter({ modelData: { input, instructions: 'x' }, agent: new Agent({ name: 'a' }), context: undefined });
  assert.equal(out.instructions, 'x');
  assert.ok(requestTokens(input) > 4_000, `${requestTokens(input)} tokens before`);
  assert.ok(requestTokens(out.input) <= 4_000, `${requestTokens(out.input)} tokens after`);
  assert.deepStrictEqual(validate(out.input, 'openai-responses'), []);
  assert.deepStrictEqual((await session.memory.originalMessages()), before, 'the session is untouched');
  const uuid = markers(JSON.stringify(out.input))[0];
  assert.ok(uuid && session.memory.offloads().every((o) => o.uuid !== uuid), 'an offload the memory does not own');
  const answer = await session.reloadTool.invoke(new RunContext(), JSON.stringify({ working_context_offload_uuid: uuid }));
  assert.match(answer, new RegExp(`Original content of offload ${uuid}`));
  const unknown = await session.reloadTool.invoke(new RunContext(), JSON.stringify({ working_context_offload_uuid: '00000000-0000-4000-8000-000000000000' }));
  assert.doesNotMatch(unknown, /Original content/);
});

test('options are checked: the format is fixed, a memory of another format is refused', async () => {
  assert.throws(() => new AutoContextSession({ format: 'openai' }), { code: 'INVALID_CONFIG', field: 'format' });
  assert.throws(() => new AutoContextSession({}, new AutoContextMemory({ format: 'anthropic' })), { code: 'INVALID_CONFIG', field: 'format' });
  assert.throws(() => new AutoContextSession({ maxToken: -1 }), { code: 'INVALID_CONFIG', field: 'maxToken' });
  const session = new AutoContextSession({});
  assert.equal(session.reloadTool.name, 'context_reload');
  assert.equal(session.reloadTool.type, 'function');
  const error = await rejected(session.addItems([{ role: 'robot', content: 'x' }]));
  assert.equal(error.code, 'INVALID_MESSAGE');
});
