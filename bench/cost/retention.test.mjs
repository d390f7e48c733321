// Later-use retention (bench/cost/retention.mjs) and its place in the replay
// (bench/cost/replay.mjs): a bug in either would skew the quality figures of docs/benchmarks.md
// silently. Run by `npm test`; needs no build.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { messageTokens } from '../../js/accounting.js';
import { replayTrace } from './replay.mjs';
import { Retention, contentLines, identifiers, laterLines, laterUse, messageText, offloadMarkers, replacementKind } from './retention.mjs';

const ids = (text) => [...identifiers(text).keys()];
const marker = (uuid) => `<!-- CONTEXT_OFFLOAD: uuid=${uuid} -->`;
const U1 = '11111111-1111-4111-8111-111111111111';
const U2 = '22222222-2222-4222-8222-222222222222';
const U3 = '33333333-3333-4333-8333-333333333333';

test('identifiers: each kind, found on its own, in order of first occurrence', () => {
  const found = identifiers(
    'Open /testbed/astroid/nodes.py, then src/main.rs and ~/notes/todo and https://example.com/a/b; ' +
      'call brain_numpy via getName on AstroidBuilder; commit 258c7280, run 123456 on 2024-05-01 (score 0.98765), ' +
      'session 3754b376-8ed8-4bf9-ba37-3f020f386e7c, value 0x1f2e3d, import os.path.join.',
  );
  assert.deepEqual(Object.fromEntries(found), {
    '/testbed/astroid/nodes.py': 'path',
    'nodes.py': 'file',
    'src/main.rs': 'path',
    'main.rs': 'file',
    '~/notes/todo': 'path',
    'https://example.com/a/b': 'path',
    'example.com': 'file',
    brain_numpy: 'snake',
    getName: 'camel',
    AstroidBuilder: 'pascal',
    '258c7280': 'hex',
    '123456': 'number',
    '2024-05-01': 'number',
    '0.98765': 'number',
    '3754b376-8ed8-4bf9-ba37-3f020f386e7c': 'hex',
    '0x1f2e3d': 'hex',
    'os.path.join': 'file',
  });
});

test('identifiers: 6 characters at least', () => {
  assert.deepEqual(ids('a_b_c ab_cd1 x.py ab.py a.py.js getXy getXyz AbcDe AbcDef 12345 123456 a1b2c 1a2b3c'), ['ab_cd1', 'a.py.js', 'getXyz', 'AbcDef', '123456', '1a2b3c']);
  // A number of 4 digits or more in groups counts when the whole is long enough.
  assert.deepEqual(ids('1,234 12:30:45 3.14159 3.14 10-20'), ['12:30:45', '3.14159']);
});

test('identifiers: plain words, short numbers and prose do not count', () => {
  assert.deepEqual(ids('The environment configuration failed; please retry the deployment and/or Restart everything. README JSON Python3'), []);
  assert.deepEqual(ids('It took 2024 ms, 12345 requests, 3.5 s; accede to the facade decade.'), [], 'short numbers and words of hex letters alone');
  assert.deepEqual(ids('input/output, either/or, Mr. Smith said so.'), [], 'one slash and no file name is not a path');
});

