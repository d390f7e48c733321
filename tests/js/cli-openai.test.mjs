// `--summarizer openai` against a fake OpenAI-compatible server on 127.0.0.1 (never the real
// network): the requests it sends, the usage it reports, and the errors when the endpoint is
// unreachable, refuses the key or fails.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { cli, EXAMPLE } from './cli-helpers.mjs';

/** What the fake server answers: set per test. */
let mode = 'ok';
const requests = [];
let server;
let base;

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const json = (status, value) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return json(404, { error: { message: `no route ${req.url}` } });
      requests.push({ headers: req.headers, body: JSON.parse(body) });
      if (req.headers.authorization !== 'Bearer sk-fake') return json(401, { error: { message: 'Incorrect API key provided' } });
      if (mode === 'fail') return json(500, { error: { message: 'the model is overloaded' } });
      if (mode === 'not-chat') return json(200, { hello: 'world' });
      const { messages } = JSON.parse(body);
      return json(200, {
        id: 'chatcmpl-1',
        choices: [{ index: 0, message: { role: 'assistant', content: `Summary: the agent read files and ran tests (${messages[1].content.length} chars in).` } }],
        usage: { prompt_tokens: 1000, completion_tokens: 25 },
      });
    });
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}/v1`;
});

after(() => new Promise((ok) => server.close(ok)));

const env = (extra = {}) => ({ OPENAI_BASE_URL: base, OPENAI_API_KEY: 'sk-fake', ...extra });
const args = ['compress', EXAMPLE, '--max-token', '32000', '--summarizer', 'openai', '--model', 'fake-model'];

test('openai: each summary is one chat completion; the report counts the calls and the usage they reported', async () => {
  mode = 'ok';
  requests.length = 0;
  const { code, stdout, stderr } = await cli([...args, '--json'], { env: env() });
  assert.equal(code, 0, stderr);
  const r = JSON.parse(stdout);
  assert.ok(requests.length > 0);
  assert.equal(r.summarizer.name, 'openai');
  assert.equal(r.summarizer.model, 'fake-model');
  assert.equal(r.summarizer.baseURL, base);
  assert.equal(r.summarizer.calls, requests.length);
  assert.equal(r.summarizer.inputTokens, 1000 * requests.length);
  assert.equal(r.summarizer.outputTokens, 25 * requests.length);
  assert.equal(r.summarizer.usage, 'reported');
  assert.equal(r.summarizer.failed, 0);
  for (const { headers, body } of requests) {
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(body.model, 'fake-model');
    assert.deepEqual(body.messages.map((m) => m.role), ['system', 'user']);
    assert.match(body.messages[1].content, /^<conversation>\n[\s\S]*<\/conversation>/);
  }
  assert.equal(r.after.underTarget, true);
  assert.equal(r.turns.overWindow, 0);

  const text = await cli(args, { env: env() });
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`summarizer +openai fake-model at ${base.replaceAll('.', '\\.')}: \\d+ calls · read [\\d,]+ · wrote [\\d,]+ tokens$`, 'm'));
});

test('openai: a server error is counted, and the engine falls back to a step without a model', async () => {
  mode = 'fail';
  const { code, stdout, stderr } = await cli([...args, '--json'], { env: env() });
  assert.equal(code, 0, stderr);
  const r = JSON.parse(stdout);
  assert.ok(r.summarizer.calls > 0);
  assert.equal(r.summarizer.errors, r.summarizer.calls);
  assert.equal(r.summarizer.failed, r.summarizer.calls);
  assert.ok(r.after.tokens < r.budget.target, 'compressed without the summaries');
  // Without the rollup's summary the list stays at msgThreshold messages or more, and says so.
  if (!r.after.underTarget) assert.match(r.reason, /msgThreshold \(100\): the summary that rolls older rounds up failed/);
  const text = await cli(args, { env: env() });
  assert.match(text.stdout, /\d+ failed \(fell back to offload\)/);
});

test('openai: unusable endpoints stop the run with one line that says what to fix (exit 1)', async () => {
  // A port nothing listens on: open one, note it, close it.
  const closed = createServer();
  await new Promise((ok) => closed.listen(0, '127.0.0.1', ok));
  const port = closed.address().port;
  await new Promise((ok) => closed.close(ok));
  mode = 'ok';
  const cases = [
    [env({ OPENAI_API_KEY: 'sk-wrong' }), /answered 401 Unauthorized: Incorrect API key provided \(check the API key: OPENAI_API_KEY\)/],
    [env({ OPENAI_BASE_URL: `${base}/nested` }), /answered 404 Not Found: no route \/v1\/nested\/chat\/completions \(check OPENAI_BASE_URL/],
    [env({ OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` }), new RegExp(`cannot reach the summarizer at http://127\\.0\\.0\\.1:${port}/v1/chat/completions: connection refused`)],
  ];
  const results = await Promise.all(cases.map(([e]) => cli(args, { env: e })));
  for (const [i, [, message]] of cases.entries()) {
    const { code, stdout, stderr } = results[i];
    assert.equal(code, 1, stderr);
    assert.equal(stdout, '');
    assert.match(stderr, message);
    assert.match(stderr, /^autocontext: [^\n]+\n$/);
  }
  mode = 'not-chat';
  const notChat = await cli(args, { env: env() });
  assert.equal(notChat.code, 1);
  assert.match(notChat.stderr, /answered without choices\[0\]\.message\.content \(is this a chat-completions endpoint\?\)/);
});

test('openai: a model is required, and the base URL must be http(s) (exit 2)', async () => {
  const noModel = await cli(['compress', EXAMPLE, '--max-token', '32000', '--summarizer', 'openai'], { env: env() });
  assert.equal(noModel.code, 2);
  assert.match(noModel.stderr, /--summarizer openai needs a model: --model NAME \(or OPENAI_MODEL\)/);
  const fromEnv = await cli(['compress', '-', '--max-token', '32000', '--summarizer', 'openai', '--json'], {
    env: env({ OPENAI_MODEL: 'env-model' }),
    input: JSON.stringify([{ role: 'user', content: 'hi' }]),
  });
  assert.equal(fromEnv.code, 0, fromEnv.stderr);
  assert.equal(JSON.parse(fromEnv.stdout).summarizer.model, 'env-model');
  const badURL = await cli(args, { env: env({ OPENAI_BASE_URL: 'localhost:1234' }) });
  assert.equal(badURL.code, 2);
  assert.match(badURL.stderr, /OPENAI_BASE_URL must be an http\(s\) URL/);
});
