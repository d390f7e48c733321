// The command reads every format the library does, as a user hands it a conversation: Gemini
// `Content[]` and a `{contents}` request body, a Responses API input list and an `{input}` body,
// each detected or named with --format, and --out writes the compressed list back in its shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { validate } from 'autocontext';
import { cli, EXAMPLE, tempDir } from './cli-helpers.mjs';

const example = JSON.parse(await readFile(EXAMPLE, 'utf8')).messages;
const system = example.find((m) => m.role === 'system')?.content ?? '';

/** The OpenAI-shaped example as Gemini contents: tool results as function responses in the user's turn. */
function toGemini(messages) {
  const out = [];
  const names = new Map();
  const push = (role, parts) => {
    const last = out.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  };
  for (const m of messages) {
    const text = typeof m.content === 'string' ? m.content : '';
    if (m.role === 'system') continue;
    if (m.role === 'assistant') {
      const parts = text ? [{ text }] : [];
      for (const c of m.tool_calls ?? []) {
        names.set(c.id, c.function.name);
        parts.push({ functionCall: { id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) } });
      }
      push('model', parts);
    } else if (m.role === 'tool') {
      push('user', [{ functionResponse: { id: m.tool_call_id, name: names.get(m.tool_call_id), response: { output: text } } }]);
    } else push('user', [{ text }]);
  }
  return out;
}

/** The example as Responses API input items: one item per message, function call and output. */
function toResponses(messages) {
  const out = [];
  for (const m of messages) {
    const text = typeof m.content === 'string' ? m.content : '';
    if (m.role === 'system') out.push({ type: 'message', role: 'developer', content: [{ type: 'input_text', text }] });
    else if (m.role === 'user') out.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
    else if (m.role === 'tool') out.push({ type: 'function_call_output', call_id: m.tool_call_id, output: text });
    else {
      if (text) out.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
      for (const c of m.tool_calls ?? []) out.push({ type: 'function_call', call_id: c.id, name: c.function.name, arguments: c.function.arguments });
    }
  }
  return out;
}

const openaiTurns = { user: example.filter((m) => m.role === 'user').length, model: example.filter((m) => m.role === 'assistant').length };

/** Runs `compress` on `body` (written to a file) with `args`; returns the report and what --out wrote. */
async function compress(dir, name, body, args = []) {
  const file = join(dir, `${name}.json`);
  const out = join(dir, `${name}.out.json`);
  await writeFile(file, JSON.stringify(body));
  const r = await cli(['compress', file, '--max-token', '32000', '--out', out, '--json', ...args]);
  assert.equal(r.code, 0, `${name}: ${r.stderr}`);
  return { report: JSON.parse(r.stdout), written: JSON.parse(await readFile(out, 'utf8')) };
}

test('a Gemini Content[] file and a {contents} request body: detected, named, compressed, written back', async () => {
  const dir = await tempDir();
  try {
    const contents = toGemini(example);
    const cases = [
      ['gemini-list', contents, []],
      ['gemini-body', { model: 'gemini-2.5-pro', systemInstruction: { parts: [{ text: system }] }, contents }, []],
      ['gemini-named', contents, ['--format', 'gemini']],
    ];
    for (const [name, body, args] of cases) {
      const { report, written } = await compress(dir, name, body, args);
      assert.equal(report.format, 'gemini', name);
      assert.equal(report.formatFrom, args.length > 0 ? 'option' : 'detected', name);
      assert.deepEqual({ user: report.turns.user, model: report.turns.model }, openaiTurns, `${name}: a turn of function responses is no user turn`);
      assert.ok(report.events.count > 0 && report.after.tokens < report.before.tokens, name);
      assert.equal(report.turns.overWindow, 0, name);
      const list = Array.isArray(body) ? written : written.contents;
      if (!Array.isArray(body)) assert.deepEqual({ ...written, contents: undefined }, { ...body, contents: undefined }, `${name}: the body's other fields stay`);
      assert.ok(Array.isArray(list) && list.length > 0 && list.length < contents.length, name);
      assert.deepEqual(validate(list, 'gemini'), [], name);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a Responses API input list and an {input} request body: detected, named, one model call per response', async () => {
  const dir = await tempDir();
  try {
    const input = toResponses(example);
    const cases = [
      ['responses-list', input, []],
      ['responses-body', { model: 'gpt-5', instructions: 'Be careful.', input }, []],
      ['responses-named', input, ['--format', 'openai-responses']],
    ];
    for (const [name, body, args] of cases) {
      const { report, written } = await compress(dir, name, body, args);
      assert.equal(report.format, 'openai-responses', name);
      assert.equal(report.formatFrom, args.length > 0 ? 'option' : 'detected', name);
      // A response's message and function calls are items of one model call.
      assert.deepEqual({ user: report.turns.user, model: report.turns.model }, openaiTurns, name);
      assert.equal(report.bill.calls, openaiTurns.model, name);
      assert.ok(report.events.count > 0 && report.after.tokens < report.before.tokens, name);
      const list = Array.isArray(body) ? written : written.input;
      assert.ok(Array.isArray(list) && list.length < input.length, name);
      assert.deepEqual(validate(list, 'openai-responses'), [], name);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('--format names every format of the library; the text report and reload read them too', async () => {
  const usage = await cli(['compress', EXAMPLE, '--max-token', '32000', '--format', 'cohere']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--format must be openai, anthropic, ai-sdk, openai-responses, gemini; got "cohere"/);
  const help = await cli(['--help']);
  assert.match(help.stdout, /--format F +openai, anthropic, ai-sdk, openai-responses, gemini \(default: detected\)/);

  const dir = await tempDir();
  try {
    const file = join(dir, 'gemini.json');
    await writeFile(file, JSON.stringify({ contents: toGemini(example) }));
    const store = join(dir, 'store');
    const text = await cli(['compress', file, '--max-token', '32000', '--store', store]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /conversation +\d+ messages · \d+ user turns · 68 model turns \(gemini, detected\)/);
    // An offload of Gemini contents reads as calls and results, not as bare roles.
    const written = JSON.parse((await cli(['compress', file, '--max-token', '32000', '--store', store, '--json'])).stdout);
    const shown = [];
    for (const key of written.offloads.keys) {
      const r = await cli(['reload', key.split('/')[1], '--store', store]);
      assert.equal(r.code, 0, r.stderr);
      shown.push(r.stdout);
    }
    assert.ok(shown.some((o) => /^→ call \S+ \{/m.test(o) && /^── \d+ · model /m.test(o)), 'a model turn with its calls');
    assert.ok(shown.some((o) => /^← result of \S+$/m.test(o)), 'function responses, by name');
    assert.ok(shown.every((o) => !/^\[part\]$/m.test(o)), 'no part unread');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
