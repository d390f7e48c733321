#!/usr/bin/env node
/**
 * The `autocontext` command.
 *
 * `autocontext compress <conversation.json> --max-token N` replays a conversation the way an
 * agent loop would (message by message, compressing before every assistant turn) with the
 * package's own public API, offline, and prints what compression did: messages and tokens
 * before and after, the events by type, the offloads written, and how many model turns would
 * have overflowed the window with and without autocontext.
 *
 * Exit status: 0 done, 1 the input or the engine failed, 2 the command line is wrong.
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { relative, isAbsolute, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import type { AutoContextMemory, CompressionEvent, OffloadStore, WireMessage } from './index.js';
import { isAutoContextError } from './errors.js';
import { FsStore } from './stores/fs.js';
import { MemoryStore } from './stores/memory.js';

const DEFAULT_RATIO = 0.75;
const MAX_WINDOW = 1_000_000_000;

// ---------------------------------------------------------------------------------------------
// Errors: one line on stderr, and the exit status.

/** The command line is wrong (exit 2). */
class UsageError extends Error {}

/** The input or a file could not be used (exit 1). */
class InputError extends Error {}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

const HELP = `autocontext — keeps an LLM agent's conversation inside its context window

Usage
  autocontext compress <conversation.json> --max-token N [options]
  autocontext --help | --version

compress replays a conversation the way an agent loop would: it adds the messages one
by one, compresses before every assistant turn and once more before the next model
call, then reports what that did. It runs offline: no model is called, so only the
steps that need no summarize function run (truncation, offload, emergency offload).

Input
  A JSON array of OpenAI chat-completions messages, or an object with a "messages"
  array (a request body, or {source, license, meta, messages}). "-" reads stdin.

Options
  --max-token N   the model's context window in tokens (required)
  --ratio R       compress when tokens reach N × R, which is also the target
                  (0 < R <= 1, default ${DEFAULT_RATIO})
  --out FILE      write the compressed working messages to FILE, in the input's shape
  --store DIR     keep the offloaded originals as files under DIR/<sessionId>/
                  (default: in memory, gone when the command ends)
  --json          print the report as JSON
  -h, --help      show this help
  -v, --version   show the version

Exit status: 0 done, 1 the input or the engine failed, 2 the command line is wrong.

Example
  autocontext compress examples/long-conversation.json --max-token 32000
`;

// ---------------------------------------------------------------------------------------------
// Arguments.

interface Options {
  file: string;
  maxToken: number;
  ratio: number;
  out?: string;
  store?: string;
  json: boolean;
}

type Parsed = { kind: 'help' } | { kind: 'version' } | { kind: 'compress'; options: Options };

