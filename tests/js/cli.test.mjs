// The `autocontext` command of the installed package, run as a user runs it, on the bundled
// example conversation: the report, --json, --out, --store, and the errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate } from 'autocontext';
import { FsStore } from 'autocontext/stores/fs';
import { markers } from './helpers.mjs';

const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve('autocontext/package.json'));
const pkg = JSON.parse(await readFile(join(pkgDir, 'package.json'), 'utf8'));
const CLI = join(pkgDir, pkg.bin.autocontext);

/** The bundled example: named by the harness, or found beside the README or the sources. */
const EXAMPLE = [
  process.env.AUTOCONTEXT_EXAMPLE,
  process.env.AUTOCONTEXT_README && join(dirname(process.env.AUTOCONTEXT_README), 'examples', 'long-conversation.json'),
  fileURLToPath(new URL('../../examples/long-conversation.json', import.meta.url)),
].find((p) => p && existsSync(p));

/** Runs the CLI with `args`; resolves to { code, stdout, stderr } whatever the exit status. */
function cli(args, { input, cwd } = {}) {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { cwd, maxBuffer: 64 << 20, env: { ...process.env, NO_COLOR: '1' } }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin.end(input);
  });
}

async function tempDir() {
  return mkdtemp(join(tmpdir(), 'autocontext-cli-'));
}

const n = (s) => Number(s.replaceAll(',', ''));

test('the bundled example is there, long enough to need compression at 32k', async () => {
  assert.ok(EXAMPLE, 'examples/long-conversation.json not found (set AUTOCONTEXT_EXAMPLE)');
  const { messages } = JSON.parse(await readFile(EXAMPLE, 'utf8'));
  assert.ok(messages.length >= 150 && messages.length <= 250, `${messages.length} messages`);
  assert.equal(messages.filter((m) => m.role === 'user').length, 8);
  assert.ok(messages.some((m) => m.tool_calls?.length > 1), 'has parallel tool calls');
  assert.ok(messages.some((m) => m.role === 'tool' && m.content.length > 30_000), 'has a huge tool result');
  assert.deepEqual(validate(messages), []);
});

