/**
 * The command line: commands, their options and the checks that turn a wrong one into a
 * one-line {@link UsageError} (exit 2).
 *
 * @module
 */

import { parseArgs } from 'node:util';

import { UsageError } from './errors.js';
import { PROVIDERS, type Provider } from './bill.js';
import { FORMATS, type FormatName } from './format.js';
import { MAX_WINDOW } from './loop.js';
import { summarizerSettings, type SummarizerSettings } from './summarizers.js';

/** The default `--ratio`. */
export const DEFAULT_RATIO = 0.75;

/** What `compress` and `replay` share. */
export interface RunOptions {
  input: string;
  maxToken: number;
  ratio: number;
  format?: FormatName;
  preset?: string;
  /** Keywords of the concepts the facts step retrieves (`--concept`, repeatable). */
  concepts?: string[];
  summarizer: SummarizerSettings;
  store?: string;
  /** Whose prices the bill uses (`--prices`). */
  prices: Provider;
  json: boolean;
}

/** A parsed command line. */
export type Command =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'compress'; options: RunOptions & { out?: string } }
  | { kind: 'replay'; options: RunOptions }
  | { kind: 'reload'; options: { uuid: string; store: string; json: boolean } };

const COMMANDS = ['compress', 'replay', 'reload'];

/** Which options each command takes (the others are refused by name). */
const ALLOWED: Record<string, string[]> = {
  compress: ['max-token', 'ratio', 'format', 'preset', 'concept', 'summarizer', 'model', 'store', 'prices', 'out', 'json'],
  replay: ['max-token', 'ratio', 'format', 'preset', 'concept', 'summarizer', 'model', 'store', 'prices', 'json'],
  reload: ['store', 'json'],
};

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

function parseFormat(text: string): FormatName {
  const name = text.trim().toLowerCase().replace(/^aisdk$|^ai_sdk$/, 'ai-sdk');
  if (!(FORMATS as readonly string[]).includes(name)) {
    throw new UsageError(`--format must be ${FORMATS.join(', ')}; got ${JSON.stringify(text)}`);
  }
  return name as FormatName;
}

function parsePrices(text: string): Provider {
  const name = text.trim().toLowerCase();
  if (!(PROVIDERS as string[]).includes(name)) throw new UsageError(`--prices must be ${PROVIDERS.join(' or ')}; got ${JSON.stringify(text)}`);
  return name as Provider;
}

/** Parses `argv` (without `node` and the script). */
export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv = process.env): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        'max-token': { type: 'string' },
        ratio: { type: 'string' },
        format: { type: 'string' },
        preset: { type: 'string' },
        concept: { type: 'string', multiple: true },
        summarizer: { type: 'string' },
        model: { type: 'string' },
        out: { type: 'string' },
        store: { type: 'string' },
        prices: { type: 'string' },
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
  if (!COMMANDS.includes(command)) throw new UsageError(`unknown command ${JSON.stringify(command)} (the commands are compress, replay and reload)`);
  for (const name of Object.keys(values)) {
    if (!ALLOWED[command]!.includes(name)) throw new UsageError(`${command}: --${name} is not one of its options`);
  }

  if (command === 'reload') {
    if (rest.length === 0) throw new UsageError('reload: missing the offload uuid (from a <!-- CONTEXT_OFFLOAD: uuid=... --> marker)');
    if (rest.length > 1) throw new UsageError(`reload: one uuid at a time (got ${rest.length})`);
    if (values.store === undefined) throw new UsageError('reload: --store DIR is required (the directory `compress --store` wrote)');
    return { kind: 'reload', options: { uuid: rest[0]!.trim(), store: nonEmpty('--store', values.store), json: values.json === true } };
  }

  const what = command === 'compress' ? 'the conversation file or directory' : 'the conversation file';
  if (rest.length === 0) throw new UsageError(`${command}: missing ${what}`);
  if (rest.length > 1) throw new UsageError(`${command}: one ${command === 'compress' ? 'file or directory' : 'conversation file'} at a time (got ${rest.length})`);
  if (values['max-token'] === undefined) throw new UsageError(`${command}: --max-token N is required (the model's context window in tokens)`);
  const options: RunOptions & { out?: string } = {
    input: rest[0]!,
    maxToken: parseWindow(values['max-token']),
    ratio: values.ratio === undefined ? DEFAULT_RATIO : parseRatio(values.ratio),
    summarizer: summarizerSettings(values.summarizer, values.model, env),
    prices: values.prices === undefined ? PROVIDERS[0]! : parsePrices(values.prices),
    json: values.json === true,
  };
  if (values.format !== undefined) options.format = parseFormat(values.format);
  if (values.preset !== undefined) {
    if (values.preset.trim() === '') throw new UsageError('--preset needs a name');
    options.preset = values.preset.trim();
  }
  if (values.concept !== undefined) {
    const concepts = values.concept.map((c) => c.trim());
    if (concepts.some((c) => c === '')) throw new UsageError('--concept needs a keyword');
    options.concepts = concepts;
  }
  if (values.store !== undefined) options.store = nonEmpty('--store', values.store);
  if (values.out !== undefined) options.out = nonEmpty('--out', values.out);
  return command === 'compress' ? { kind: 'compress', options } : { kind: 'replay', options };
}
