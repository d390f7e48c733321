// Diagnostics pushed to the host as they happen: onEvent (every pass and change, every failed
// summarize and store call, refused usage reports), the logger and its levels, the
// AUTOCONTEXT_LOG switch, and a callback that throws.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoContextMemory, compress } from 'autocontext';
import { round, rejected, thrown } from './helpers.mjs';

// Two earlier rounds only a summary can shrink, both open to it (as in summarize.test.mjs).
const OPTIONS = {
  maxToken: 2000,
  minCompressionTokenThreshold: 200,
  minConsecutiveToolMessages: 1000,
  protectLastRound: false,
  protectLatestAnswer: false,
  sessionId: 'diag',
};
const CONVERSATION = () => [...round(1), ...round(2), { role: 'user', content: 'Now compare them.' }];

/** What an SDK throws for a bad key (shaped as the openai SDK's AuthenticationError). */
class AuthenticationError extends Error {
  constructor() {
    super('401 Incorrect API key provided');
    this.status = 401;
  }
}

/** A console-like logger that records what it is told. */
function recordingLogger() {
  const lines = [];
  const logger = {};
  for (const level of ['debug', 'info', 'warn', 'error']) logger[level] = (message, detail) => lines.push({ level, message, detail });
  return { lines, logger };
}

/** Runs `fn` with AUTOCONTEXT_LOG set to `value` (or unset), restoring it after. */
async function withEnv(value, fn) {
  const saved = process.env.AUTOCONTEXT_LOG;
  if (value === undefined) delete process.env.AUTOCONTEXT_LOG;
  else process.env.AUTOCONTEXT_LOG = value;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env.AUTOCONTEXT_LOG;
    else process.env.AUTOCONTEXT_LOG = saved;
  }
}

test('a summarizer failing with 401 on every call is reported as each call fails, its error as the cause', async () => {
  const thrownErrors = [];
  const summarize = async () => {
    await new Promise((r) => setTimeout(r, 5));
    const e = new AuthenticationError();
    thrownErrors.push(e);
    throw e;
  };
  const events = [];
  let settled = false;
  const memory = new AutoContextMemory({ ...OPTIONS, summarize, onEvent: (e) => events.push({ ...e, settled }) });
  memory.add(CONVERSATION());
  const result = await memory.compressIfNeeded().finally(() => (settled = true));

  const failed = events.filter((e) => e.type === 'summarize-failed');
  assert.ok(thrownErrors.length >= 2, `${thrownErrors.length} calls`);
  assert.equal(failed.length, thrownErrors.length, 'one event per failed call');
  for (const [k, e] of failed.entries()) {
    assert.equal(e.settled, false, 'sent while the pass ran, not after');
    assert.equal(e.sessionId, 'diag');
    assert.equal(e.level, 'warn');
    assert.equal(e.kind, 'round');
    assert.equal(e.error.code, 'SUMMARIZE_FAILED');
    assert.equal(e.error.cause, thrownErrors[k], 'the host error passes through as the cause');
    assert.match(e.message, /401 Incorrect API key/);
  }
  // The pass went on without the summaries and says what it did.
  assert.equal(result.errors.length, thrownErrors.length);
  const pass = events.find((e) => e.type === 'pass');
  assert.ok(pass, `events: ${events.map((e) => e.type)}`);
  assert.equal(pass.tokensBefore, result.tokensBefore);
  assert.equal(pass.tokensAfter, result.tokensAfter);
  const changes = events.filter((e) => e.type === 'compression');
  assert.deepStrictEqual(changes.map((e) => e.event), result.events.filter((e) => e.type !== 'SUMMARIZE_FAILED'));
  assert.ok(changes.every((e) => e.level === 'debug' && e.message.startsWith(e.event.type)));
});

test('logging is silent by default; AUTOCONTEXT_LOG and logLevel turn it on, at their level', async () => {
  const failing = async () => {
    throw new AuthenticationError();
  };
  const run = async (options) => {
    const memory = new AutoContextMemory({ ...OPTIONS, summarize: failing, ...options });
    memory.add(CONVERSATION());
    await memory.compressIfNeeded();
  };
  // Nothing reaches the console unless asked: count what it is told while the passes run.
  const told = [];
  const saved = {};
  for (const level of ['debug', 'info', 'warn', 'error', 'log']) {
    saved[level] = console[level];
    console[level] = (...args) => told.push({ level, args });
  }
  try {
    await withEnv(undefined, () => run({}));
    assert.deepStrictEqual(told, [], 'silent by default');
    await withEnv('off', () => run({ logger: console }));
    assert.deepStrictEqual(told, [], "AUTOCONTEXT_LOG=off silences even a given logger");
    await withEnv('warn', () => run({}));
    assert.ok(told.length > 0 && told.every((t) => t.level === 'warn'), JSON.stringify(told.map((t) => t.level)));
    assert.ok(told.some((t) => /401 Incorrect API key/.test(t.args[0])), 'the 401 is visible');
    assert.ok(told.every((t) => t.args[0].startsWith('autocontext [diag] ')));
    told.length = 0;
    await withEnv('info', () => run({}));
    assert.ok(told.some((t) => t.level === 'info' && /^autocontext \[diag\] pass: /.test(t.args[0])));
    assert.ok(!told.some((t) => t.level === 'debug'));
    told.length = 0;
    await withEnv('debug', () => run({ logLevel: 'error' }));
    assert.deepStrictEqual(told, [], 'the option wins over the environment');
    await withEnv('bogus', () => run({}));
    assert.deepStrictEqual(told, [], 'an unknown AUTOCONTEXT_LOG is off');
  } finally {
    Object.assign(console, saved);
  }

  // A logger of one's own gets warn and above by default, every level with logLevel: 'debug'.
  const mine = recordingLogger();
  await withEnv(undefined, () => run({ logger: mine.logger }));
  assert.ok(mine.lines.length > 0 && mine.lines.every((l) => l.level === 'warn'));
  assert.equal(mine.lines[0].detail.type, 'summarize-failed', 'the event rides along');
  const all = recordingLogger();
  await withEnv(undefined, () => run({ logger: all.logger, logLevel: 'debug' }));
  assert.deepStrictEqual([...new Set(all.lines.map((l) => l.level))].sort(), ['debug', 'info', 'warn']);
  // A logger with only some methods drops the other levels.
  const partial = [];
  await withEnv(undefined, () => run({ logger: { info: (m) => partial.push(m) }, logLevel: 'debug' }));
  assert.ok(partial.some((m) => m.includes('pass:')));
});