function parseCommandLine(argv: string[]): Parsed {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        'max-token': { type: 'string' },
        ratio: { type: 'string' },
        out: { type: 'string' },
        store: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (e) {
    throw new UsageError(parseArgsMessage(e));
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const [command, ...rest] = positionals;
  if (command === undefined) throw new UsageError('missing command: try `autocontext compress <conversation.json> --max-token N`');
  if (command === 'help') return { kind: 'help' };
  if (command !== 'compress') throw new UsageError(`unknown command ${JSON.stringify(command)} (the command is \`compress\`)`);
  if (rest.length === 0) throw new UsageError('compress: missing the conversation file');
  if (rest.length > 1) throw new UsageError(`compress: one conversation file at a time (got ${rest.length})`);
  if (values['max-token'] === undefined) throw new UsageError('compress: --max-token N is required (the model\'s context window in tokens)');
  const options: Options = {
    file: rest[0]!,
    maxToken: parseWindow(values['max-token']),
    ratio: values.ratio === undefined ? DEFAULT_RATIO : parseRatio(values.ratio),
    json: values.json === true,
  };
  if (values.out !== undefined) options.out = nonEmpty('--out', values.out);
  if (values.store !== undefined) options.store = nonEmpty('--store', values.store);
  return { kind: 'compress', options };
}

/** parseArgs' messages are long and mention internals; say the same thing in one short line. */
function parseArgsMessage(e: unknown): string {
  const err = e as { code?: string; message?: string };
  const message = err.message ?? String(e);
  const option = /'(-[^' ]*)/.exec(message)?.[1] ?? 'an option';
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (/ambiguous/.test(message)) return `${option} needs a value (write ${option}=VALUE for a value starting with "-")`;
      if (/argument missing/.test(message)) return `${option} needs a value`;
      return `${option} takes no value`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument: ${message.split('\n')[0]}`;
    default:
      return message.split('\n')[0]!;
  }
}

function nonEmpty(flag: string, value: string): string {
  if (value.length === 0) throw new UsageError(`${flag} needs a path`);
  return value;
}

function parseWindow(text: string): number {
  const clean = text.trim().replace(/_/g, '');
  if (!/^\d+$/.test(clean)) throw new UsageError(`--max-token must be a whole number of tokens, got ${JSON.stringify(text)}`);
  const n = Number(clean);
  if (n < 1 || n > MAX_WINDOW) {
    throw new UsageError(`--max-token must be from 1 to ${MAX_WINDOW.toLocaleString('en-US')}, got ${text}`);
  }
  return n;
}

function parseRatio(text: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n) || !(n > 0 && n <= 1)) {
    throw new UsageError(`--ratio must be a number above 0 and at most 1, got ${JSON.stringify(text)}`);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Input.

/** Where the messages were found, so `--out` can write the same shape back. */
interface Conversation {
  messages: WireMessage[];
  /** `null` for a plain array; otherwise the object that held `messages`. */
  container: Record<string, unknown> | null;
}

async function readInput(file: string): Promise<string> {
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

function fsReason(e: unknown): string {
  const code = (e as { code?: string }).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EISDIR':
      return 'it is a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'a parent is not a directory';
    default:
      return e instanceof Error ? e.message : String(e);
  }
}

function parseConversation(path: string, raw: string): Conversation {
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
  const shape = 'expected an array of messages, or an object with a "messages" array';
  let messages: unknown;
  let container: Record<string, unknown> | null = null;
  if (Array.isArray(data)) {
    messages = data;
  } else if (data !== null && typeof data === 'object') {
    container = data as Record<string, unknown>;
    if (!('messages' in container)) {
      const keys = Object.keys(container);
      const has = keys.length === 0 ? 'an empty object' : `an object with ${keys.slice(0, 5).map((k) => JSON.stringify(k)).join(', ')}${keys.length > 5 ? ', ...' : ''}`;
      throw new InputError(`${file}: not a conversation: ${shape}; got ${has}`);
    }
    messages = container.messages;
    if (!Array.isArray(messages)) throw new InputError(`${file}: not a conversation: "messages" must be an array, got ${kind(messages)}`);
  } else {
    throw new InputError(`${file}: not a conversation: ${shape}; got ${kind(data)}`);
  }
  const list = messages as unknown[];
  if (list.length === 0) throw new InputError(`${file}: the conversation has no messages`);
  list.forEach((m, i) => {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) {
      throw new InputError(`${file}: not a conversation: message ${i} is ${kind(m)}, not an object`);
    }
    if (typeof (m as { role?: unknown }).role !== 'string') {
      throw new InputError(`${file}: not a conversation: message ${i} has no "role"`);
    }
  });
  return { messages: list as WireMessage[], container };
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** 1-based line and column of a UTF-16 offset. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  }
  return { line, column: [...text.slice(start, offset)].length + 1 };
}

/**
 * Finds the first syntax error of a JSON text, with a message for people. `JSON.parse` says
 * where only in some Node versions and only as a character offset; this says it the same way
 * everywhere. Returns `null` when it finds nothing (or the nesting is too deep to look).
 */
function jsonErrorAt(text: string): { offset: number; message: string } | null {
  const n = text.length;
  let i = 0;
  class Fail {
    constructor(readonly offset: number, readonly message: string) {}
  }
  const fail = (message: string, at = i): never => {
    throw new Fail(at, message);
  };
  const show = (): string => {
    if (i >= n) return 'the end of the file';
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    return /^[\x21-\x7e]$/.test(ch) ? `'${ch}'` : JSON.stringify(ch);
  };
  const ws = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const string = (): void => {
    const start = i;
    i++;
    for (;;) {
      if (i >= n) fail('unterminated string', start);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return;
      }
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else fail('invalid escape in a string');
      } else if (c < 0x20) {
        fail('unescaped control character in a string (a raw newline or tab?)');
      } else {
        i++;
      }
    }
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const value = (depth: number): void => {
    if (depth > 1000) throw new Error('too deep');
    ws();
    if (i >= n) fail('unexpected end of the file, expected a value');
    const c = text[i]!;
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail(text[i] === '}' ? "trailing comma before '}'" : `expected a "quoted" property name, found ${show()}`);
        string();
        ws();
        if (text[i] !== ':') fail(`expected ':' after a property name, found ${show()}`);
        i++;
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return;
        }
        fail(`expected ',' or '}' after a property value, found ${show()}`);
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] === ']') fail("trailing comma before ']'");
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return;
        }
        fail(`expected ',' or ']' after an array element, found ${show()}`);
      }
    }
    if (c === '"') return string();
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (!m) fail('invalid number');
      i += m![0].length;
      return;
    }
    for (const literal of ['true', 'false', 'null']) {
      if (text.startsWith(literal, i)) {
        i += literal.length;
        return;
      }
    }
    fail(`unexpected ${show()}, expected a value`);
  };
  try {
    value(0);
    ws();
    if (i < n) fail(`unexpected ${show()} after the end of the JSON value`);
    return null;
  } catch (e) {
    if (e instanceof Fail) return { offset: e.offset, message: e.message };
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// The replay.

/** Counts what the engine writes to the store (bytes per key still stored). */
class CountingStore implements OffloadStore {
  readonly sizes = new Map<string, number>();
  constructor(readonly inner: OffloadStore) {}
  async get(key: string): Promise<string | null> {
    return (await this.inner.get(key)) ?? null;
  }
  async put(key: string, value: string): Promise<void> {
    await this.inner.put(key, value);
    this.sizes.set(key, Buffer.byteLength(value, 'utf8'));
  }
  async delete(key: string): Promise<void> {
    await this.inner.delete(key);
    this.sizes.delete(key);
  }
}

interface EventSummary {
  type: string;
  count: number;
  messages: number;
  tokensSaved: number;
}

interface Report {
  autocontext: string;
  file: string;
  format: 'openai';
  tokenizer: string;
  budget: { window: number; tokenRatio: number; target: number };
  before: { messages: number; tokens: number };
  after: { messages: number; tokens: number; underTarget: boolean };
  saved: { messages: number; tokens: number; percent: number };
  turns: { user: number; model: number; overWindow: number; overWindowWithout: number };
  largestRequest: { tokens: number; tokensWithout: number };
  passes: { checks: number; compressed: number };
  events: { count: number; tokensSaved: number; byType: EventSummary[] };
  offloads: {
    count: number;
    messages: number;
    bytes: number;
    store: 'memory' | 'fs';
    directory: string | null;
    sessionId: string;
    keys: string[];
  };
  reason?: string;
  out?: string;
  timeMs: { total: number; compression: number };
}

async function compressCommand(o: Options): Promise<Report> {
  const started = performance.now();
  const conversation = parseConversation(o.file, await readInput(o.file));
  const { AutoContextMemory } = await import('./entrypoints/node.js');

  const store = new CountingStore(o.store === undefined ? new MemoryStore() : new FsStore(o.store));
  let memory: AutoContextMemory;
  try {
    memory = new AutoContextMemory({ maxToken: o.maxToken, tokenRatio: o.ratio, store });
  } catch (e) {
    // Options the engine refuses are part of the command line.
    if (isAutoContextError(e, 'INVALID_CONFIG')) throw new UsageError(`${e.code}: ${e.message}`);
    throw e;
  }
  // The same conversation, never compressed: what an agent without autocontext would send.
  const plain = new AutoContextMemory({ maxToken: MAX_WINDOW, msgThreshold: 10_000_000, store: new MemoryStore() });

  let compressionMs = 0;
  let lastReason: string | undefined;
  let checks = 0;
  let compressedPasses = 0;
  let target = Math.floor(o.maxToken * o.ratio);
  const pass = async (): Promise<void> => {
    const t = performance.now();
    const result = await memory.compressIfNeeded();
    compressionMs += performance.now() - t;
    checks++;
    if (result.compressed) compressedPasses++;
    target = result.targetTokens;
    lastReason = result.reason;
  };

  const turns = { user: 0, model: 0, overWindow: 0, overWindowWithout: 0 };
  const largest = { tokens: 0, tokensWithout: 0 };
  for (const message of conversation.messages) {
    if (message.role === 'assistant') {
      // The agent is about to call the model: this is the request it sends.
      await pass();
      turns.model++;
      const tokens = memory.tokenCount();
      const without = plain.tokenCount();
      if (tokens > o.maxToken) turns.overWindow++;
      if (without > o.maxToken) turns.overWindowWithout++;
      largest.tokens = Math.max(largest.tokens, tokens);
      largest.tokensWithout = Math.max(largest.tokensWithout, without);
    } else if (message.role === 'user') {
      turns.user++;
    }
    memory.add(message);
    plain.add(message);
  }
  // Before the next model call.
  await pass();

  const working = memory.messages();
  const before = { messages: conversation.messages.length, tokens: plain.tokenCount() };
  const after = { messages: working.length, tokens: memory.tokenCount(), underTarget: memory.tokenCount() < target };
  const events = summarizeEvents(memory.events());
  const offloads = memory.offloads();
  const keys = offloads.map((r) => `${memory.sessionId}/${r.uuid}`);

  if (o.out !== undefined) {
    const body = conversation.container === null ? working : { ...conversation.container, messages: working };
    try {
      await writeFile(o.out, JSON.stringify(body, null, 2) + '\n');
    } catch (e) {
      throw new InputError(`cannot write ${o.out}: ${fsReason(e)}`);
    }
  }

  const report: Report = {
    autocontext: version(),
    file: o.file,
    format: 'openai',
    tokenizer: 'o200k_base',
    budget: { window: o.maxToken, tokenRatio: o.ratio, target },
    before,
    after,
    saved: {
      messages: before.messages - after.messages,
      tokens: before.tokens - after.tokens,
      percent: before.tokens === 0 ? 0 : Math.round((1000 * (before.tokens - after.tokens)) / before.tokens) / 10,
    },
    turns,
    largestRequest: largest,
    passes: { checks, compressed: compressedPasses },
    events,
    offloads: {
      count: offloads.length,
      messages: offloads.reduce((a, r) => a + r.messageCount, 0),
      bytes: keys.reduce((a, k) => a + (store.sizes.get(k) ?? 0), 0),
      store: o.store === undefined ? 'memory' : 'fs',
      directory: o.store === undefined ? null : (store.inner as FsStore).directory,
      sessionId: memory.sessionId,
      keys,
    },
    timeMs: { total: round1(performance.now() - started), compression: round1(compressionMs) },
  };
  if (!after.underTarget) report.reason = lastReason ?? 'over the target after every step that needs no summarize function';
  if (o.out !== undefined) report.out = o.out;
  return report;
}

function round1(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function summarizeEvents(events: CompressionEvent[]): Report['events'] {
  const byType = new Map<string, EventSummary>();
  for (const e of events) {
    const s = byType.get(e.type) ?? { type: e.type, count: 0, messages: 0, tokensSaved: 0 };
    s.count++;
    s.messages += e.messageCount;
    s.tokensSaved += e.tokensBefore - e.tokensAfter;
    byType.set(e.type, s);
  }
  const list = [...byType.values()];
  return {
    count: events.length,
    tokensSaved: list.reduce((a, s) => a + s.tokensSaved, 0),
    byType: list,
  };
}

// ---------------------------------------------------------------------------------------------
// The report, for people.

interface Style {
  bold(s: string): string;
  dim(s: string): string;
  good(s: string): string;
  bad(s: string): string;
}

function style(enabled: boolean): Style {
  const wrap = (open: number, close: number) => (s: string) => (enabled && s.trim() !== '' ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return { bold: wrap(1, 22), dim: wrap(2, 22), good: wrap(32, 39), bad: wrap(31, 39) };
}

const num = (n: number): string => n.toLocaleString('en-US');

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/**
 * Lines of a table. `align` says per column whether it is right-aligned (numbers); `paint`
 * styles a cell after padding, so escape codes never upset the widths.
 */
function table(rows: string[][], align: boolean[], paint: (row: number, col: number, cell: string) => string): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => [...(r[c] ?? '')].length)));
  return rows.map((r, ri) =>
    r
      .map((cell, c) => paint(ri, c, align[c] ? cell.padStart(widths[c]!) : c === r.length - 1 ? cell : cell.padEnd(widths[c]!)))
      .join('   ')
      .trimEnd(),
  );
}

function displayPath(p: string): string {
  const rel = relative(process.cwd(), p);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? p : rel;
}

function renderText(r: Report, s: Style): string {
  const out: string[] = [`${s.bold('autocontext')} ${r.autocontext} · compress ${r.file}`, ''];
  const facts = (pairs: [string, string][]): void => {
    for (const [k, v] of pairs) out.push(`  ${s.dim(k.padEnd(FACT_WIDTH))}   ${v}`);
  };

  facts([
    ['conversation', `${num(r.before.messages)} messages · ${num(r.turns.user)} user turns · ${num(r.turns.model)} model turns`],
    ['budget', `window ${num(r.budget.window)} · target ${num(r.budget.target)} (× ${r.budget.tokenRatio}) · ${r.tokenizer}`],
  ]);
  out.push('');

  const sizes = [
    ['', 'messages', 'tokens', ''],
    ['before', num(r.before.messages), num(r.before.tokens), 'the whole conversation, sent as is'],
    ['after', num(r.after.messages), num(r.after.tokens), `what the next model call sends${r.after.underTarget ? ', under the target' : ''}`],
    ['saved', num(r.saved.messages), num(r.saved.tokens), `${r.saved.percent.toFixed(1)}% of the tokens`],
  ];
  out.push(
    ...table(sizes, [false, true, true, false], (row, col, cell) =>
      row === 0 || col === 3 ? s.dim(cell) : col === 0 ? s.bold(cell) : row === 3 ? s.good(cell) : cell,
    ).map((l) => `  ${l}`),
  );
  out.push('');

  if (r.events.byType.length === 0) {
    facts([['events', 'none: the conversation fits the budget']]);
  } else {
    const rows = [['events', 'count', 'messages', 'tokens saved']];
    for (const e of r.events.byType) rows.push([e.type, num(e.count), num(e.messages), num(e.tokensSaved)]);
    rows.push(['total', num(r.events.count), num(r.events.byType.reduce((a, e) => a + e.messages, 0)), num(r.events.tokensSaved)]);
    const last = rows.length - 1;
    out.push(
      ...table(rows, [false, true, true, true], (row, col, cell) =>
        row === 0 ? s.dim(cell) : row === last ? s.bold(cell) : col === 3 ? s.good(cell) : cell,
      ).map((l) => `  ${l}`),
    );
  }
  out.push('');

  const overText = `${num(r.turns.overWindow)} of ${num(r.turns.model)} model turns`;
  const where =
    r.offloads.store === 'memory'
      ? s.dim('in memory, gone at exit (--store DIR keeps them)')
      : `→ ${displayPath(join(r.offloads.directory!, r.offloads.sessionId))}/`;
  const more: [string, string][] = [
    ['over the window', `${r.turns.overWindow === 0 ? s.good(overText) : s.bad(overText)}   ${s.dim(`without autocontext: ${num(r.turns.overWindowWithout)}`)}`],
    ['largest request', `${num(r.largestRequest.tokens)} tokens   ${s.dim(`without autocontext: ${num(r.largestRequest.tokensWithout)}`)}`],
    ['compression passes', `${num(r.passes.compressed)} of ${num(r.passes.checks)} checks changed the working list`],
    ['offloads written', `${num(r.offloads.count)}, holding ${num(r.offloads.messages)} messages (${bytes(r.offloads.bytes)})`],
    ['', where],
    ['time', `${seconds(r.timeMs.total)} in all, ${seconds(r.timeMs.compression)} of it compressing`],
  ];
  if (r.out !== undefined) more.push(['compressed messages', `→ ${r.out}`]);
  facts(more);
  if (r.reason !== undefined) {
    out.push('');
    const [first, ...rest] = wrap(`note: ${r.reason}`, 76);
    out.push(`  ${s.bad('note')}${first!.slice(4)}`, ...rest.map((l) => `  ${l}`));
  }
  return out.join('\n') + '\n';
}

/** Splits text into lines of at most `width` characters, at spaces. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** Width of the labels of the key-value lines. */
const FACT_WIDTH = 'compressed messages'.length;

// ---------------------------------------------------------------------------------------------
// Main.

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

async function main(argv: string[]): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`autocontext: ${oneLine(e.message)} (see autocontext --help)\n`);
      return 2;
    }
    throw e;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (parsed.kind === 'version') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const o = parsed.options;
  try {
    const report = await compressCommand(o);
    if (o.json) {
      process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    } else {
      const color = process.stdout.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== 'dumb';
      process.stdout.write(renderText(report, style(color)));
    }
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`autocontext: ${oneLine(e.message)} (see autocontext --help)\n`);
      return 2;
    }
    if (e instanceof InputError) {
      process.stderr.write(`autocontext: ${oneLine(e.message)}\n`);
      return 1;
    }
    if (isAutoContextError(e)) {
      process.stderr.write(`autocontext: ${e.code}: ${oneLine(e.message)}\n`);
      return 1;
    }
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`autocontext: unexpected error: ${oneLine(message)}\n`);
    if (process.env.AUTOCONTEXT_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
