/**
 * `autocontext reload <uuid> --store <dir>`: prints the original messages of an offloaded span
 * from the directory `compress --store` wrote, readable (or as JSON with `--json`), and names
 * any offloads nested inside it.
 *
 * @module
 */

import { stat } from 'node:fs/promises';

import { FsStore } from '../stores/fs.js';
import { InputError, UsageError, fsReason } from './errors.js';
import { displayPath, num, type Style } from './text.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MARKER = /<!-- CONTEXT_OFFLOAD: uuid=([0-9a-fA-F-]{36}) -->/g;

/** What the engine writes under each offload key. */
interface OffloadBody {
  sessionId?: string;
  uuid?: string;
  format?: string;
  messages: Record<string, unknown>[];
}

/** The uuid in an argument: a bare uuid, or a whole `<!-- CONTEXT_OFFLOAD: uuid=... -->` marker. */
export function uuidOf(arg: string): string {
  const inMarker = /uuid=([^\s>]+)/.exec(arg)?.[1];
  const uuid = (inMarker ?? arg).trim().toLowerCase();
  if (!UUID.test(uuid)) {
    throw new UsageError(`reload: ${JSON.stringify(arg)} is not an offload uuid (8-4-4-4-12 hex digits, from a <!-- CONTEXT_OFFLOAD: uuid=... --> marker)`);
  }
  return uuid;
}

function stringify(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The readable lines of one content part (any of the formats). */
function partLines(p: unknown): string[] {
  if (typeof p === 'string') return [p];
  if (p === null || typeof p !== 'object') return [stringify(p)];
  const part = p as Record<string, unknown>;
  if (part.type === undefined) {
    // A Gemini part.
    const call = part.functionCall as { name?: unknown; args?: unknown; id?: unknown } | undefined;
    const response = part.functionResponse as { name?: unknown; response?: unknown } | undefined;
    if (call !== undefined) return [`→ call ${stringify(call.name)} ${stringify(call.args ?? {})}${call.id === undefined ? '' : ` (id ${stringify(call.id)})`}`];
    if (response !== undefined) return [`← result of ${stringify(response.name)}`, stringify(response.response)];
    if (typeof part.text === 'string') return [part.text];
  }
  switch (part.type) {
    case 'text':
    case 'reasoning':
    case 'thinking':
    case 'input_text':
    case 'output_text':
    case 'summary_text':
      return [stringify(part.text ?? part.thinking ?? '')];
    case 'tool_use':
      return [`→ call ${stringify(part.name)} ${stringify(part.input)} (id ${stringify(part.id)})`];
    case 'tool-call':
      return [`→ call ${stringify(part.toolName)} ${stringify(part.input ?? part.args)} (id ${stringify(part.toolCallId)})`];
    case 'tool_result':
      return [`← result of ${stringify(part.tool_use_id)}${part.is_error ? ' (error)' : ''}`, ...contentLines(part.content)];
    case 'tool-result':
      return [`← result of ${stringify(part.toolCallId)}`, stringify((part.output as { value?: unknown } | undefined)?.value ?? part.output ?? part.result)];
    default:
      return [`[${stringify(part.type ?? 'part')}]`];
  }
}

function contentLines(content: unknown): string[] {
  if (content === null || content === undefined) return [];
  if (Array.isArray(content)) return content.flatMap(partLines);
  return partLines(content);
}

/** One message as readable lines. */
function messageLines(m: Record<string, unknown>): string[] {
  // Responses API items other than messages.
  if (m.type === 'function_call') return [`→ call ${stringify(m.name)} ${stringify(m.arguments)} (id ${stringify(m.call_id ?? m.callId)})`];
  if (m.type === 'function_call_output' || m.type === 'function_call_result') {
    return [`← result of ${stringify(m.call_id ?? m.callId)}`, ...contentLines(m.output)];
  }
  if (m.type === 'reasoning') return contentLines(m.summary ?? m.content);
  if (typeof m.type === 'string' && m.type !== 'message') return [`[${m.type}]`];
  // Gemini contents.
  if (Array.isArray(m.parts)) return contentLines(m.parts);
  const lines = contentLines(m.content);
  const calls = Array.isArray(m.tool_calls) ? (m.tool_calls as { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[]) : [];
  for (const c of calls) lines.push(`→ call ${stringify(c.function?.name)} ${stringify(c.function?.arguments)} (id ${stringify(c.id)})`);
  return lines;
}

/** The offload's messages, for people. */
export function renderOffload(uuid: string, storeDir: string, key: string, body: OffloadBody, s: Style): string {
  const out: string[] = [`${s.bold('autocontext')} reload ${uuid}`, ''];
  out.push(`  ${s.dim(`${num(body.messages.length)} original message${body.messages.length === 1 ? '' : 's'}${body.format ? ` (${body.format})` : ''} · session ${body.sessionId ?? '?'} · ${displayPath(storeDir)}/${key}`)}`);
  const nested = new Set<string>();
  body.messages.forEach((m, i) => {
    const role = m.role === undefined ? (typeof m.type === 'string' ? m.type : 'user') : stringify(m.role);
    const extra = typeof m.tool_call_id === 'string' ? ` · answers ${m.tool_call_id}` : '';
    const title = `── ${i + 1} · ${role}${extra} `;
    out.push('', s.accent(title.padEnd(72, '─')));
    for (const line of messageLines(m)) {
      for (const match of line.matchAll(MARKER)) nested.add(match[1]!.toLowerCase());
      out.push(line);
    }
  });
  if (nested.size > 0) {
    out.push('', s.dim('It names earlier offloads of its own; reload them the same way:'));
    for (const n of nested) out.push(`  autocontext reload ${n} --store ${displayPath(storeDir)}`);
  }
  return out.join('\n') + '\n';
}

/** Runs `reload`; returns the text to print. */
export async function reloadCommand(o: { uuid: string; store: string; json: boolean }, s: Style): Promise<string> {
  const uuid = uuidOf(o.uuid);
  try {
    if (!(await stat(o.store)).isDirectory()) throw new InputError(`--store ${o.store}: not a directory`);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`cannot read ${o.store}: ${fsReason(e)}`);
  }
  const store = new FsStore(o.store);
  const keys = (await store.keys()).filter((k) => k.endsWith(`/${uuid}`) || k === uuid);
  if (keys.length === 0) throw new InputError(`no offload ${uuid} under ${o.store} (is it the directory given to --store?)`);
  const key = keys[0]!;
  const text = await store.get(key);
  if (text === null) throw new InputError(`no offload ${uuid} under ${o.store}`);
  let body: OffloadBody;
  try {
    body = JSON.parse(text) as OffloadBody;
    if (!Array.isArray(body.messages)) throw new Error('no messages');
  } catch {
    throw new InputError(`${key} under ${o.store} is not an offload autocontext wrote`);
  }
  if (o.json) return JSON.stringify(body.messages, null, 2) + '\n';
  return renderOffload(uuid, o.store, key, body, s);
}