test('a throwing or rejecting onEvent never breaks a pass', async () => {
  const { lines, logger } = recordingLogger();
  for (const onEvent of [
    () => {
      throw new Error('listener bug');
    },
    async () => {
      throw new Error('async listener bug');
    },
  ]) {
    lines.length = 0;
    const memory = new AutoContextMemory({ ...OPTIONS, summarize: () => 'SUMMARY', onEvent, logger });
    memory.add(CONVERSATION());
    const result = await memory.compressIfNeeded();
    assert.equal(result.compressed, true);
    assert.equal(result.underTarget, true);
    await new Promise((r) => setTimeout(r, 0));
    assert.ok(lines.some((l) => l.level === 'error' && /onEvent threw/.test(l.message) && /listener bug/.test(l.detail.message)));
  }
});

test('a failing store is reported as it fails, with its error as the cause', async () => {
  const boom = new Error('quota exceeded');
  const store = { get: async () => null, put: async () => Promise.reject(boom), delete: async () => {} };
  const events = [];
  const memory = new AutoContextMemory({ maxToken: 4000, toolResultLimit: 2000, sessionId: 'st', store, onEvent: (e) => events.push(e) });
  memory.add([
    { role: 'user', content: 'Read the log.' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'l1', type: 'function', function: { name: 'read_log', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'l1', content: 'line\n'.repeat(6000) },
  ]);
  const e = await rejected(memory.compressIfNeeded());
  assert.equal(e.code, 'STORE_FAILED');
  const failed = events.filter((x) => x.type === 'store-failed');
  assert.equal(failed.length, 1);
  assert.equal(failed[0].operation, 'put');
  assert.match(failed[0].key, /^st\/[0-9a-f-]{36}$/);
  assert.equal(failed[0].level, 'error');
  assert.equal(failed[0].error.code, 'STORE_FAILED');
  assert.equal(failed[0].error.cause, boom);
  assert.match(failed[0].message, /quota exceeded/);

  // compress() takes the same options.
  const seen = [];
  await assert.rejects(compress((await memory.originalMessages()), { maxToken: 4000, toolResultLimit: 2000, store, onEvent: (x) => seen.push(x.type) }), { code: 'STORE_FAILED' });
  assert.deepStrictEqual(seen, ['store-failed']);
});

test('observeUsage refuses an implausible report and clamps a far-off one, and says so', () => {
  const events = [];
  const memory = new AutoContextMemory({ maxToken: 16_000, onEvent: (e) => events.push(e) });
  for (let k = 1; k <= 2; k++) memory.add(round(k, { resultChars: 4000 }));
  const estimated = memory.tokenCount();
  const before = memory.needsCompression();
  // 100 prompt tokens for a request of thousands: once this raised the trigger to 47,976.
  const refused = memory.observeUsage({ prompt_tokens: 100, completion_tokens: 20 });
  assert.equal(refused.status, 'refused');
  assert.equal(refused.correction, 1);
  assert.equal(refused.triggerTokens, 12_000, 'the trigger did not move');
  assert.match(refused.warning, /less than half/);
  assert.equal(memory.needsCompression(), before);
  assert.deepStrictEqual(events.map((e) => [e.type, e.level]), [['usage-refused', 'warn']]);
  assert.equal(events[0].report.promptTokens, 100);

  const clamped = memory.observeUsage({ promptTokens: Math.round(estimated * 0.6) });
  assert.equal(clamped.status, 'clamped');
  assert.ok(clamped.triggerTokens <= 16_000, `${clamped.triggerTokens}: never past the window`);
  assert.equal(events.at(-1).type, 'usage-clamped');
  const fine = memory.observeUsage({ promptTokens: Math.round(estimated * 1.1) });
  assert.equal(fine.status, 'accepted');
  assert.equal(fine.warning, undefined);
  assert.equal(events.length, 2, 'an accepted report sends nothing');
});

test('the diagnostics options are checked', () => {
  for (const [options, field] of [
    [{ onEvent: 'yes' }, 'onEvent'],
    [{ logLevel: 'verbose' }, 'logLevel'],
    [{ logger: 'console' }, 'logger'],
  ]) {
    const e = thrown(() => new AutoContextMemory(options));
    assert.equal(e.code, 'INVALID_CONFIG', field);
    assert.equal(e.field, field);
  }
  const memory = new AutoContextMemory({ logLevel: 'off', logger: console, onEvent: () => {} });
  const back = AutoContextMemory.fromJSON(memory.toJSON(), { onEvent: () => {} });
  assert.equal(back.sessionId, memory.sessionId);
  assert.equal(thrown(() => AutoContextMemory.fromJSON(memory.toJSON(), { logLevel: 3 })).field, 'logLevel');
});
