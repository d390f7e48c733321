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

/** The uuid of every offload marker in a text (the runtimes' shared contract has it). */
export { markers } from '../contract/fenced-sweep.mjs';

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

/**
 * OpenAI-shaped messages in `format`: for Anthropic, system messages dropped, tool results as
 * `tool_result` blocks and neighbours of one side joined into one turn (so a user message after
 * tool results joins their turn, `[tool_result…, text]`); for the AI SDK, tool messages joined
 * and results as `{ type: 'text', value }` outputs.
 */
export function toFormat(format, messages) {
  if (format === 'openai') return messages;
  const out = [];
  const names = new Map();
  for (const m of messages) {
    const text = typeof m.content === 'string' ? m.content : '';
    if (format === 'anthropic') {
      if (m.role === 'system') continue;
      const side = m.role === 'assistant' ? 'assistant' : 'user';
      let blocks;
      if (m.role === 'tool') blocks = [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: text }];
      else if (m.role === 'assistant') {
        blocks = text ? [{ type: 'text', text }] : [];
        for (const c of m.tool_calls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) });
      } else blocks = [{ type: 'text', text }];
      const last = out.at(-1);
      if (last?.role === side) last.content.push(...blocks);
      else out.push({ role: side, content: blocks });
    } else {
      if (m.role === 'tool') {
        const part = { type: 'tool-result', toolCallId: m.tool_call_id, toolName: names.get(m.tool_call_id) ?? 'tool', output: { type: 'text', value: text } };
        const last = out.at(-1);
        if (last?.role === 'tool') last.content.push(part);
        else out.push({ role: 'tool', content: [part] });
      } else if (m.role === 'assistant' && m.tool_calls) {
        const parts = text ? [{ type: 'text', text }] : [];
        for (const c of m.tool_calls) {
          names.set(c.id, c.function.name);
          parts.push({ type: 'tool-call', toolCallId: c.id, toolName: c.function.name, input: JSON.parse(c.function.arguments) });
        }
        out.push({ role: 'assistant', content: parts });
      } else out.push({ role: m.role, content: text });
    }
  }
  return out;
}

/** Whether wire message `m` (any format) carries the result of call `id`. */
export function holdsResult(m, id) {
  if (m.tool_call_id === id) return true;
  return Array.isArray(m.content) && m.content.some((p) => (p.type === 'tool_result' && p.tool_use_id === id) || (p.type === 'tool-result' && p.toolCallId === id));
}

export const FORMATS = ['openai', 'anthropic', 'ai-sdk'];

/**
 * The default ladder without the stale-result stubs: for tests that watch another step read
 * results whole (the stubs would shrink them first; tests/rent.rs and promises.test.mjs test
 * those).
 */
export const LADDER_WITHOUT_STUBS = Object.freeze([
  'tool-result-truncate',
  'large-message-offload-protected',
  'large-message-offload',
  'history-rollup',
  'tool-run-compress',
  'previous-round-summary',
  'prefix-summary',
  'current-round-large-message',
  'current-round-compress',
  'emergency',
]);
