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
import { readConversation, type FormatName } from './format.js';
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

/**
 * The conversation in a JSON text: an array of messages, or an object holding them (see
 * {@link readConversation}), with errors that say where.
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
  try {
    const read = readConversation(data, format);
    return { ...read, messages: read.messages as WireMessage[] };
  } catch (e) {
    throw new InputError(`${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
