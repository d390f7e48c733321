#!/usr/bin/env node
/**
 * The `autocontext` command.
 *
 * - `compress <file|dir>` replays conversations the way an agent loop would (message by
 *   message, compressing before every model call) with the package's own public API, and
 *   reports what compression did: messages and tokens before and after, the events by
 *   strategy, the summarize calls and their token usage, the offloads written, how many
 *   model calls would have overflowed the window with and without autocontext, and the bill:
 *   the input tokens of every model call with and without autocontext, plainly and as a
 *   provider with a prompt cache bills them.
 * - `replay <file>` draws the token curve of the same loop, each compression marked.
 * - `reload <uuid> --store <dir>` prints the originals of an offloaded span.
 *
 * Summaries come from the built-in offline summarizer unless `--summarizer openai` names an
 * OpenAI-compatible endpoint. The pieces live in `cli/`; this file reads the command line,
 * runs the command and turns failures into one line on stderr and an exit status.
 *
 * Exit status: 0 done, 1 the input, the engine or the summarizer failed, 2 the command line is
 * wrong.
 *
 * @module
 */

import { readFileSync } from 'node:fs';

import { isAutoContextError } from './errors.js';
import { DEFAULT_RATIO, parseCommandLine, type Command } from './cli/args.js';
import { compressCommand } from './cli/compress.js';
import { FORMATS } from './cli/format.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, InputError, UsageError, oneLine } from './cli/errors.js';
import { reloadCommand } from './cli/reload.js';
import { replayCommand } from './cli/replay.js';
import { style, wantsColor } from './cli/text.js';

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
  autocontext compress <conversation.json | dir> --max-token N [options]
  autocontext replay <conversation.json> --max-token N [options]
  autocontext reload <uuid> --store DIR [--json]
  autocontext --help | --version

compress replays a conversation the way an agent loop would: it adds the messages one
by one, compresses before every model call (every assistant message) and once more
before the next one, then reports what that did and what the model calls cost in input
tokens with and without autocontext, plainly and cache-aware (a request's unchanged
start billed as a cache read). Given a directory, it does the same for every *.json
file under it and prints one row per conversation.

replay runs the same loop and draws the tokens each model call sent, with and without
autocontext, marking every compression.

reload prints the original messages of an offload (the uuid of a
<!-- CONTEXT_OFFLOAD: uuid=... --> marker) from the directory --store wrote.

Input
  A JSON array of messages, or a request body holding them ("messages", Gemini's
  "contents", the Responses API's "input"; or {source, license, meta, messages}), in the
  OpenAI chat-completions, Anthropic Messages, AI SDK, OpenAI Responses or Gemini format
  (detected, or named with --format). "-" reads stdin.

Options
  --max-token N        the model's context window in tokens (required)
  --ratio R            compress when tokens reach N × R, which is also the target
                       (0 < R <= 1, default ${DEFAULT_RATIO})
  --format F           ${FORMATS.join(', ')} (default: detected)
  --preset NAME        a preset ladder: agentscope (the default ladder), prefix-summary,
                       facts or turns
  --concept KEYWORD    a concept the facts step keeps the facts of (repeatable)
  --summarizer S       offline (default): built-in, extractive, no model, no network
                       openai: an OpenAI-compatible chat-completions endpoint at
                         OPENAI_BASE_URL (default https://api.openai.com/v1), with
                         OPENAI_API_KEY, and --model NAME (or OPENAI_MODEL)
                       none: skip the steps that need a summary
  --model NAME         the model for --summarizer openai
  --out PATH           compress: write the compressed messages to PATH, in the input's
                       shape (for a directory: a directory mirroring it)
  --store DIR          keep the offloaded originals as files under DIR/<sessionId>/
                       (default: in memory, gone when the command ends)
  --prices P           whose prompt-cache prices the bill uses: anthropic (default;
                       cache read 0.1×, cache write 1.25×) or openai (cached input 0.5×)
  --json               print the report as JSON
  -h, --help           show this help
  -v, --version        show the version

Exit status: 0 done, 1 the input, the engine or the summarizer failed, 2 the command
line is wrong.

Examples
  autocontext compress examples/long-conversation.json --max-token 32000
  autocontext replay examples/long-conversation.json --max-token 32000
  autocontext compress traces/ --max-token 128000 --store .offloads
  OPENAI_BASE_URL=http://127.0.0.1:11434/v1 autocontext compress chat.json \\
      --max-token 32000 --summarizer openai --model llama3.1
`;

async function run(command: Command): Promise<number> {
  const out = process.stdout;
  const s = style(wantsColor(out));
  switch (command.kind) {
    case 'help':
      out.write(HELP);
      return EXIT_OK;
    case 'version':
      out.write(`${version()}\n`);
      return EXIT_OK;
    case 'compress': {
      const { text, ok } = await compressCommand(command.options, version(), s, process.stderr);
      out.write(text);
      return ok ? EXIT_OK : EXIT_FAILED;
    }
    case 'replay':
      out.write(await replayCommand(command.options, version(), s, out.isTTY ? (out.columns ?? 80) : 80));
      return EXIT_OK;
    case 'reload':
      out.write(await reloadCommand(command.options, s));
      return EXIT_OK;
  }
}

async function main(argv: string[]): Promise<number> {
  try {
    return await run(parseCommandLine(argv));
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`autocontext: ${oneLine(e.message)} (see autocontext --help)\n`);
      return EXIT_USAGE;
    }
    if (e instanceof InputError) {
      process.stderr.write(`autocontext: ${oneLine(e.message)}\n`);
      return EXIT_FAILED;
    }
    if (isAutoContextError(e)) {
      process.stderr.write(`autocontext: ${e.code}: ${oneLine(e.message)}\n`);
      return EXIT_FAILED;
    }
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`autocontext: unexpected error: ${oneLine(message)}\n`);
    if (process.env.AUTOCONTEXT_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    return EXIT_FAILED;
  }
}

process.exitCode = await main(process.argv.slice(2));
