/**
 * Which wire format a conversation file is in: OpenAI chat completions, Anthropic Messages or
 * the AI SDK's `ModelMessage`s, told apart by the fields only one of them uses.
 *
 * @module
 */

/** The formats the command knows by name (the engine may support fewer; it says so). */
export const FORMATS = ['openai', 'anthropic', 'ai-sdk'] as const;

/** A format name. */
export type FormatName = (typeof FORMATS)[number];

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

function look(m: Record<string, unknown>, e: Evidence): void {
  const role = m.role;
  if ('tool_calls' in m || 'tool_call_id' in m || 'function_call' in m || role === 'developer' || role === 'function') e.openai++;
  if (!Array.isArray(m.content)) return;
  for (const part of m.content as unknown[]) {
    if (part === null || typeof part !== 'object') continue;
    const p = part as Record<string, unknown>;
    const type = p.type;
    if (typeof type !== 'string') continue;
    if (ANTHROPIC_BLOCKS.has(type) || (type === 'image' && typeof p.source === 'object')) e.anthropic++;
    else if (AI_SDK_PARTS.has(type) || 'toolCallId' in p || (type === 'image' && 'image' in p)) e['ai-sdk']++;
    else if (OPENAI_PARTS.has(type)) e.openai++;
  }
}

/**
 * The format of `messages` (and the object that held them, if any). A conversation of plain
 * text messages reads the same in every format; it is OpenAI's, not `sure`.
 */
export function detectFormat(messages: readonly unknown[], container: Record<string, unknown> | null): Detected {
  const e: Evidence = { openai: 0, anthropic: 0, 'ai-sdk': 0 };
  for (const m of messages) if (m !== null && typeof m === 'object') look(m as Record<string, unknown>, e);
  // Anthropic keeps the system prompt beside the messages, never among them.
  if (container !== null && 'system' in container && !messages.some((m) => (m as { role?: unknown }).role === 'system')) e.anthropic++;
  const best = FORMATS.reduce((a, b) => (e[b] > e[a] ? b : a));
  return e[best] > 0 ? { format: best, sure: true } : { format: 'openai', sure: false };
}

/**
 * Whether a message starts a user turn (a real user message; in Anthropic and AI SDK shapes
 * a user-role message that only carries tool results does not).
 */
export function isUserTurn(message: { role: string; content?: unknown }): boolean {
  if (message.role !== 'user') return false;
  if (!Array.isArray(message.content)) return true;
  const parts = message.content as { type?: unknown }[];
  return parts.length === 0 || parts.some((p) => p !== null && typeof p === 'object' && p.type !== 'tool_result' && p.type !== 'tool-result');
}
