// The traces the cost benchmark replays: every file of the shared corpus (OpenAI chat shape) and
// of traces-extra (OpenAI or Anthropic Messages shape; the Anthropic ones converted here to the
// OpenAI shape, so every system sees the same messages).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { corpusDir, root } from '../texts.mjs';

/** traces-extra: `AUTOCONTEXT_TRACES_EXTRA`, else `../shared/traces-extra` beside the repository. */
export function extraDir() {
  return process.env.AUTOCONTEXT_TRACES_EXTRA ?? join(root, '..', 'shared', 'traces-extra');
}

/** The text of an Anthropic block list or string (text blocks only, joined by blank lines). */
function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b) => b?.type === 'text')
    .map((b) => b.text)
    .join('\n\n');
}

/** An Anthropic image block as an OpenAI `image_url` part. */
function imagePart(block) {
  const s = block.source ?? {};
  const url = s.type === 'base64' ? `data:${s.media_type};base64,${s.data}` : s.url ?? '';
  return { type: 'image_url', image_url: { url } };
}

/**
 * One Anthropic Messages conversation in the OpenAI chat shape: the `system` parameter becomes
 * a system message; a user message's `tool_result` blocks become `tool` messages (first, as the
 * OpenAI shape needs them right after the calls), its text and images one user message after
 * them; an assistant message's text blocks become its content, its `tool_use` blocks its
 * `tool_calls` (input as a JSON string). Thinking blocks are dropped (the OpenAI shape has no
 * place for them, and Anthropic does not bill earlier turns' thinking as input either); server
 * tool blocks (web search and its results) are kept as JSON text in the assistant's content, so
 * their tokens are counted. An image inside a tool result becomes the text `[image]`.
 */
export function anthropicToOpenAI(system, messages) {
  const out = [];
  const sys = textOf(system);
  if (sys.length > 0) out.push({ role: 'system', content: sys });
  for (const m of messages) {
    if (m.role === 'user') {
      if (typeof m.content === 'string') {
        out.push({ role: 'user', content: m.content });
        continue;
      }
      const parts = [];
      for (const b of m.content) {
        if (b.type === 'tool_result') {
          const content =
            typeof b.content === 'string'
              ? b.content
              : (b.content ?? []).map((x) => (x.type === 'text' ? x.text : x.type === 'image' ? '[image]' : JSON.stringify(x))).join('\n\n');
          out.push({ role: 'tool', tool_call_id: b.tool_use_id, content });
        } else if (b.type === 'text') {
          parts.push({ type: 'text', text: b.text });
        } else if (b.type === 'image') {
          parts.push(imagePart(b));
        }
      }
      if (parts.length === 1 && parts[0].type === 'text') out.push({ role: 'user', content: parts[0].text });
      else if (parts.length > 0) out.push({ role: 'user', content: parts });
    } else if (m.role === 'assistant') {
      if (typeof m.content === 'string') {
        out.push({ role: 'assistant', content: m.content });
        continue;
      }
      const texts = [];
      const calls = [];
      for (const b of m.content) {
        if (b.type === 'text') texts.push(b.text);
        else if (b.type === 'tool_use') calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
        else if (b.type === 'server_tool_use' || b.type === 'web_search_tool_result') texts.push(JSON.stringify(b));
      }
      const message = { role: 'assistant', content: texts.length > 0 ? texts.join('\n\n') : null };
      if (calls.length > 0) message.tool_calls = calls;
      out.push(message);
    } else {
      throw new Error(`anthropicToOpenAI: unknown role ${JSON.stringify(m.role)}`);
    }
  }
  return out;
}

/** Freezes a value and everything in it: a system that changed a trace's message in place would throw. */
function deepFreeze(v) {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze(v[k]);
  }
  return v;
}

/** Every trace file of one folder, `{ name, set, messages }` in the OpenAI shape, by file name. */
function readFolder(dir, set) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const t = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      const messages = t.format === 'anthropic' ? anthropicToOpenAI(t.system, t.messages) : t.system ? [{ role: 'system', content: textOf(t.system) }, ...t.messages] : t.messages;
      // Frozen: the benchmark memoizes by object, and every system gets the same messages.
      return { name: f.replace(/\.json$/, ''), set, format: t.format ?? 'openai', messages: deepFreeze(messages) };
    });
}

/**
 * The traces to replay: the corpus, then traces-extra. `filters` (substrings of trace names)
 * keeps the traces whose name contains any of them; empty keeps all.
 */
export function costTraces(filters = []) {
  const all = [...readFolder(corpusDir(), 'corpus'), ...readFolder(extraDir(), 'extra')];
  if (filters.length === 0) return all;
  return all.filter((t) => filters.some((f) => t.name.includes(f)));
}
