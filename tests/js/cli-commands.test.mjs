// The `replay` and `reload` commands and `compress` over a directory, run as a user runs them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FsStore } from 'autocontext/stores/fs';
import { markers } from './helpers.mjs';
import { cli, EXAMPLE, pkgDir, tempDir } from './cli-helpers.mjs';

test('replay: a token curve with every compression marked, under the window at every call', async () => {
  const [text, json] = await Promise.all([
    cli(['replay', EXAMPLE, '--max-token', '32000']),
    cli(['replay', EXAMPLE, '--max-token', '32000', '--json']),
  ]);
  assert.equal(json.code, 0, json.stderr);
  const r = JSON.parse(json.stdout);
  assert.equal(r.calls.length, r.turns.model + 1, 'every model call and the next one');
  assert.deepEqual(r.calls.map((c) => c.call), r.calls.map((_, i) => i + 1));
  for (const c of r.calls) {
    assert.ok(c.tokens <= 32_000, `call ${c.call} sent ${c.tokens}`);
    assert.ok(c.tokens <= c.tokensWithout);
    if (c.compressed) assert.ok(c.tokens < c.tokensBeforePass && c.events.length > 0, JSON.stringify(c));
    else assert.equal(c.tokens, c.tokensBeforePass);
  }
  const compressed = r.calls.filter((c) => c.compressed);
  assert.ok(compressed.length >= 3);
  assert.ok(r.calls.some((c) => c.tokensWithout > 32_000), 'without autocontext it overflows');

  assert.equal(text.code, 0, text.stderr);
  const out = text.stdout;
  assert.match(out, /^autocontext \S+ · replay .*long-conversation\.json$/m);
  assert.match(out, /tokens sent per model call \(69: the conversation's 68 and the next\)/);
  assert.match(out, /^ +32k ┼[┄░█▁-▇ ]+ {2}window$/m, 'the window line');
  assert.match(out, /^ +0 └─+$/m, 'the axis');
  // One ▲ under each compressed call (one column per call at this width).
  const marks = out.split('\n').find((l) => /^ +[▲ ]+$/.test(l) && l.includes('▲'));
  assert.equal([...marks].filter((ch) => ch === '▲').length, compressed.length);
  const listed = out.split('\n').filter((l) => /^ {4}▲ call +\d+ \(message +\d+\) +[\d,]+ → +[\d,]+ tokens +[A-Z_]/.test(l));
  assert.equal(listed.length, compressed.length);
  assert.match(out, /over the window\s+0 of 68 model turns\s+without autocontext: [1-9]\d*/);
});

test('reload: prints the originals of an offload, byte-exact as JSON, found by uuid or by marker', async () => {
  const dir = await tempDir();
  try {
    const store = join(dir, 'offloads');
    const out = join(dir, 'compressed.json');
    const run = await cli(['compress', EXAMPLE, '--max-token', '32000', '--store', store, '--out', out, '--json']);
    assert.equal(run.code, 0, run.stderr);
    const r = JSON.parse(run.stdout);
    const working = JSON.parse(await readFile(out, 'utf8')).messages;
    const uuid = working.flatMap((m) => markers(JSON.stringify(m.content ?? '')))[0];
    assert.ok(uuid, 'a marker in the compressed messages');
    const body = JSON.parse(await new FsStore(store).get(`${r.offloads.sessionId}/${uuid}`));

    const [json, text, byMarker] = await Promise.all([
      cli(['reload', uuid, '--store', store, '--json']),
      cli(['reload', uuid, '--store', store]),
      cli(['reload', `<!-- CONTEXT_OFFLOAD: uuid=${uuid} -->`, '--store', store, '--json']),
    ]);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), body.messages);
    assert.equal(byMarker.stdout, json.stdout);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^autocontext reload ${uuid}\\n`));
    assert.match(text.stdout, new RegExp(`${body.messages.length} original messages? \\(openai\\) · session ${r.offloads.sessionId}`));
    for (const [i, m] of body.messages.entries()) assert.match(text.stdout, new RegExp(`── ${i + 1} · ${m.role}`));
    const firstText = body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).find((t) => t.length > 0);
    if (firstText) assert.ok(text.stdout.includes(firstText), 'the original text, whole');

    const missing = await cli(['reload', '0b5e3a5c-1111-4222-8333-944455556666', '--store', store]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^autocontext: no offload 0b5e3a5c-1111-4222-8333-944455556666 under /);
    const noDir = await cli(['reload', uuid, '--store', join(dir, 'nope')]);
    assert.equal(noDir.code, 1);
    assert.match(noDir.stderr, /cannot read .*nope: no such file/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('compress <dir>: one row per conversation, totals, failures named, --out mirrors the tree; exit 1 when one fails', async () => {
  const dir = await tempDir();
  try {
    const input = join(dir, 'in');
    await mkdir(join(input, 'nested'), { recursive: true });
    await copyFile(EXAMPLE, join(input, 'long.json'));
    await writeFile(join(input, 'nested', 'short.json'), JSON.stringify([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }]));
    await writeFile(join(input, 'notes.txt'), 'not a conversation, not read');
    const [text, json] = await Promise.all([
      cli(['compress', input, '--max-token', '32000']),
      cli(['compress', input, '--max-token', '32000', '--json', '--out', join(dir, 'out')]),
    ]);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stderr, '', 'no progress bar off the terminal');
    assert.match(text.stdout, /· compress .*in \(2 conversations\)/);
    assert.match(text.stdout, /^ {2}file\s+messages\s+tokens before\s+after\s+saved\s+events\s+over window$/m);
    assert.match(text.stdout, /long\.json\s+158\s+91,456\s+[\d,]+\s+[\d.]+%\s+\d+\s+0 \(\d+\)$/m);
    assert.match(text.stdout, /short\.json\s+2\s+\d+\s+\d+\s+0\.0%\s+0\s+0 \(0\)$/m);
    assert.match(text.stdout, /^ {2}total\s+160\s+/m);

    assert.equal(json.code, 0, json.stderr);
    const r = JSON.parse(json.stdout);
    assert.equal(r.files.length, 2);
    assert.equal(r.totals.files, 2);
    assert.equal(r.totals.failed, 0);
    assert.equal(r.totals.before.messages, 160);
    assert.equal(r.totals.after.tokens, r.files.reduce((a, f) => a + f.after.tokens, 0));
    assert.equal(r.summarizer.calls, r.files.reduce((a, f) => a + f.summarizer.calls, 0));
    assert.deepEqual((await readdir(join(dir, 'out'), { recursive: true })).sort(), ['long.json', 'nested', join('nested', 'short.json')]);
    const short = JSON.parse(await readFile(join(dir, 'out', 'nested', 'short.json'), 'utf8'));
    assert.deepEqual(short, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }]);

    // A broken file is named, the others still run, the exit status says something failed.
    await writeFile(join(input, 'broken.json'), '{"messages": [\n  {"role": "user",}\n]}');
    const broken = await cli(['compress', input, '--max-token', '32000']);
    assert.equal(broken.code, 1);
    assert.match(broken.stdout, /broken\.json\s+failed$/m);
    assert.match(broken.stdout, /^ {2}failed .*broken\.json: .*broken\.json:2:19: invalid JSON: trailing comma before '\}'$/m);
    assert.match(broken.stdout, /long\.json\s+158\s+91,456/);

    const empty = join(dir, 'empty');
    await mkdir(empty);
    const none = await cli(['compress', empty, '--max-token', '32000']);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no \*\.json conversation files in it/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('formats: detected from the messages, or named; an unknown one or one the engine cannot read is said plainly', async () => {
  const dir = await tempDir();
  try {
    const anthropic = join(dir, 'anthropic.json');
    await writeFile(
      anthropic,
      JSON.stringify({
        model: 'claude',
        system: 'You are terse.',
        messages: [
          { role: 'user', content: 'List the files.' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'ls', input: { path: '.' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt\nb.txt' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'Two files.' }] },
        ],
      }),
    );
    const r = await cli(['compress', anthropic, '--max-token', '32000', '--json']);
    if (r.code === 0) {
      const report = JSON.parse(r.stdout);
      assert.equal(report.format, 'anthropic');
      assert.equal(report.formatFrom, 'detected');
      assert.equal(report.turns.user, 1, 'a user message of tool results is no user turn');
    } else {
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /looks like the anthropic format, which this version cannot read/);
    }
    // Named explicitly, the format is taken as given.
    const forced = await cli(['compress', anthropic, '--max-token', '32000', '--format', 'openai', '--json']);
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual([JSON.parse(forced.stdout).format, JSON.parse(forced.stdout).formatFrom], ['openai', 'option']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the progress bar draws in place on a terminal, and nothing elsewhere', async () => {
  const { Progress } = await import(join(pkgDir, 'dist', 'cli', 'progress.js'));
  const written = [];
  const tty = { isTTY: true, columns: 80, write: (s) => written.push(s) };
  const bar = new Progress(tty, 4);
  bar.update(1, 0.5, 'traces/b.json', true);
  bar.update(1, 0.6, 'traces/b.json'); // within 50 ms of the last draw: skipped
  bar.update(3, 1, 'traces/d.json', true);
  bar.clear();
  assert.equal(written.length, 3);
  assert.match(written[0], /^\r\x1b\[2K {2}▕█+[▏▎▍▌▋▊▉]? *▏ {2}38% {2}2\/4 {2}traces\/b\.json$/);
  assert.match(written[1], /^\r\x1b\[2K {2}▕█{28}▏ 100% {2}4\/4 {2}traces\/d\.json$/);
  assert.equal(written[2], '\r\x1b[2K');
  const pipe = { isTTY: false, write: () => assert.fail('no drawing off the terminal') };
  const quiet = new Progress(pipe, 4);
  quiet.update(0, 0, 'x', true);
  quiet.clear();
});

test('presets: --preset picks a ladder, --concept feeds the facts step, wrong ones are usage errors', async () => {
  const [prefix, facts, noConcept, bogus] = await Promise.all([
    cli(['compress', EXAMPLE, '--max-token', '32000', '--preset', 'prefix-summary', '--json']),
    cli(['compress', EXAMPLE, '--max-token', '32000', '--preset', 'facts', '--concept', 'discount', '--json']),
    cli(['compress', EXAMPLE, '--max-token', '32000', '--preset', 'facts']),
    cli(['compress', EXAMPLE, '--max-token', '32000', '--preset', 'bogus']),
  ]);
  for (const [name, r, step] of [['prefix-summary', prefix, 'PREFIX_SUMMARY'], ['facts', facts, 'FACT_RETRIEVAL']]) {
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.equal(report.preset, name);
    assert.ok(report.events.byType.some((e) => e.type === step), `${name}: ${report.events.byType.map((e) => e.type)}`);
    assert.equal(report.summarizer.failed, 0, `${name}: the offline answers are all accepted`);
    assert.equal(report.turns.overWindow, 0);
  }
  assert.equal(noConcept.code, 2);
  assert.match(noConcept.stderr, /concepts.*\(give each with --concept KEYWORD\)/);
  assert.equal(bogus.code, 2);
  assert.match(bogus.stderr, /--preset bogus: option `preset` must be one of "agentscope", "prefix-summary", "facts", "turns"/);
});
