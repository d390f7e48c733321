/**
 * Which wire format a conversation file is in, told apart by the fields only one format uses,
 * and how each format says who speaks: the formats are the library's own list (every format
 * the engine reads), so the command reads whatever a memory does.
 *
 * @module
 */

import { FORMAT_NAMES, type FormatName } from '../formats.js';

export type { FormatName };

/** The formats the command reads: every format of the library. */
export const FORMATS = FORMAT_NAMES;

/** What {@link detectFormat} found. */
export interface Detected {
  format: FormatName;
  /** Whether some message could only be this format; `false` when none said (plain text). */
  sure: boolean;
}

type Evidence = Record<FormatName, number>;

const ANTHROPIC_BLOCKS = new Set(['tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'server_tool_use', 'web_search_tool_result', 'document']);
const AI_SDK_PARTS = new Set(['tool-call', 'tool-result', 'reasoning', 'file', 'tool-approval-request', 'tool-approval-response']);
const OPENAI_PARTS = new Set(['image_url', 'input_audio', 'refusal']);
/** Content parts of Responses API messages. */
const RESPONSES_PARTS = new Set(['input_text', 'output_text', 'input_image', 'input_file']);
/** Item types of the Responses API (and the Agents SDK's `function_call_result`) besides `message`. */
const RESPONSES_ITEMS = /^(function_call|function_call_output|function_call_result|reasoning|compaction|item_reference|[a-z_]+_call(_output)?)$/;
/** Part fields of Gemini `Content`s. */
const GEMINI_PARTS = ['text', 'functionCall', 'functionResponse', 'inlineData', 'fileData', 'executableCode', 'codeExecutionResult', 'thought'];

/** The key of the list in each request body the command reads, and the format it implies. */
export const LIST_KEYS: readonly { key: string; format?: FormatName }[] = [
  { key: 'messages' },
  { key: 'contents', format: 'gemini' },
  { key: 'input', format: 'openai-responses' },
];

function look(m: Record<string, unknown>, e: Evidence): void {
  const role = m.role;
  if (Array.isArray(m.parts) && !('content' in m)) {
    e.gemini++;
    for (const p of m.parts as unknown[]) if (p !== null && typeof p === 'object' && GEMINI_PARTS.some((k) => k in p)) e.gemini++;
  }
  if (role === 'model') e.gemini++;
  if (typeof m.type === 'string' && (m.type === 'message' || RESPONSES_ITEMS.test(m.type))) e['openai-responses']++;
  if ('tool_calls' in m || 'tool_call_id' in m || 'function_call' in m || role === 'function') e.openai++;
  if (role === 'developer' && !('type' in m)) e.openai++;
  if (!Array.isArray(m.content)) return;
  for (const part of m.content as unknown[]) {
    if (part === null || typeof part !== 'object') continue;
    const p = part as Record<string, unknown>;
    const type = p.type;
    if (typeof type !== 'string') continue;
    if (ANTHROPIC_BLOCKS.has(type) || (type === 'image' && typeof p.source === 'object')) e.anthropic++;
    else if (AI_SDK_PARTS.has(type) || 'toolCallId' in p || (type === 'image' && 'image' in p)) e['ai-sdk']++;
    else if (RESPONSES_PARTS.has(type)) e['openai-responses']++;
    else if (OPENAI_PARTS.has(type)) e.openai++;
  }
}

/**
 * The format of `messages` (and the object that held them, if any, under `key`). A
 * conversation of plain text messages reads the same in most formats; it is OpenAI's, not
 * `sure`.
 */
export function detectFormat(messages: readonly unknown[], container: Record<string, unknown> | null, key = 'messages'): Detected {
  const implied = LIST_KEYS.find((k) => k.key === key)?.format;
  if (implied !== undefined) return { format: implied, sure: true };
  const e = Object.fromEntries(FORMATS.map((f) => [f, 0])) as Evidence;
  for (const m of messages) if (m !== null && typeof m === 'object') look(m as Record<string, unknown>, e);
  if (container !== null) {
    // Anthropic keeps the system prompt beside the messages, never among them; Gemini as
    // `systemInstruction`, the Responses API as `instructions`.
    if ('system' in container && !messages.some((m) => (m as { role?: unknown }).role === 'system')) e.anthropic++;
    if ('systemInstruction' in container) e.gemini++;
    if ('instructions' in container) e['openai-responses']++;
  }
  const best = FORMATS.reduce((a, b) => (e[b] > e[a] ? b : a));
  return e[best] > 0 ? { format: best, sure: true } : { format: 'openai', sure: false };
}

/** A conversation read from parsed JSON. */
export interface ReadConversation {
  messages: Record<string, unknown>[];
  /** `null` for a plain array; otherwise the object that held the list. */
  container: Record<string, unknown> | null;
  /** The key of the list in `container`: `messages`, `contents` (Gemini) or `input` (Responses API). */
  key: string;
  /** The wire format: named, or detected. */
  format: FormatName;
  /** How the format was chosen. */
  formatFrom: 'option' | 'detected' | 'default';
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/**
 * The conversation in parsed JSON: an array of messages, or an object holding them (a request
 * body: `messages` for chat completions, Anthropic and the AI SDK, `contents` for Gemini,
 * `input` for the Responses API; or `{source, license, meta, messages}`), in `format` or the
 * format detected. The command line and the demo page read conversations with it, so both
 * replay the same input alike.
 *
 * @throws Error saying what is not a conversation (without a file name: the caller adds it).
 */
export function readConversation(data: unknown, format?: FormatName): ReadConversation {
  const keys = LIST_KEYS.map((k) => JSON.stringify(k.key));
  const shape = `expected an array of messages, or an object with a ${keys.slice(0, -1).join(', ')} or ${keys.at(-1)} array`;
  let messages: unknown;
  let container: Record<string, unknown> | null = null;
  let key = 'messages';
  if (Array.isArray(data)) {
    messages = data;
  } else if (data !== null && typeof data === 'object') {
    const held = data as Record<string, unknown>;
    container = held;
    const found = LIST_KEYS.find((k) => k.key in held && (Array.isArray(held[k.key]) || k.key === 'messages'));
    if (found === undefined) {
      const names = Object.keys(held);
      const has = names.length === 0 ? 'an empty object' : `an object with ${names.slice(0, 5).map((k) => JSON.stringify(k)).join(', ')}${names.length > 5 ? ', ...' : ''}`;
      throw new Error(`not a conversation: ${shape}; got ${has}`);
    }
    key = found.key;
    messages = held[key];
    if (!Array.isArray(messages)) throw new Error(`not a conversation: "${key}" must be an array, got ${kind(messages)}`);
  } else {
    throw new Error(`not a conversation: ${shape}; got ${kind(data)}`);
  }
  const list = messages as unknown[];
  if (list.length === 0) throw new Error('the conversation has no messages');
  list.forEach((m, i) => {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) throw new Error(`not a conversation: message ${i} is ${kind(m)}, not an object`);
  });
  const detected = format === undefined ? detectFormat(list, container, key) : undefined;
  const chosen = format ?? detected!.format;
  if (needsRole(chosen)) {
    list.forEach((m, i) => {
      if (typeof (m as { role?: unknown }).role !== 'string') throw new Error(`not a conversation: message ${i} has no "role"`);
    });
  }
  const formatFrom = detected === undefined ? 'option' : detected.sure ? 'detected' : 'default';
  return { messages: list as Record<string, unknown>[], container, key, format: chosen, formatFrom };
}

/**
 * The model calls of a conversation: the index of the first message each produced (in most
 * formats every assistant message; in the Responses API the first item of each response).
 */
export function modelCalls(messages: readonly Wire[], format: FormatName): number[] {
  const out: number[] = [];
  messages.forEach((m, i) => {
    if (startsModelCall(m, messages[i - 1], format)) out.push(i);
  });
  return out;
}

/** Whether the format's messages all carry a `role` (Gemini's user turns and the Responses API's items need none). */
export function needsRole(format: FormatName): boolean {
  return format !== 'gemini' && format !== 'openai-responses';
}

type Wire = { role?: unknown; content?: unknown; parts?: unknown; type?: unknown };

const isObject = (p: unknown): p is Record<string, unknown> => p !== null && typeof p === 'object';

/**
 * Whether a message starts a user turn: a real user message (not one that only carries tool
 * results: Anthropic and AI SDK tool results are user-role messages, Gemini's function
 * responses user contents).
 */
export function isUserTurn(message: Wire, format: FormatName = 'openai'): boolean {
  if (format === 'gemini') {
    if (message.role === 'model' || !Array.isArray(message.parts)) return false;
    const parts = message.parts as unknown[];
    return parts.length === 0 || parts.some((p) => !isObject(p) || !('functionResponse' in p));
  }
  if (format === 'openai-responses' && message.type !== undefined && message.type !== 'message') return false;
  if (message.role !== 'user') return false;
  if (!Array.isArray(message.content)) return true;
  const parts = message.content as { type?: unknown }[];
  return parts.length === 0 || parts.some((p) => p !== null && typeof p === 'object' && p.type !== 'tool_result' && p.type !== 'tool-result');
}

/** Whether a message is on the model's side: what a model call produced. */
export function isModelOutput(message: Wire, format: FormatName = 'openai'): boolean {
  if (format === 'gemini') return message.role === 'model';
  if (format === 'openai-responses') {
    const type = message.type;
    if (type === undefined || type === 'message') return message.role === 'assistant';
    // Calls, reasoning and hosted tool calls; their outputs and results are the host's.
    return typeof type === 'string' && !/(_output|_result|_response)$/.test(type) && type !== 'item_reference' && type !== 'compaction';
  }
  return message.role === 'assistant';
}

/**
 * Whether a model call produced `message` and it is the first message of that call's output:
 * every assistant message in most formats; in the Responses API the first of a response's
 * items (its reasoning, message and calls come one item each).
 */
export function startsModelCall(message: Wire, previous: Wire | undefined, format: FormatName = 'openai'): boolean {
  if (!isModelOutput(message, format)) return false;
  return format !== 'openai-responses' || previous === undefined || !isModelOutput(previous, format);
}