test('the bundled example is exactly what scripts/make-example.mjs generates', async (t) => {
  const script = join(dirname(EXAMPLE), '..', 'scripts', 'make-example.mjs');
  if (!existsSync(script)) {
    t.skip('generator not found beside the example');
    return;
  }
  const out = await new Promise((resolve) => {
    execFile(process.execPath, [script, '--check'], (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });
  assert.equal(out.code, 0, out.stderr);
});

test('the report says it compressed: tokens after < before, events, no turn over the window', async () => {
  const { code, stdout, stderr } = await cli(['compress', EXAMPLE, '--max-token', '32000']);
  assert.equal(code, 0, stderr);
  assert.equal(stderr, '');
  assert.doesNotMatch(stdout, /\x1b\[/, 'no colors when not a terminal');
  const before = /^\s+before\s+([\d,]+)\s+([\d,]+)/m.exec(stdout);
  const after = /^\s+after\s+([\d,]+)\s+([\d,]+)/m.exec(stdout);
  assert.ok(before && after, stdout);
  assert.ok(n(after[2]) < n(before[2]), `tokens ${after[2]} < ${before[2]}`);
  assert.ok(n(after[2]) < 24_000, 'under the target');
  assert.ok(n(after[1]) <= n(before[1]));
  assert.match(stdout, /window 32,000 · target 24,000/);
  assert.match(stdout, /TOOL_RESULT_TRUNCATE\s+\d+/);
  assert.match(stdout, /^\s+total\s+\d+\s+\d+\s+[\d,]+$/m);
  assert.match(stdout, /over the window\s+0 of \d+ model turns\s+without autocontext: [1-9]\d*/);
  assert.match(stdout, /offloads written\s+[1-9]\d*, holding/);
  assert.match(stdout, /in memory, gone at exit/);
});

test('--json: the same report as JSON, consistent with itself', async () => {
  const { code, stdout, stderr } = await cli(['compress', EXAMPLE, '--max-token', '32000', '--json']);
  assert.equal(code, 0, stderr);
  const r = JSON.parse(stdout);
  assert.equal(r.autocontext, pkg.version);
  assert.deepEqual(r.budget, { window: 32000, tokenRatio: 0.75, target: 24000 });
  assert.ok(r.after.tokens <= r.before.tokens && r.after.tokens < r.before.tokens);
  assert.ok(r.after.messages <= r.before.messages);
  assert.equal(r.after.underTarget, true);
  assert.ok(r.after.tokens < r.budget.target);
  assert.equal(r.saved.tokens, r.before.tokens - r.after.tokens);
  // Every token saved is accounted for by an event, and the counts add up.
  assert.ok(r.events.byType.length > 0);
  assert.equal(r.events.byType.reduce((a, e) => a + e.count, 0), r.events.count);
  assert.equal(r.events.byType.reduce((a, e) => a + e.tokensSaved, 0), r.events.tokensSaved);
  assert.equal(r.events.tokensSaved, r.saved.tokens);
  for (const e of r.events.byType) assert.ok(e.count > 0 && e.messages >= e.count, JSON.stringify(e));
  assert.equal(r.turns.user, 8);
  assert.equal(r.turns.overWindow, 0);
  assert.ok(r.turns.overWindowWithout > 0 && r.turns.overWindowWithout <= r.turns.model);
  assert.ok(r.largestRequest.tokens <= 32000 && r.largestRequest.tokensWithout > 32000);
  assert.equal(r.passes.checks, r.turns.model + 1);
  assert.ok(r.passes.compressed >= 1 && r.passes.compressed <= r.passes.checks);
  assert.equal(r.offloads.store, 'memory');
  assert.equal(r.offloads.directory, null);
  assert.equal(r.offloads.keys.length, r.offloads.count);
  assert.ok(r.offloads.count > 0 && r.offloads.bytes > 0);
  for (const k of r.offloads.keys) assert.ok(k.startsWith(`${r.offloads.sessionId}/`), k);
  assert.ok(r.timeMs.total >= r.timeMs.compression && r.timeMs.compression >= 0);
});

test('--out writes the compressed working messages, valid for the provider, in the input shape', async () => {
  const dir = await tempDir();
  try {
    const out = join(dir, 'compressed.json');
    const { code, stdout, stderr } = await cli(['compress', EXAMPLE, '--max-token', '32000', '--out', out, '--json']);
    assert.equal(code, 0, stderr);
    const r = JSON.parse(stdout);
    assert.equal(r.out, out);
    const written = JSON.parse(await readFile(out, 'utf8'));
    assert.ok(Array.isArray(written.messages), 'same shape as the input: { messages }');
    assert.equal(written.messages.length, r.after.messages);
    assert.deepEqual(validate(written.messages), []);
    assert.equal(written.messages[0].role, 'system');
    const original = JSON.parse(await readFile(EXAMPLE, 'utf8')).messages;
    assert.deepEqual(written.messages[0], original[0], 'the system prompt is untouched');
    assert.deepEqual(written.messages.at(-1), original.at(-1), 'the last answer is untouched');
    const named = written.messages.flatMap((m) => markers(JSON.stringify(m.content ?? '')));
    assert.ok(named.length > 0, 'offload markers in the working messages');
    for (const uuid of named) assert.ok(r.offloads.keys.includes(`${r.offloads.sessionId}/${uuid}`), uuid);

    // A plain array in, a plain array out; and the output reads back in.
    const arrayIn = join(dir, 'array.json');
    await writeFile(arrayIn, JSON.stringify(original));
    const again = await cli(['compress', arrayIn, '--max-token', '32000', '--out', join(dir, 'array-out.json')]);
    assert.equal(again.code, 0, again.stderr);
    assert.ok(Array.isArray(JSON.parse(await readFile(join(dir, 'array-out.json'), 'utf8'))));
    const reread = await cli(['compress', out, '--max-token', '32000', '--json']);
    assert.equal(reread.code, 0, reread.stderr);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('--store writes one file per offload that a fresh FsStore reads back', async () => {
  const dir = await tempDir();
  try {
    const storeDir = join(dir, 'offloads');
    const { code, stdout, stderr } = await cli(['compress', EXAMPLE, '--max-token', '32000', '--store', storeDir, '--json']);
    assert.equal(code, 0, stderr);
    const r = JSON.parse(stdout);
    assert.equal(r.offloads.store, 'fs');
    assert.equal(r.offloads.directory, storeDir);
    // Beside the offloads, the store holds the log of everything added, in chunks.
    const files = (await readdir(join(storeDir, r.offloads.sessionId))).filter((f) => !f.startsWith('log-'));
    assert.equal(files.length, r.offloads.count);
    const store = new FsStore(storeDir);
    assert.deepEqual((await store.keys()).filter((k) => !k.includes('/log-')), [...r.offloads.keys].sort());
    let bytes = 0;
    let messages = 0;
    for (const key of r.offloads.keys) {
      const value = await store.get(key);
      assert.equal(typeof value, 'string', key);
      bytes += Buffer.byteLength(value);
      const body = JSON.parse(value);
      assert.equal(`${body.sessionId}/${body.uuid}`, key);
      assert.ok(Array.isArray(body.messages) && body.messages.length > 0);
      messages += body.messages.length;
    }
    assert.equal(bytes, r.offloads.bytes);
    assert.equal(messages, r.offloads.messages);

    // The text report names the directory.
    const text = await cli(['compress', EXAMPLE, '--max-token', '32000', '--store', storeDir]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /→ .*offloads\/[0-9a-f-]{36}\//);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a conversation that fits reports no events and reads from stdin', async () => {
  const input = JSON.stringify([
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'hello' },
  ]);
  const { code, stdout, stderr } = await cli(['compress', '-', '--max-token', '32000', '--json'], { input });
  assert.equal(code, 0, stderr);
  const r = JSON.parse(stdout);
  assert.equal(r.events.count, 0);
  assert.equal(r.offloads.count, 0);
  assert.equal(r.after.tokens, r.before.tokens);
  assert.equal(r.turns.model, 1);
  const text = await cli(['compress', '-', '--max-token', '32000'], { input });
  assert.match(text.stdout, /events\s+none/);
});

test('--help and --version', async () => {
  const help = await cli(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /autocontext compress <conversation\.json \| dir> --max-token N/);
  assert.match(help.stdout, /autocontext replay <conversation\.json> --max-token N/);
  assert.match(help.stdout, /autocontext reload <uuid> --store DIR/);
  for (const flag of ['--store DIR', '--summarizer S', '--model NAME', '--format F', '--preset NAME', '--out PATH', '--json']) {
    assert.ok(help.stdout.includes(flag), flag);
  }
  const version = await cli(['--version']);
  assert.equal(version.code, 0);
  assert.equal(version.stdout.trim(), pkg.version);
});

test('usage errors: one line on stderr, exit status 2', async () => {
  const cases = [
    [[], /missing command/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['compress'], /missing the conversation file/],
    [['compress', EXAMPLE], /--max-token N is required/],
    [['compress', EXAMPLE, '--max-token', 'abc'], /--max-token must be a whole number of tokens, got "abc"/],
    [['compress', EXAMPLE, '--max-token', '0'], /--max-token must be from 1 to/],
    [['compress', EXAMPLE, '--max-token', '1.5'], /--max-token must be a whole number/],
    [['compress', EXAMPLE, '--max-token', '-5'], /--max-token needs a value/],
    [['compress', EXAMPLE, '--max-token'], /--max-token needs a value/],
    [['compress', EXAMPLE, '--max-token', '32000', '--ratio', '1.5'], /--ratio must be a number above 0 and at most 1/],
    [['compress', EXAMPLE, '--max-token', '32000', '--ratio', 'x'], /--ratio/],
    [['compress', EXAMPLE, '--max-token', '32000', '--bogus'], /unknown option --bogus/],
    [['compress', EXAMPLE, '--max-token', '32000', '--json=yes'], /--json takes no value/],
    [['compress', EXAMPLE, EXAMPLE, '--max-token', '32000'], /one file or directory at a time/],
    [['replay', EXAMPLE, '--max-token', '32000', '--out', 'x.json'], /replay: --out is not one of its options/],
    [['replay'], /replay: missing the conversation file/],
    [['reload'], /reload: missing the offload uuid/],
    [['reload', '0b5e3a5c-1111-4222-8333-944455556666'], /reload: --store DIR is required/],
    [['reload', 'not-a-uuid', '--store', '.'], /"not-a-uuid" is not an offload uuid/],
    [['reload', '0b5e3a5c-1111-4222-8333-944455556666', '--store', '.', '--max-token', '9'], /reload: --max-token is not one of its options/],
    [['compress', EXAMPLE, '--max-token', '32000', '--format', 'xml'], /--format must be openai, anthropic, ai-sdk, openai-responses, gemini; got "xml"/],
    [['compress', EXAMPLE, '--max-token', '32000', '--summarizer', 'gpt'], /--summarizer must be offline, openai, none; got "gpt"/],
    [['compress', EXAMPLE, '--max-token', '32000', '--model', 'm'], /--model is for --summarizer openai/],
    [['compress', EXAMPLE, '--max-token', '32000', '--preset', ''], /--preset needs a name/],
  ];
  const results = await Promise.all(cases.map(([args]) => cli(args)));
  for (const [i, [args, message]] of cases.entries()) {
    const { code, stdout, stderr } = results[i];
    assert.equal(code, 2, `${args.join(' ')}: ${stderr}`);
    assert.equal(stdout, '');
    assert.match(stderr, message);
    assert.match(stderr, /^autocontext: [^\n]+\n$/, `one line: ${JSON.stringify(stderr)}`);
  }
});

test('input errors: missing file, bad JSON with line and column, not a conversation, engine errors; exit 1', async () => {
  const dir = await tempDir();
  try {
    const write = async (name, text) => {
      const p = join(dir, name);
      await writeFile(p, text);
      return p;
    };
    const missing = join(dir, 'nope.json');
    const badJson = await write('bad.json', '{\n  "messages": [\n    {"role": "user" "content": "hi"}\n  ]\n}\n');
    const trailing = await write('trailing.json', '[\n  {"role": "user", "content": "hi"},\n]\n');
    const truncated = await write('truncated.json', '{"messages": [{"role": "user", "content": "hi"}');
    const notConv = await write('config.json', '{"model": "gpt-4o", "temperature": 0.2}');
    const empty = await write('empty.json', '[]');
    const notObjects = await write('strings.json', '["hello", "world"]');
    const badRole = await write('robot.json', '[{"role": "robot", "content": "beep"}]');
    const orphan = await write('orphan.json', '[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "x"}]');
    const cases = [
      [missing, /cannot read .*nope\.json: no such file/],
      [badJson, /bad\.json:3:21: invalid JSON: expected ',' or '}' after a property value/],
      [trailing, /trailing\.json:3:1: invalid JSON: trailing comma before '\]'/],
      [truncated, /truncated\.json:1:48: invalid JSON: expected ',' or '\]'/],
      [notConv, /not a conversation: .*got an object with "model", "temperature"/],
      [empty, /the conversation has no messages/],
      [notObjects, /message 0 is a string, not an object/],
      [badRole, /INVALID_MESSAGE: message 0, field `role`: unknown role "robot"/],
      [orphan, /INVALID_MESSAGE: message 1/],
    ];
    const results = await Promise.all(cases.map(([file]) => cli(['compress', file, '--max-token', '32000'])));
    for (const [i, [file, message]] of cases.entries()) {
      const { code, stdout, stderr } = results[i];
      assert.equal(code, 1, `${file}: ${stderr}`);
      assert.equal(stdout, '');
      assert.match(stderr, message);
      assert.match(stderr, /^autocontext: [^\n]+\n$/, `one line: ${JSON.stringify(stderr)}`);
    }
    // --out into a directory that does not exist is a runtime error too.
    const { code, stderr } = await cli(['compress', EXAMPLE, '--max-token', '32000', '--out', join(dir, 'no', 'such', 'out.json')]);
    assert.equal(code, 1);
    assert.match(stderr, /cannot write .*out\.json: no such file/);
    assert.equal(await stat(join(dir, 'no')).then(() => true, () => false), false);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the installed bin runs directly (shebang and executable bit)', async (t) => {
  const bin = join(pkgDir, '..', '.bin', 'autocontext');
  if (!existsSync(bin)) {
    t.skip('not run from an installed package');
    return;
  }
  const out = await new Promise((resolve) => {
    execFile(bin, ['--version'], (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });
  assert.equal(out.code, 0, out.stderr);
  assert.equal(out.stdout.trim(), pkg.version);
});

/** The shared corpus of agent traces: the folder AUTOCONTEXT_CORPUS names, or `../shared/corpus` beside the repository. */
const corpus = [
  process.env.AUTOCONTEXT_CORPUS,
  process.env.AUTOCONTEXT_README && join(dirname(process.env.AUTOCONTEXT_README), '..', 'shared', 'corpus'),
  fileURLToPath(new URL('../../../shared/corpus', import.meta.url)),
].find((p) => p && existsSync(p));

test('the identifier index `compress --out` writes for corpus traces lists no escape and nothing without a letter or digit', async (t) => {
  if (corpus === undefined) {
    // CI has the corpus beside the repository: there a test that reads nothing must not pass.
    assert.notEqual(process.env.CI, 'true', 'CI must have the shared corpus');
    return t.skip('the shared corpus is not there (AUTOCONTEXT_CORPUS names its folder)');
  }
  const dir = await tempDir();
  try {
    // Tool-call arguments read as raw JSON text listed `sys\nsys.path.insert`, `\n\nprint` and
    // `f:\n` (41 of 66 items of the first trace), `do\n` and `end\n\n` (8 of 148 of the second).
    for (const name of ['mini-swe-agent-deepseek-django-11910', 'claude-code-spotter-fa812bfe']) {
      const out = join(dir, `${name}.json`);
      const r = await cli(['compress', join(corpus, `${name}.json`), '--max-token', '32000', '--out', out]);
      assert.equal(r.code, 0, r.stderr);
      const written = JSON.parse(await readFile(out, 'utf8'));
      const opening = '[Identifiers in what was offloaded: ';
      const texts = (m) => (typeof m.content === 'string' ? [m.content] : Array.isArray(m.content) ? m.content.map((p) => p.text ?? '') : []);
      const items = written.messages
        .flatMap(texts)
        .flatMap((t) => t.split('\n'))
        .filter((l) => l.startsWith(opening) && l.endsWith(']'))
        .flatMap((l) => l.slice(opening.length, -1).split(', '));
      assert.ok(items.length >= 20, `${name}: ${items.length} items`);
      const bad = items.filter((w) => !/[\p{L}\p{N}]/u.test(w) || /\\(?:[ntr"u]|$)/.test(w));
      assert.deepEqual(bad, [], `${name}: ${bad.length} of ${items.length} items are escapes or hold one`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
