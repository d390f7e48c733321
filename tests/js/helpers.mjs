// Builders shared by the Node tests. They run against the installed package: every import of
// autocontext goes through its package name.

/** An OpenAI tool call. */
export function call(id, name = 'read_file', args = {}) {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

/** Deterministic prose of about `chars` characters, different for each seed. */
export function text(chars, seed = 0) {
  const words = ['alpha', 'build', 'cache', 'delta', 'error', 'flag', 'graph', 'heap', 'index', 'join', 'kernel', 'linker', 'module', 'node'];
  let out = '';
  let i = seed * 7919;
  while (out.length < chars) {
    out += words[i % words.length] + (i % 11 === 0 ? '.\n' : ' ');
    i = (i * 31 + 17) % 100003;
  }
  return out.slice(0, chars);
}

/**
 * One complete round: a user question, one assistant message calling `calls` tools, their
 * results of `resultChars` characters each, and a final answer.
 */
export function round(n, { calls = 3, resultChars = 2000 } = {}) {
  const ids = Array.from({ length: calls }, (_, k) => `r${n}c${k}`);
  return [
    { role: 'user', content: `Question ${n}: what does module ${n} do?` },
    { role: 'assistant', content: null, tool_calls: ids.map((id) => call(id, 'read_file', { path: `src/m${n}.rs` })) },
    ...ids.map((id, k) => ({ role: 'tool', tool_call_id: id, content: text(resultChars, n * 10 + k) })),
    { role: 'assistant', content: `Module ${n} parses the input.` },
  ];
}

/** A conversation whose last tool result is longer than `chars`, answered by the model. */
export function bigToolResult(chars = 20_000) {
  return [
    { role: 'user', content: 'Read the log.' },
    { role: 'assistant', content: null, tool_calls: [call('log1', 'read_log')] },
    { role: 'tool', tool_call_id: 'log1', content: text(chars, 3) },
  ];
}

/** The uuid of every offload marker in a text. */
export function markers(s) {
  return [...String(s).matchAll(/<!-- CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36}) -->/g)].map((m) => m[1]);
}

/** Runs `fn` and returns what it threw (fails when it does not throw). */
export function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an exception');
}

/** Awaits `promise` and returns its rejection (fails when it resolves). */
export async function rejected(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
