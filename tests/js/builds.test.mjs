// The three builds of the package, picked by import: `autocontext` (o200k_base), `autocontext/full`
// (o200k_base and cl100k_base) and `autocontext/lite` (no vocabulary, the estimator). Each counts
// exactly with what it carries, refuses what it lacks with an INVALID_CONFIG error naming the
// import that has it, and keeps its own engine instance when several are imported together.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as base from 'autocontext';
import * as full from 'autocontext/full';
import * as lite from 'autocontext/lite';
import { thrown } from './helpers.mjs';

const CJK = '日本語のテキストと中文文本，还有한국어 텍스트도 있습니다。';
const PROSE = "The quick brown fox jumps over the lazy dog. It's 3:45pm — isn't it?";
// Counts of tiktoken-rs 0.12.1 (the reference of the native differential tests).
const O200K = { 'hello world': 2, [CJK]: 18, [PROSE]: 20 };
const CL100K = { 'hello world': 2, [CJK]: 27, [PROSE]: 22 };

test('autocontext counts o200k_base exactly and refuses cl100k_base, naming autocontext/full', () => {
  for (const [text, n] of Object.entries(O200K)) {
    assert.equal(base.countTokens(text), n);
    assert.equal(base.countTokens(text, 'o200k_base'), n);
  }
  for (const attempt of [() => base.countTokens('x', 'cl100k_base'), () => new base.AutoContextMemory({ tokenizer: 'cl100k_base' })]) {
    const e = thrown(attempt);
    assert.ok(e instanceof base.AutoContextError);
    assert.equal(e.code, 'INVALID_CONFIG');
    assert.equal(e.field, 'tokenizer');
    assert.match(e.message, /"cl100k_base"/);
    assert.match(e.message, /"autocontext\/full"/);
  }
  assert.equal(new base.AutoContextMemory().toJSON().config.tokenizer, 'o200k_base');
});

test('autocontext/full counts both encodings exactly', () => {
  for (const [text, n] of Object.entries(O200K)) assert.equal(full.countTokens(text, 'o200k_base'), n);
  for (const [text, n] of Object.entries(CL100K)) assert.equal(full.countTokens(text, 'cl100k_base'), n);
  assert.equal(full.countTokens(CJK), O200K[CJK], 'the default is o200k_base');
  const memory = new full.AutoContextMemory({ tokenizer: 'cl100k_base', reservedTokens: 0 });
  memory.add({ role: 'user', content: CJK });
  const overhead = new full.AutoContextMemory({ tokenizer: 'cl100k_base', reservedTokens: 0 }).tokenCount();
  assert.equal(memory.tokenCount() - overhead, CL100K[CJK] + 4, 'the message: its text plus the per-message overhead');
});

test('autocontext/lite has no vocabulary: it estimates by default and names the builds that count exactly', () => {
  const prose = PROSE.repeat(20);
  assert.equal(lite.countTokens(prose), lite.countTokens(prose, 'estimate'));
  const exact = base.countTokens(prose);
  assert.ok(Math.abs(lite.countTokens(prose) - exact) / exact < 0.35, 'the estimate is near the exact count');
  for (const [tokenizer, importName] of [['o200k_base', /"autocontext"/], ['cl100k_base', /"autocontext\/full"/]]) {
    const e = thrown(() => lite.countTokens('x', tokenizer));
    assert.equal(e.code, 'INVALID_CONFIG');
    assert.equal(e.field, 'tokenizer');
    assert.match(e.message, importName);
    assert.match(e.message, /autocontext\/lite/);
    assert.equal(thrown(() => new lite.AutoContextMemory({ tokenizer })).code, 'INVALID_CONFIG');
  }
  const memory = new lite.AutoContextMemory();
  assert.equal(memory.toJSON().config.tokenizer, 'estimate');
  memory.add({ role: 'user', content: prose });
  assert.ok(memory.tokenCount() > 100);
  // A state made where o200k_base exists cannot silently change tokenizer here.
  const state = new base.AutoContextMemory().toJSON();
  const e = thrown(() => lite.AutoContextMemory.fromJSON(state));
  assert.equal(e.code, 'INVALID_STATE');
  assert.match(e.message, /o200k_base/);
});

test('builds imported together keep their own engines and share one error class', async () => {
  // Interleaved calls: each module answers with its own WebAssembly instance.
  assert.equal(full.countTokens(CJK, 'cl100k_base'), CL100K[CJK]);
  assert.equal(thrown(() => base.countTokens(CJK, 'cl100k_base')).code, 'INVALID_CONFIG');
  assert.equal(thrown(() => lite.countTokens(CJK, 'o200k_base')).code, 'INVALID_CONFIG');
  assert.equal(full.countTokens(CJK, 'cl100k_base'), CL100K[CJK]);
  assert.equal(base.AutoContextError, full.AutoContextError);
  assert.equal(base.AutoContextError, lite.AutoContextError);
  assert.ok(base.isAutoContextError(thrown(() => lite.countTokens('x', 'o200k_base')), 'INVALID_CONFIG'));
  // A whole stateless pass in each build.
  const messages = Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} `.repeat(200) }));
  for (const build of [base, full, lite]) {
    const out = await build.compress(messages, { maxToken: 2000 });
    assert.ok(out.tokensAfter < out.tokensBefore, 'the pass compressed');
    assert.ok(out.messages.length > 0);
  }
});