test('identifiers: a backslash escape separates, so JSON arguments read like their text', () => {
  const args = JSON.stringify({ command: 'cd /repo\nrun_tests --name "quoted_name"' });
  assert.deepEqual(ids(args), ['run_tests', 'quoted_name'], 'not nrun_tests; /repo is too short');
  const call = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'shell_exec', arguments: args } }] };
  assert.equal(messageText(call), `shell_exec\n${args}`);
  assert.equal(messageText({ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:x' } }, { type: 'text', text: 'this' }] }), 'see\nthis');
});

test('laterUse: what the next message uses of what the conversation before it held, outside the system prompt, and what is old', () => {
  const pad = 'x '.repeat(30); // 60 characters, no identifier
  const messages = [
    { role: 'system', content: 'Use secret_tool when asked.' },
    { role: 'user', content: 'Fix early_name please.' }, // 22 characters
    { role: 'assistant', content: 'Looking at early_name.' }, // a turn: early_name seen 0 characters back
    { role: 'tool', tool_call_id: 'c1', content: pad },
    { role: 'user', content: 'also recent_name' },
    {
      role: 'assistant',
      content: 'I use early_name, recent_name, secret_tool and brand_new_name.',
      tool_calls: [{ id: 'c2', type: 'function', function: { name: 'read_file', arguments: '{"path":"recent_name"}' } }],
    },
  ];
  const used = laterUse(messages, 60);
  assert.deepEqual([...used.keys()], [2, 5], 'every assistant message after the first message is a turn');
  assert.deepEqual(used.get(2), [{ id: 'early_name', old: false }]);
  // Before message 5 the conversation text is 'Fix early_name please.\nLooking at early_name.\n' + pad +
  // '\nalso recent_name': after the last early_name come '.' (1), '\n' + pad (61) and
  // '\nalso recent_name' (17), 79 characters, more than 60.
  assert.deepEqual(used.get(5), [
    { id: 'early_name', old: true },
    { id: 'recent_name', old: false },
  ]);
  // The boundary: old means more than oldChars characters after the last occurrence.
  assert.equal(laterUse(messages, 79).get(5)[0].old, false);
  assert.equal(laterUse(messages, 78).get(5)[0].old, true);
  // Seen only in the system prompt does not count; nor does a name the conversation never held.
  assert.ok(!used.get(5).some((u) => u.id === 'secret_tool' || u.id === 'brand_new_name'));
});

test('retention: in view, one reload (not two), by replacement kind, memoized; a peer has no reload', async () => {
  const reloads = new Map([
    [U1, [{ role: 'tool', tool_call_id: 'c1', content: `first_hop_name\n${marker(U2)}` }]],
    [U2, [{ role: 'tool', tool_call_id: 'c0', content: 'second_hop_name' }]],
    [U3, [{ role: 'user', content: 'trunc_hop_name' }]],
  ]);
  const calls = new Map();
  const reloadOne = async (uuid) => {
    calls.set(uuid, (calls.get(uuid) ?? 0) + 1);
    if (!reloads.has(uuid)) throw new Error('not found');
    return reloads.get(uuid);
  };
  const request = [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: `[summary] earlier work\n${marker(U1)}` },
    { role: 'tool', tool_call_id: 'c3', content: `head\n[... 500 of 900 characters omitted; call context_reload with the uuid below for the full output ...]\n${marker(U3)}\ntail` },
    { role: 'user', content: 'keep in_view_name in mind' },
  ];
  const used = [
    { id: 'in_view_name', old: true },
    { id: 'first_hop_name', old: true },
    { id: 'trunc_hop_name', old: true },
    { id: 'second_hop_name', old: true },
    { id: 'lost_name', old: false },
  ];
  const r = new Retention(reloadOne);
  await r.turn(used, request);
  await r.turn(used, request);
  await r.turn([], request);
  const twice = (n) => 2 * n;
  assert.deepEqual(r.totals, {
    ids: twice(5),
    idsInView: twice(1),
    idsReach: twice(3),
    oldIds: twice(4),
    oldInView: twice(1),
    oldReach: twice(3),
    oldBehindSummary: twice(1),
    oldBehindTruncated: twice(1),
    oldBehindNotice: 0,
    oldBehindEmergency: 0,
    oldBehindStub: 0,
    oldUnreached: twice(1),
    oldDeeper: twice(1),
    // No later-used lines were given.
    lines: 0,
    linesInView: 0,
    linesReach: 0,
    oldLines: 0,
    oldLinesInView: 0,
    linesBehindSummary: 0,
    linesBehindTruncated: 0,
    linesBehindNotice: 0,
    linesBehindEmergency: 0,
    linesBehindStub: 0,
  });
  assert.deepEqual(Object.fromEntries(calls), { [U1]: 1, [U2]: 1, [U3]: 1 }, 'each offload reloaded once');
  const t = r.totals;
  assert.equal(t.oldIds - t.oldInView, t.oldBehindSummary + t.oldBehindTruncated + t.oldBehindNotice + t.oldBehindEmergency + t.oldUnreached);

  const peer = new Retention(undefined);
  await peer.turn(used, request);
  assert.deepEqual([peer.totals.idsInView, peer.totals.idsReach, peer.totals.oldReach, peer.totals.oldUnreached, peer.totals.oldDeeper], [1, 1, 1, 3, 0]);
});

