// The counters under test, each loaded the way a user loads it and asked for the plain token
// count of a text (special-token strings such as "<|endoftext|>" counted as ordinary text, as
// tiktoken's encode_ordinary does):
//
//   autocontext        this package's default build (o200k_base), its `full` build (cl100k_base)
//   autocontext/lite   the estimator-only build (not exact; measured for speed, not compared)
//   gpt-tokenizer      the fastest pure-JavaScript tokenizer
//   js-tiktoken        the pure-JavaScript port of tiktoken (what LangChain.js uses)
//   tiktoken           OpenAI's tiktoken compiled to WebAssembly (the reference for exactness)
import { root } from './texts.mjs';

// Built-ins as texts.mjs takes them (see there): loading the counters costs a cold start nothing.
const { readFileSync } = process.getBuiltinModule('node:fs');
const { join } = process.getBuiltinModule('node:path');
const { pathToFileURL } = process.getBuiltinModule('node:url');

export const COUNTERS = ['autocontext', 'autocontext/lite', 'gpt-tokenizer', 'js-tiktoken', 'tiktoken'];
export const EXACT = new Set(['autocontext', 'gpt-tokenizer', 'js-tiktoken', 'tiktoken']);
export const REFERENCE = 'tiktoken';
export const ENCODINGS = ['o200k_base', 'cl100k_base'];

/** The installed version of a package (ours: the repository's). */
export function version(name) {
  if (name.startsWith('autocontext')) return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  return JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/** The built entry of one of our builds, for Node. */
export function ourEntry(build) {
  const dir = build === 'default' ? 'dist' : join('dist', build);
  return pathToFileURL(join(root, dir, 'entrypoints', 'node.js')).href;
}

/** Loads a counter for an encoding; returns `(text) => tokens`. */
export async function load(name, encoding) {
  switch (name) {
    case 'autocontext': {
      const { countTokens } = await import(ourEntry(encoding === 'o200k_base' ? 'default' : 'full'));
      return (text) => countTokens(text, encoding);
    }
    case 'autocontext/lite': {
      const { countTokens } = await import(ourEntry('lite'));
      return (text) => countTokens(text, 'estimate');
    }
    case 'gpt-tokenizer': {
      const { countTokens } = await import(`gpt-tokenizer/encoding/${encoding}`);
      const ordinary = { disallowedSpecial: new Set() };
      return (text) => countTokens(text, ordinary);
    }
    case 'js-tiktoken': {
      const { Tiktoken } = await import('js-tiktoken/lite');
      const { default: ranks } = await import(`js-tiktoken/ranks/${encoding}`);
      const enc = new Tiktoken(ranks);
      return (text) => enc.encode(text, [], []).length;
    }
    case 'tiktoken': {
      const { get_encoding } = await import('tiktoken');
      const enc = get_encoding(encoding);
      return (text) => enc.encode_ordinary(text).length;
    }
    default:
      throw new Error(`unknown counter ${name}`);
  }
}
