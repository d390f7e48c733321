// The Strands systems of the cost benchmark (bench/cost/systems/strands.mjs): Strands runs its
// own agent loop, which the replay feeds the trace into; a slip in that bridge would show as
// Strands' managers' doing. Run by `npm test`; needs no build.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NullConversationManager } from '@strands-agents/sdk';
import { messageTokens } from '../../js/accounting.js';
import { CpuClock } from './clock.mjs';
import { replayTrace } from './replay.mjs';
import { SummarizerLog } from './summarizer.mjs';
import { STRANDS_SYSTEMS, stashRefs, strandsSystem } from './systems/strands.mjs';

const chars = (text) => Math.ceil(text.length / 4);
const env = (window) => ({ lib: {}, window, ratio: 0.75, countText: chars, peerCountText: chars, validate: () => [] });
const system = (id) => STRANDS_SYSTEMS.find((s) => s.id === id);
const call = (id, name, args) => ({ id, type: 'function', function: { name, arguments: JSON.stringify(args) } });

/** Every request a system sends on a trace (one per assistant message but the first message), then the next one. */
async function requests(sys, trace, window) {
  const session = await sys.start({ window, ratio: 0.75, log: new SummarizerLog(), clock: new CpuClock(), countClock: new CpuClock(), countText: chars, trace });
  const out = [];
  for (const [i, m] of trace.messages.entries()) {
    if (m.role === 'assistant' && i > 0) out.push((await session.request()).messages);
    session.add(m);
  }
  out.push((await session.request()).messages);
  return out;
}

test('with no context manager, a Strands agent sends what the raw agent sends, message for message', async () => {
  const messages = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Look at src/app.py' },
    { role: 'assistant', content: null, tool_calls: [call('c1', 'read_file', { path: 'src/app.py' }), call('c2', 'grep', { pattern: 'main_loop' })] },
    { role: 'tool', tool_call_id: 'c1', content: 'def main_loop():\n    pass' },
    { role: 'tool', tool_call_id: 'c2', content: 'src/app.py:1: main_loop' },
    // A user's interjection while the agent works joins the results' message.
    { role: 'user', content: 'Also check the tests.' },
    { role: 'assistant', content: 'main_loop is in src/app.py.' },
    // An answer with no call waiting, and a later system message: history sent with the next invocation.
    { role: 'assistant', content: 'One more thing.' },
    { role: 'system', content: 'Reminder: be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'Thanks. ' }, { type: 'text', text: 'Now the tests.' }] },
    { role: 'assistant', content: 'Reading them.', tool_calls: [call('c3', 'read_file', { path: 'tests/test_app.py' })] },
    { role: 'tool', tool_call_id: 'c3', content: 'def test_main_loop(): ...' },
    { role: 'assistant', content: 'Done.' },
  ];
  const trace = { name: 'bridge', messages };
  const none = strandsSystem('strands-none', 'Strands, no management', () => ({ conversationManager: new NullConversationManager() }));
  const got = await requests(none, trace, 1e9);
  const raw = [];
  for (const [i, m] of messages.entries()) if (m.role === 'assistant' && i > 0) raw.push(messages.slice(0, i));
  raw.push(messages);
  assert.equal(got.length, raw.length);
  for (const [i, request] of got.entries()) {
    assert.equal(request.length, raw[i].length, `request ${i}: ${JSON.stringify(request.map((m) => m.role))}`);
    // Unchanged messages are the trace's own objects: sent (and counted) byte for byte.
    request.forEach((m, j) => assert.equal(m, raw[i][j], `request ${i}, message ${j}`));
  }
});

