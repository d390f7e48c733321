/**
 * Reading conversations: a file, stdin (`-`) or every `*.json` file under a directory, parsed
 * with errors that say where (file:line:column) and what is wrong.
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

import type { WireMessage } from '../types.js';
import { InputError, fsReason } from './errors.js';
import { LIST_KEYS, detectFormat, needsRole, type FormatName } from './format.js';
import { jsonErrorAt, lineColumn } from './json-error.js';

/** A conversation read from a file. */
export interface Conversation {
  messages: WireMessage[];
  /** `null` for a plain array; otherwise the object that held the list (for `--out`). */
  container: Record<string, unknown> | null;
  /** The key of the list in `container`: `messages`, `contents` (Gemini) or `input` (Responses API). */
  key: string;
  /** The wire format: named with `--format`, or detected. */
  format: FormatName;
  /** How the format was chosen. */
  formatFrom: 'option' | 'detected' | 'default';
}

/** The text of a file, or of stdin for `-`. */
export async function readInput(file: string): Promise<string> {
  try {
    if (file === '-') {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    }
    return await readFile(file, 'utf8');
  } catch (e) {
    throw new InputError(`cannot read ${file}: ${fsReason(e)}`);
  }
}

/** Whether `path` names a directory (`false` for `-` and for what does not exist). */
export async function isDirectory(path: string): Promise<boolean> {
  if (path === '-') return false;
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** Every `*.json` file under `dir`, recursively, sorted; hidden entries and `node_modules` skipped. */
export async function conversationFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch (e) {
      throw new InputError(`cannot read ${d}: ${fsReason(e)}`);
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const p = join(d, entry.name);
      if (entry.isDirectory()) await walk(p);
      else if (entry.isFile() && entry.name.toLowerCase().endsWith('.json')) out.push(p);
    }
  };
  await walk(dir);
  return out;
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/**
 * The conversation in a JSON text: an array of messages, or an object holding them (a request
 * body: `messages` for chat completions, Anthropic and the AI SDK, `contents` for Gemini,
 * `input` for the Responses API; or `{source, license, meta, messages}`).
 *
 * @param format - the format named with `--format`, or `undefined` to detect it.
 */
export function parseConversation(path: string, raw: string, format?: FormatName): Conversation {
  const file = path === '-' ? '<stdin>' : path;
  const text = raw.startsWith('\uFEFF') ? raw.slice(1) : raw;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    const found = jsonErrorAt(text);
    if (found) {
      const { line, column } = lineColumn(text, found.offset);
      throw new InputError(`${file}:${line}:${column}: invalid JSON: ${found.message}`);
    }
    throw new InputError(`${file}: invalid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  const keys = LIST_KEYS.map((k) => JSON.stringify(k.key));
  const shape = `expected an array of messages, or an object with a ${keys.slice(0, -1).join(', ')} or ${keys.at(-1)} array`;
  let messages: unknown;
  let container: Record<string, unknown> | null = null;
  let key = 'messages';
  if (Array.isArray(data)) {
    messages = data;
  } else if (data !== null && typeof data === 'object') {
    container = data as Record<string, unknown>;
    const held = LIST_KEYS.find((k) => k.key in container! && (Array.isArray(container![k.key]) || k.key === 'messages'));
    if (held === undefined) {
      const keys = Object.keys(container);
      const has = keys.length === 0 ? 'an empty object' : `an object with ${keys.slice(0, 5).map((k) => JSON.stringify(k)).join(', ')}${keys.length > 5 ? ', ...' : ''}`;
      throw new InputError(`${file}: not a conversation: ${shape}; got ${has}`);
    }
    key = held.key;
    messages = container[key];
    if (!Array.isArray(messages)) throw new InputError(`${file}: not a conversation: "${key}" must be an array, got ${kind(messages)}`);
  } else {
    throw new InputError(`${file}: not a conversation: ${shape}; got ${kind(data)}`);
  }
  const list = messages as unknown[];
  if (list.length === 0) throw new InputError(`${file}: the conversation has no messages`);
  list.forEach((m, i) => {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) {
      throw new InputError(`${file}: not a conversation: message ${i} is ${kind(m)}, not an object`);
    }
  });
  const detected = format === undefined ? detectFormat(list, container, key) : undefined;
  const chosen = format ?? detected!.format;
  if (needsRole(chosen)) {
    list.forEach((m, i) => {
      if (typeof (m as { role?: unknown }).role !== 'string') {
        throw new InputError(`${file}: not a conversation: message ${i} has no "role"`);
      }
    });
  }
  const formatFrom = detected === undefined ? 'option' : detected.sure ? 'detected' : 'default';
  return { messages: list as WireMessage[], container, key, format: chosen, formatFrom };
}