test('later-used lines: what the next message quotes of what came before, decoded from tool-call arguments, in view or one reload', async () => {
  const edited = '    return parse_block(tokens, depth + 1)';
  const messages = [
    { role: 'system', content: 'a system line that is long enough to count' },
    { role: 'user', content: 'fix the parser' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path": "src/parser.py"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: `def parse(tokens):\n${edited}\nshort\n` },
    {
      role: 'assistant',
      content: 'a system line that is long enough to count',
      tool_calls: [{ id: 'c2', type: 'function', function: { name: 'edit', arguments: JSON.stringify({ old: edited, new: '    return parse_block(tokens, depth)' }) } }],
    },
  ];
  const lines = laterLines(messages, 10);
  // The edit's old text (decoded from its JSON arguments) was in the result; its new text and
  // what only the system prompt held were not seen before.
  assert.deepEqual(lines.get(4), [{ line: edited.trim(), old: false }]);
  assert.deepEqual(laterLines(messages, 0).get(4), [{ line: edited.trim(), old: true }]);
  assert.deepEqual(contentLines('  x\nshort line\n' + '-'.repeat(30) + '\n' + 'a'.repeat(24) + '\n'), ['a'.repeat(24)]);
  const stub = { role: 'tool', tool_call_id: 'c1', content: `def parse(tokens):\n[Earlier tool output of 80 characters, stubbed: call context_reload with the uuid below to read it whole]\n${marker(U1)}` };
  const r = new Retention(async () => [messages[3]]);
  await r.turn([], [messages[1], messages[2], messages[3]], lines.get(4));
  await r.turn([], [messages[1], messages[2], stub], lines.get(4));
  await r.turn([], [messages[1], messages[2], { ...stub, content: 'gone' }], lines.get(4));
  const t = r.totals;
  assert.deepEqual([t.lines, t.linesInView, t.linesReach, t.linesBehindStub], [3, 1, 2, 1]);
});

test('a replacement is told by its text', () => {
  assert.equal(replacementKind(`[Context note: 12 messages from earlier rounds were offloaded.]\n${marker(U1)}`), 'emergency');
  assert.equal(replacementKind(`first line\n[Earlier tool output of 4026 characters, stubbed: call context_reload with the uuid below to read it whole]\n${marker(U1)}`), 'stub');
  assert.equal(replacementKind(`abc\n[... 10 of 99 characters omitted; call context_reload ...]\n${marker(U1)}`), 'truncated');
  assert.equal(replacementKind(`[Summary of the earlier conversation]\n[summary] text\n${marker(U1)}`), 'summary');
  assert.equal(replacementKind(`[Summarized together with the result of c1.]\n${marker(U1)}`), 'summary');
  assert.equal(replacementKind(`The first lines of the file...\n${marker(U1)}`), 'notice');
  // Strands' context manager: a truncated preview, a summary, an offload notice.
  assert.equal(replacementKind('[Truncated: 1 block, ~3,410 tokens]\n\nhead\n\n[... 9 chars elided ...]\n\ntail\n\n[Stashed] [ref: c1_0]'), 'truncated');
  assert.equal(replacementKind('[Summarized: tool result, ~900 tokens]\n\n[summary] text [ref: c1_0]'), 'summary');
  assert.equal(replacementKind('[Offloaded: ~900 tokens] [ref: m1_0]'), 'notice');
  assert.deepEqual(offloadMarkers(`${marker(U2)} then ${marker(U1)} and ${marker(U2)} again; not CONTEXT_OFFLOAD: uuid=short`), [U2, U1]);
});

test('the replay scores every request, prices a summarize call against the request before it, and tells one reload from all', async () => {
  const chars = (s) => s.length;
  const sys = { role: 'system', content: 'be brief' };
  const ask = { role: 'user', content: 'fix alpha_file.py' };
  const trace = {
    name: 'crafted',
    messages: [
      sys,
      ask,
      { role: 'assistant', content: 'looking' },
      { role: 'user', content: 'and beta_name too' },
      { role: 'assistant', content: 'alpha_file.py and beta_name are done' },
    ],
  };
  // U1's originals hold an earlier replacement (marker U2), whose originals hold the user's request.
  const earlier = { role: 'user', content: `[summary] fix it\n${marker(U2)}` };
  const offloads = new Map([
    [U1, [earlier]],
    [U2, [ask]],
  ]);
  const system = {
    start: ({ log }) => {
      const added = [];
      let last = null;
      return {
        add: (m) => added.push(m),
        async request() {
          let messages = added.slice();
          if (added.length > 3) {
            // From the second call on the request is summarized, the first time with a summarize
            // request made of the previous request and an instruction.
            if (added.length === 4) log.record([...last, { role: 'user', content: 'Summarize the above.' }], '[summary] fix it');
            messages = [sys, { role: 'user', content: `[summary] fix it\n${marker(U1)}` }, ...added.slice(2)];
          }
          last = messages;
          return { messages, pass: null };
        },
        reloadOne: async (uuid) => offloads.get(uuid),
        reloaded: async () => [earlier, ask],
      };
    },
  };
  const r = await replayTrace(system, trace, { lib: {}, window: 1000, ratio: 0.75, countText: chars, peerCountText: chars, validate: () => [] });
  assert.equal(r.turns, 2);
  // Turn 1 uses nothing; turn 2 uses alpha_file.py and alpha_file (two reloads away) and beta_name (in view).
  assert.deepEqual([r.ids, r.idsInView, r.idsReach, r.oldIds], [3, 1, 1, 0]);
  assert.equal(r.summarizerCalls, 1);
  assert.equal(r.summarizerCached, messageTokens(sys, chars) + messageTokens(ask, chars));
  assert.deepEqual([r.originals, r.recoverable, r.recoverableInOne], [5, 5, 4], 'the request is only one reload away from its summary');
});