test("'auto' truncates a long result to a preview naming its stash reference; one reload gives the original back", async () => {
  const big = Array.from({ length: 400 }, (_, i) => (i === 200 ? 'the culprit is hidden_marker_name here' : `line ${i} of the log`)).join('\n');
  const messages = [
    { role: 'user', content: 'Find the culprit in the log.' },
    { role: 'assistant', content: null, tool_calls: [call('c0', 'status', {}), call('c1', 'read_log', {})] },
    // Results in another order than the calls': a changed results message keeps the trace's.
    { role: 'tool', tool_call_id: 'c1', content: big },
    { role: 'tool', tool_call_id: 'c0', content: 'ok' },
    { role: 'assistant', content: 'It is hidden_marker_name.' },
  ];
  const trace = { name: 'auto', messages };
  const [, second, next] = await requests(system('strands-auto'), trace, 32_000);
  assert.deepEqual(second.slice(2).map((m) => m.tool_call_id), ['c1', 'c0']);
  assert.deepEqual(second.at(-1), messages[3]);
  const preview = second.at(-2);
  assert.equal(preview.role, 'tool');
  assert.equal(preview.tool_call_id, 'c1');
  assert.match(preview.content, /^\[Truncated: 1 block, ~[\d,]+ tokens\]\n\nline 0 of the log/);
  assert.ok(!preview.content.includes('hidden_marker_name'), 'the middle is elided');
  assert.deepEqual(stashRefs(preview.content), ['c1_0']);
  assert.equal(next.at(-3).content, preview.content, 'the preview stays');

  const r = await replayTrace(system('strands-auto'), trace, env(32_000));
  assert.deepEqual([r.ids, r.idsInView, r.idsReach], [1, 0, 1], 'hidden_marker_name: one reload away');
  assert.deepEqual([r.newestDropped, r.newestAltered], [0, 0]);
  assert.deepEqual([r.originals, r.recoverable, r.recoverableInOne], [5, 5, 5], 'the reference in the preview gives the exact original back');
  // A preview of the newest result still sends it (its head under Strands' header).
  const alone = [messages[0], { ...messages[1], tool_calls: [messages[1].tool_calls[1]] }, messages[2], messages[4]];
  const r1 = await replayTrace(system('strands-auto'), { name: 'auto-newest', messages: alone }, env(32_000));
  assert.deepEqual([r1.newestDropped, r1.newestAltered], [0, 1]);
});

test('SummarizingConversationManager: a request over the window is refused, summarized and retried; the retry is accounted', async () => {
  const messages = [{ role: 'system', content: 'You are a helpful agent.' }];
  for (let i = 0; i < 14; i++) {
    messages.push({ role: 'user', content: `question ${i}: ${'q'.repeat(600)}` });
    messages.push({ role: 'assistant', content: `answer ${i}: ${'a'.repeat(600)}` });
  }
  const trace = { name: 'summarizing', messages };
  const window = 3_000;
  const r = await replayTrace(system('strands-summarizing'), trace, env(window));
  assert.ok(r.summarizerCalls >= 1, `summarized ${r.summarizerCalls} times`);
  assert.equal(r.overWindow, 0);
  const overflows = r.passList.filter((p) => p.overflow);
  assert.ok(overflows.length >= 1 && overflows.every((p) => p.tokens <= window), JSON.stringify(r.passList));
  assert.equal(r.newestDropped, 0);
  // Every request starts with the system prompt, and the summary (a user message) follows it.
  const [first] = await requests(system('strands-summarizing'), { name: 's', messages: messages.slice(0, 3) }, window);
  assert.equal(first[0], messages[0]);
  const all = await requests(system('strands-summarizing'), trace, window);
  const summarized = all.find((req) => typeof req[1]?.content === 'string' && req[1].content.startsWith('[summary] '));
  assert.ok(summarized !== undefined, 'a request holds the summary');
  assert.equal(summarized[0], messages[0]);
  assert.ok(all.every((req) => req.reduce((n, m) => n + messageTokens(m, chars), 0) <= window));
});

test('a call the trace has no result for is answered empty, and the replay goes on', async () => {
  const messages = [
    { role: 'user', content: 'Start.' },
    { role: 'assistant', content: null, tool_calls: [call('c1', 'run', {}), call('c2', 'run', {})] },
    { role: 'tool', tool_call_id: 'c1', content: 'ran' },
    { role: 'assistant', content: 'Done.' },
  ];
  const session = await system('strands-sliding').start({ window: 32_000, ratio: 0.75, log: new SummarizerLog(), clock: new CpuClock(), countClock: new CpuClock(), countText: chars, trace: { name: 'missing', messages } });
  session.add(messages[0]);
  await session.request();
  session.add(messages[1]);
  session.add(messages[2]);
  const out = await session.request();
  assert.match(out.error, /no result for c2/);
  assert.deepEqual(
    out.messages.slice(2).map((m) => [m.tool_call_id, m.content]),
    [
      ['c1', 'ran'],
      ['c2', ''],
    ],
  );
});
